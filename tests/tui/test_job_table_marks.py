"""The jobs table's row marks (space marks rows for bulk actions) and its GPU UTIL column (filled
asynchronously): both kept by job name across refreshes, dropped with the job."""

from __future__ import annotations

from runai_tui.shapes.models import Phase
from runai_tui.tui.app import RunaiTuiApp
from runai_tui.tui.widgets.job_table import JobTable
from tests.tui.fakeclient import NOW, FakeClient, RecordingRunner, make_job
from tests.tui.helpers import wait_for
from tests.tui.screen_text import screen_text


def make_app(client: FakeClient) -> RunaiTuiApp:
    return RunaiTuiApp(client, clock=lambda: NOW, refresh_interval=0, runner=RecordingRunner())


async def refreshed(pilot, app: RunaiTuiApp) -> None:
    before = sum(1 for call in app.client.calls if call[0] == "list")
    app.screen.refresh_jobs()
    await wait_for(pilot, lambda: sum(1 for c in app.client.calls if c[0] == "list") > before)
    await pilot.pause()


def screen_lines(app: RunaiTuiApp) -> list[str]:
    return screen_text(app).splitlines()


async def test_space_marks_rows_kept_by_name_across_refreshes() -> None:
    client = FakeClient(jobs=[make_job("a"), make_job("b"), make_job("c"), make_job("d")])
    app = make_app(client)
    async with app.run_test(size=(100, 20)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 4)
        await pilot.press("space", "down", "down", "space", "down", "space")
        assert table.marked() == ["a", "c", "d"]
        assert table.selected_name == "d"
        assert any("✓ a" in line for line in screen_lines(app))
        assert not any("✓ b" in line for line in screen_lines(app))
        await pilot.press("space")  # again: unmarked
        assert table.marked() == ["a", "c"]

        # c disappears (its mark goes with it), a changes phase, a new job sorts first.
        client.jobs = [make_job("0-new"), make_job("a", Phase.FAILED), make_job("b")]
        await refreshed(pilot, app)
        assert table.visible_names() == ["0-new", "a", "b"]
        assert table.marked() == ["a"]
        assert table.selected_name in table.visible_names()  # d is gone: the cursor stays in
        assert str(table.cell("a", "status")) == "Failed"
        assert str(table.cell("a", "name")) == "✓ a"

        # A job that comes back under the same name is not marked any more.
        client.jobs = [make_job("a"), make_job("b"), make_job("c")]
        await refreshed(pilot, app)
        assert table.marked() == ["a"]
        assert not table.is_marked("c")


async def test_marks_under_a_filter_and_cleared() -> None:
    client = FakeClient(jobs=[make_job("alpha"), make_job("beta"), make_job("gamma")])
    app = make_app(client)
    async with app.run_test(size=(100, 20)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        assert table.toggle_mark("alpha") and table.toggle_mark("gamma")
        assert not table.toggle_mark("no-such-job")
        await pilot.press("slash", *"gam", "enter")
        await wait_for(pilot, lambda: table.visible_names() == ["gamma"])
        assert table.marked() == ["gamma"]  # alpha is hidden: not acted on, still marked
        assert table.is_marked("alpha")
        await pilot.press("escape")
        await wait_for(pilot, lambda: table.row_count == 3)
        assert table.marked() == ["alpha", "gamma"]
        assert str(table.cell("alpha", "name")) == "✓ alpha"
        table.clear_marks()
        assert table.marked() == []
        assert str(table.cell("alpha", "name")) == "alpha"


async def test_gpu_util_column_appears_with_the_first_value_and_keeps_by_name() -> None:
    jobs = [make_job("a"), make_job("b"), make_job("done", Phase.COMPLETED)]
    client = FakeClient(jobs=list(jobs))
    app = make_app(client)
    async with app.run_test(size=(110, 20)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        await pilot.press("down")
        table.toggle_mark("a")
        assert [str(c.key.value) for c in table.ordered_columns] == [
            "name",
            "status",
            "pods",
            "gpus",
            "project",
            "age",
            "health",
        ]
        assert "GPU UTIL" not in screen_text(app)

        table.set_gpu_util("a", "87%")
        table.set_gpu_util("done", "12%")  # not active: not shown
        table.set_gpu_util("no-such-job", "50%")  # ignored
        await pilot.pause()
        columns = [str(c.key.value) for c in table.ordered_columns]
        assert columns[3:5] == ["gpus", "gpu_util"]
        assert "GPU UTIL" in screen_text(app)
        assert str(table.cell("a", "gpu_util")) == "87%"
        assert str(table.cell("b", "gpu_util")) == ""
        assert str(table.cell("done", "gpu_util")) == ""
        assert table.selected_name == "b"  # the rebuild kept the selection and the mark
        assert table.marked() == ["a"]
        assert "no-such-job" not in table.gpu_util

        table.set_gpu_util("b", "3% [bold]x[/]")  # shown literally, never as markup
        await pilot.pause()
        assert "3% [bold]x[/]" in screen_text(app)

        # A refresh keeps the values by name; a job gone takes its value with it.
        client.jobs = [make_job("a", age_s=400), make_job("done", Phase.COMPLETED)]
        await refreshed(pilot, app)
        assert str(table.cell("a", "gpu_util")) == "87%"
        assert "b" not in table.gpu_util
        table.set_gpu_util("a", None)
        await pilot.pause()
        assert str(table.cell("a", "gpu_util")) == ""
        assert "87%" not in screen_text(app)


async def test_the_gpu_column_appearing_keeps_the_view_where_it_was() -> None:
    client = FakeClient(jobs=[make_job(f"job-{i:02d}") for i in range(60)])
    app = make_app(client)
    async with app.run_test(size=(110, 20)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 60)
        table.select_name("job-45")
        await pilot.pause()
        await pilot.press("up", "up")
        scrolled = table.scroll_y
        assert scrolled > 0 and table.selected_name == "job-43"
        table.set_gpu_util("job-43", "99%")
        await pilot.pause()
        assert table.scroll_y == scrolled
        assert table.selected_name == "job-43"
        assert "99%" in screen_text(app)
