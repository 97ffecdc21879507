"""Many runs compared, for real: a sweep of three short trainer runs that differ in learning rate
(`runai-tui sweep` on the local cluster, each job training RetinaNet to its end) and a job that
never logs a step, compared from the CLI (`compare --sweep ID`, `compare A B C D --json`) and in
the TUI (`=` with four marked jobs: the N-way table and the curves of every run overlaid)."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from textual.app import App

from runai_tui.profiles import ProfileStore
from runai_tui.runai.client import RunaiClient
from runai_tui.tui.screens.compare import RunsCompareScreen, RunsCurves
from tests.local.test_through_runai_tui import tui
from tests.tui.helpers import RecordingApp, wait_for
from tests.tui.screen_text import screen_text
from tests.tui.showcase import sweep_runs

# The smallest real run: 2-process DDP (retinanet-local's master and worker), a ResNet-18
# RetinaNet on 64-pixel synthetic images, two steps (the sweep gives each job its own
# --output-dir under this one).
TINY = textwrap.dedent(
    """\
    extends: retinanet-local
    job_name: cmpsw
    args: [--dataset, synthetic, --synthetic-train-images, "8", --synthetic-val-images, "2",
           --model, retinanet_resnet18_fpn, --epochs, "1", --max-steps, "2", --batch-size, "2",
           --min-size, "64", --max-size, "64", --workers, "0", --log-every, "1",
           --eval-every, "1", --amp, none, --device, cpu,
           --output-dir, /data/runs/cmpsw]
    """
)
QUIET = "job_name: quiet\nimage: busybox:1\nworkers: 1\ncommand: [sh, -c, 'echo no records']\n"
LRS = ("0.01", "0.02", "0.04")


def user_profile(name: str, text: str) -> None:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(text)


def run_sweep() -> tuple[str, list[str]]:
    """Submit the sweep and the quiet job; wait until every run has ended."""
    user_profile("cmpsw", TINY)
    user_profile("quiet", QUIET)
    res = tui("sweep", "--profile", "cmpsw", "--grid", f"trainer.lr={','.join(LRS)}", "-y",
              "--json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    names = [job["name"] for job in doc["jobs"]]
    assert names == ["cmpsw-1", "cmpsw-2", "cmpsw-3"]
    assert tui("submit", "--profile", "quiet").returncode == 0
    for name in names:
        follow = tui("logs", name, "-f", timeout=600)
        assert '{"kind": "done"' in follow.stdout, follow.stdout[-2000:]
    assert "no records" in tui("logs", "quiet", "-f").stdout
    return doc["sweep"], names


def check_cli(sweep: str, names: list[str]) -> None:
    res = tui("compare", "--sweep", sweep, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["sweep"] == sweep and [job["label"] for job in doc["jobs"]] == names
    assert all(job["lacks"] == [] for job in doc["jobs"])  # each its own run.json, read
    rows = {row["key"]: row for row in doc["rows"]}
    assert doc["rows"][0]["section"] == "grid"
    assert rows["trainer.lr"]["cells"] == dict(zip(names, LRS, strict=True))
    assert "args --lr" not in rows  # the grid's row says it
    dirs = rows["args --output-dir"]["cells"]
    assert dirs == {name: f"/data/runs/cmpsw/{name}" for name in names}
    assert rows["ended"]["cells"] == dict.fromkeys(names, "done")
    last = rows["last step"]["cells"]["cmpsw-1"]
    assert last.isdigit() and rows["last step"]["cells"] == dict.fromkeys(names, last)
    for key, better in (("final loss", "lower"), ("best loss", "lower"),
                        ("images/s (median, all ranks)", "higher"), ("best mAP", "higher")):  # fmt: skip
        row = rows[key]
        assert row["better"] == better and all(v is not None for v in row["numbers"].values())
        best = min if better == "lower" else max
        top = best(row["numbers"].values())
        assert row["best"] == [n for n in names if row["numbers"][n] == top]

    # The sweep's jobs by name: their records say they are one sweep.
    res = tui("compare", *names)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0] == f"compare 3 runs of sweep {sweep}: {', '.join(names)}"

    # Four runs by name, one of which never logged a step: it keeps its column and says so.
    res = tui("compare", *names, "quiet")
    assert res.returncode == 0, res.stderr
    out = res.stdout.splitlines()
    assert out[0] == f"compare 4 runs: {', '.join(names)}, quiet"
    assert "quiet lacks trainer metric records (no metric lines in the master's log): it never " \
        "logged a step" in out  # fmt: skip
    header = next(line for line in out if line.split()[-1:] == ["BEST"])
    assert header.split() == [*names, "quiet", "BEST"]
    lr = next(line for line in out if line.startswith("trainer.lr "))
    assert lr.split() == ["trainer.lr", *LRS, "-"]
    final = next(line for line in out if line.startswith("final loss "))
    assert final.count("*") >= 1 and final.split()[-2:] == ["-", "lower"]
    ended = next(line for line in out if line.startswith("ended "))
    assert ended.split()[1:4] == ["done"] * 3 and ended.endswith("never logged a step")


@pytest.mark.slow
async def test_a_sweep_of_three_real_runs_compared_from_the_cli_and_in_the_tui(
    local_client: RunaiClient, tmp_path: Path
) -> None:
    sweep, names = run_sweep()
    check_cli(sweep, names)

    app = RecordingApp(local_client, store=ProfileStore(), refresh_interval=0.5, save_dir=tmp_path)
    async with app.run_test(size=(150, 60)) as pilot:
        jobs = app.screen
        await wait_for(pilot, lambda: jobs.table.select_name("quiet"), "the jobs' rows")
        for name in [*names, "quiet"]:
            assert jobs.table.toggle_mark(name)
        await pilot.press("equals_sign")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsCompareScreen), "the screen")
        screen = app.screen
        assert isinstance(screen, RunsCompareScreen)
        await wait_for(
            pilot,
            lambda: screen.result is not None,
            "the comparison",
        )
        assert screen.result is not None
        assert screen.result.labels == [*names, "quiet"]  # the table's order
        rows = {row.key: row for row in screen.result.rows}
        assert rows["trainer.lr"].cells == (*LRS, "-")
        assert rows["ended"].cells == ("done", "done", "done", "never logged a step")
        curves = screen.query_one(RunsCurves).curves
        assert [c.label for c in curves] == [*names, "quiet"]
        steps = len(curves[0].loss)  # one train record per step (--log-every 1)
        assert steps > 0 and [len(c.loss) for c in curves] == [steps] * 3 + [0]
        assert [len(c.img_s) for c in curves] == [steps] * 3 + [0]
        text = screen_text(app)
        assert "compare 4 runs" in text and "quiet lacks trainer metric records" in text
        assert all(name in text for name in names)  # the table's header and the legend
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is jobs, "back on the jobs screen")


async def test_the_runs_screen_shows_names_as_text_and_toggles_the_log_scale() -> None:
    # Names and values are text, never markup; `l` puts both plots on a log scale and back.
    sides = sweep_runs()
    sides[0].label = "[bold red]not markup[/]"
    sides[1].values = {"trainer.lr": "[i]0.02[/i]"}
    app = App[None]()
    async with app.run_test(size=(140, 60)) as pilot:
        names = [side.label for side in sides]
        await app.push_screen(RunsCompareScreen(None, names, "four runs", sides=sides))
        screen = app.screen
        assert isinstance(screen, RunsCompareScreen)
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
