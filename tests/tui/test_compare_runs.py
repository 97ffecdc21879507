"""The compare screen (two runs or more) and the refusals of `runai-tui compare`. The real sweep of three
trained runs, compared from the CLI and with `=` in the TUI, is in tests/local/test_sweep.py
(it shares that module's one sweep, `lr_sweep`)."""

from __future__ import annotations

from textual.app import App

from runai_tui.tui.screens.compare import CompareScreen, RunsCurves
from tests.local.test_through_runai_tui import tui
from tests.tui.helpers import wait_for
from tests.tui.screen_text import screen_text
from tests.tui.showcase import sweep_runs


async def test_the_runs_screen_shows_names_as_text_and_toggles_the_log_scale() -> None:
    # Names and values are text, never markup; `l` puts both plots on a log scale and back.
    sides = sweep_runs()
    sides[0].label = "[bold red]not markup[/]"
    sides[1].values = {"trainer.lr": "[i]0.02[/i]"}
    app = App[None]()
    async with app.run_test(size=(140, 60)) as pilot:
        names = [side.label for side in sides]
        await app.push_screen(CompareScreen(None, names, "four runs", sides=sides))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_for(pilot, lambda: screen.result is not None, "the table")
        text = screen_text(app)
        assert "[bold red]not markup[/]" in text and "[i]0.02[/i]" in text
        curves = screen.query_one(RunsCurves)
        assert [c.label for c in curves.curves] == names
        assert curves.border_subtitle == "y: linear · l toggles"
        await pilot.press("l")
        assert curves.border_subtitle == "y: log · l toggles"
        await pilot.press("l")
        assert curves.border_subtitle == "y: linear · l toggles"


async def test_two_runs_get_the_same_screen_with_curves_and_d_shows_the_same_rows_too() -> None:
    # Two runs are the same table as four, with their curves; `d` adds the settings that are
    # the same on both (here `--workers`) and takes them away again.
    sides = sweep_runs()[:2]
    app = App[None]()
    async with app.run_test(size=(140, 60)) as pilot:
        await app.push_screen(CompareScreen(None, [s.label for s in sides], "two", sides=sides))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_for(pilot, lambda: screen.result is not None, "the table")
        curves = screen.query_one(RunsCurves).curves
        assert [c.label for c in curves] == [s.label for s in sides]
        assert all(c.loss and c.img_s for c in curves)
        same = [r.key for r in screen.result.rows if r.section == "settings" and r.same]
        assert same and same[0] not in screen_text(app)
        await pilot.press("d")
        await pilot.pause()
        assert same[0] in screen_text(app)
        await pilot.press("d")
        await pilot.pause()
        assert same[0] not in screen_text(app)


def test_compare_refuses_fewer_than_two_runs_and_says_when_a_sweep_has_none_left() -> None:
    res = tui("compare", "lr-1")
    assert res.returncode == 2
    assert res.stderr.splitlines()[0] == "error: compare needs two or more runs, got 1"
    res = tui("compare", "lr-1", "lr-2", "lr-1")
    assert res.returncode == 2 and "lr-1 given more than once" in res.stderr
    res = tui("compare", "--sweep", "lr.3fa9c1", "lr-1")
    assert res.returncode == 2 and "with runs besides it (lr-1)" in res.stderr
    # A well-formed ID whose jobs are gone: the cluster's state, as for an unknown job.
    res = tui("compare", "--sweep", "lr.3fa9c1")
    assert res.returncode == 1
    assert res.stderr.splitlines()[0] == (
        "error: sweep lr.3fa9c1: no job found (compare needs two or more)"
    )
