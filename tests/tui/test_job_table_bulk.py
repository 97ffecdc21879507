"""JobTable's refresh (many rows gone, changed and new at once): the rows, their order, cells,
the selection and the column widths (each its widest cell's) are what a fresh table shows, and
it draws the same, even when painted before the table is next idle."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from rich.cells import cell_len
from rich.style import Style
from textual.app import App, ComposeResult

from runai_tui.knowledge.diagnose import Diagnosis
from runai_tui.shapes.models import Job, Phase
from runai_tui.tui.health_view import HealthCache
from runai_tui.tui.widgets.job_table import JobTable
from tests.tui.fakeclient import NOW, make_job
from tests.tui.screen_text import screen_text


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield JobTable()


async def test_bulk_refresh_keeps_rows_cells_selection_and_widths() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(JobTable)
        jobs = [make_job(f"job-{i:03d}", age_s=60 * i) for i in range(100)]
        table.update_jobs(jobs, NOW)
        await pilot.pause()
        table.select_name("job-051")
        await pilot.pause()
        assert table.selected_name == "job-051"

        long_name = "a-much-longer-job-name-than-the-others-" + "x" * 20
        gone = {f"job-{i:03d}" for i in range(0, 100, 10)}  # 10 rows gone
        later = [
            make_job(job.name, Phase.FAILED if job.name.endswith("5") else Phase.RUNNING)
            for job in jobs
            if job.name not in gone
        ] + [make_job(long_name), make_job("job-100", Phase.PENDING)]
        table.update_jobs(later, NOW + timedelta(hours=1))
        await pilot.pause()

        expected = sorted(job.name for job in later)
        assert table.visible_names() == expected
        assert [str(key.value) for key in table.rows] and table.row_count == len(expected)
        assert [str(table.get_row_at(i)[0]) for i in range(table.row_count)] == expected
        assert table.selected_name == "job-051"
        assert str(table.cell("job-015", "status")) == "Failed"
        assert str(table.cell("job-100", "status")) == "Pending"
        assert table.cell("job-001", "age") == "1h"  # 300 s old, one hour later
        name_column = table.columns[next(k for k in table.columns if k.value == "name")]
        assert name_column.width == cell_len(long_name)

        # The long name goes: its column shrinks back.
        table.update_jobs(
            [j for j in later if j.name not in (long_name, "job-001", "job-002")], NOW
        )
        await pilot.pause()
        assert long_name not in table.visible_names()
        assert table.row_count == len(expected) - 3
        assert table.selected_name == "job-051"
        assert name_column.width == cell_len("job-051")


async def test_most_rows_gone_at_once() -> None:
    """Hundreds of rows gone in one refresh (the table is rebuilt rather than emptied row by
    row): the rows left, their cells, the selection, the column widths and the view."""
    app = TableApp()
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(JobTable)
        jobs = [make_job(f"job-{i:03d}", age_s=60 * i) for i in range(400)]
        jobs.append(make_job("a-much-longer-job-name-than-the-others"))
        table.update_jobs(jobs, NOW)
        await pilot.pause()
        table.select_name("job-351")
        await pilot.pause()
        kept = [make_job(f"job-{i:03d}", Phase.FAILED) for i in range(345, 360)]
        table.update_jobs(kept, NOW)
        await pilot.pause()
        assert table.visible_names() == [job.name for job in kept]
        assert table.selected_name == "job-351"
        assert str(table.cell("job-351", "status")) == "Failed"
        name_column = table.columns[next(k for k in table.columns if k.value == "name")]
        assert name_column.width == cell_len("job-351")
        assert "job-351" in screen_text(app)


async def test_a_changed_cell_alone_is_repainted() -> None:
    app = TableApp()
    async with app.run_test(size=(100, 12)) as pilot:
        table = app.query_one(JobTable)
        table.update_jobs([make_job("only", Phase.RUNNING), make_job("other")], NOW)
        await pilot.pause()
        assert "Running" in screen_text(app) and "Failed" not in screen_text(app)
        # Same rows, same order, same widths ("Failed" is shorter): only the cell changes.
        table.update_jobs([make_job("only", Phase.FAILED), make_job("other")], NOW)
        await pilot.pause()
        assert "Failed" in screen_text(app)


def with_health(app: TableApp) -> tuple[JobTable, HealthCache]:
    """The app's table, with a health cache of its own (as the jobs screen gives it)."""
    table = app.query_one(JobTable)
    table.health = HealthCache()
    return table, table.health


def drawn(table: JobTable) -> list[list[tuple[str, Style | None]]]:
    """The table as drawn: every line's segments, text and style (mouse meta included)."""
    return [
        [(segment.text, segment.style) for segment in table.render_line(y)]
        for y in range(table.size.height)
    ]


async def test_a_refreshed_table_draws_what_a_fresh_table_draws() -> None:
    """After refreshes that change, move, add and remove rows, every line of the table (cursor
    row, zebra rows, styled cells, header, column widths) is drawn, segment for segment and
    style for style, as a table given the last jobs in one refresh."""
    phases = [Phase.RUNNING, Phase.FAILED, Phase.PENDING, Phase.COMPLETED]
    jobs = [make_job(f"job-{i:02d}", phases[i % 4], age_s=50 * i) for i in range(20)]
    jobs.append(make_job("a-long-name-that-goes-away", Phase.FAILED))  # NAME then shrinks
    final = jobs[1:-4] + [make_job("job-new-and-wider", Phase.FAILED)]
    final[6] = make_job(final[6].name, Phase.DEGRADED, age_s=50 * 7)

    async def draw(refreshes: list[list[Job]]) -> list[list[tuple[str, Style | None]]]:
        app = TableApp()
        async with app.run_test(size=(120, 16)) as pilot:
            table, health = with_health(app)
            health.put(jobs[5], Diagnosis())  # a styled HEALTH cell
            for step in refreshes:
                table.update_jobs(step, NOW)
                await pilot.pause()
            table.select_name("job-04")
            await pilot.pause()
            assert "? no logs" in screen_text(app)
            return drawn(table)

    assert await draw([jobs, final]) == await draw([final])


async def test_refreshes_show_what_a_fresh_table_shows() -> None:
    """A run of refreshes (ages moving on, phases changing, rows gone and new, a diagnosis, a
    filter, a sort) leaves the rows, their order and cells a fresh table shows for the last."""
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table, health = with_health(app)
        phases = [Phase.RUNNING, Phase.FAILED, Phase.PENDING, Phase.COMPLETED]
        now = NOW
        for step in range(6):
            jobs = [
                make_job(f"job-{i:02d}", phases[(i + step) % 4], age_s=59 * i + 7)
                for i in range(step, 40 + step, 1 + step % 2)
            ]
            if step == 2:
                health.put(jobs[3], Diagnosis())
            if step == 3:
                table.filter_text = "fail"
            if step == 4:
                table.filter_text = ""
                table.set_sort("age")
            now += timedelta(seconds=[0, 1, 59, 3600, 30, 86400][step])
            table.update_jobs(jobs, now)
            await pilot.pause()

            fresh = JobTable()
            fresh.health, fresh.filter_text = health, table.filter_text
            fresh.sort_by, fresh.sort_reverse = table.sort_by, table.sort_reverse
            await app.mount(fresh)
            fresh.update_jobs(jobs, now)
            await pilot.pause()
            assert table.visible_names() == fresh.visible_names(), step
            assert [table.get_row_at(i) for i in range(table.row_count)] == [
                fresh.get_row_at(i) for i in range(fresh.row_count)
            ], step
            await fresh.remove()


class FullHeightTableApp(TableApp):
    """The table as the jobs screen sizes it (app.tcss: `#jobs-table { height: 1fr }`), so its
    rows are on screen before the table has measured them."""

    CSS = "JobTable { height: 1fr; }"


async def test_a_paint_before_the_table_is_idle_shows_whole_cells() -> None:
    """A paint right after the rows change, before the table is next idle (a resize of the
    screen paints at once): every column is already as wide as its widest cell, and stays so,
    whether the rows were added, re-added with a new column (the first GPU UTIL value) or a
    column shrank."""
    app = FullHeightTableApp()
    async with app.run_test(size=(120, 12)) as pilot:
        table = app.query_one(JobTable)
        await pilot.pause()
        long_name = "a-much-longer-job-name"
        jobs = [make_job(long_name, Phase.RUNNING), make_job("short", Phase.FAILED)]

        table.update_jobs(jobs, NOW)  # rows added
        early = screen_text(app)  # painted with no await since: the table is not idle yet
        await pilot.pause()
        assert long_name in screen_text(app)
        assert long_name in early

        table.set_gpu_util(long_name, "87%")  # the table is rebuilt with a GPU UTIL column
        early = screen_text(app)
        await pilot.pause()
        assert "87%" in screen_text(app) and long_name in screen_text(app)
        assert screen_text(app) == early

        table.update_jobs(jobs[1:], NOW)  # NAME shrinks back to "short"'s width
        early = screen_text(app)
        await pilot.pause()
        assert screen_text(app) == early
        header = next(line for line in early.splitlines() if "NAME" in line)
        assert header.split()[:2] == ["NAME", "STATUS"]
        assert header.index("STATUS") - header.index("NAME") == len("short") + 2


class CountingTable(JobTable):
    """A JobTable that counts the rows it removes."""

    removed = 0

    def remove_row(self, row_key: Any) -> None:
        self.removed += 1
        super().remove_row(row_key)


class CountingApp(App[None]):
    def compose(self) -> ComposeResult:
        yield CountingTable()


async def test_rows_of_jobs_gone_go_to_new_jobs_and_carry_nothing_over() -> None:
    """As many jobs come as go: no row is removed (DataTable renumbers every row on each
    removal); the new jobs take the rows of those gone and show none of their mark, HEALTH,
    GPU UTIL or place, and the table draws what a fresh table with the same cursor draws."""
    jobs = [make_job(f"job-{i:02d}", Phase.RUNNING, age_s=60 * i) for i in range(30)]
    final = [j for j in jobs if j.name not in {"job-05", "job-06", "job-07", "job-08"}]
    final += [make_job(f"new-{c}", Phase.PENDING) for c in "abcd"]

    async def draw(refreshed: bool) -> list[list[tuple[str, Style | None]]]:
        app = CountingApp()
        async with app.run_test(size=(120, 40)) as pilot:
            table, health = with_health(app)
            assert isinstance(table, CountingTable)
            if refreshed:
                health.put(jobs[5], Diagnosis())  # "? no logs" on job-05
                table.update_jobs(jobs, NOW)
                table.toggle_mark("job-06")
                table.set_gpu_util("job-07", "87%")
                table.select_name("job-08")
                await pilot.pause()
            else:  # the GPU UTIL column, empty
                table.update_jobs(final, NOW)
                table.set_gpu_util("job-00", "1%")
                table.set_gpu_util("job-00", None)
            table.update_jobs(final, NOW)
            await pilot.pause()
            assert table.visible_names() == sorted(j.name for j in final)
            assert table.marked() == [] and table.removed == 0
            for name in ("new-a", "new-b", "new-c", "new-d"):
                assert str(table.cell(name, "name")) == name
                assert str(table.cell(name, "health")) == ""
                assert str(table.cell(name, "gpu_util")) == ""
            assert "87%" not in screen_text(app) and "? no logs" not in screen_text(app)
            table.move_cursor(row=8, animate=False)
            await pilot.pause()
            return drawn(table)

    assert await draw(refreshed=True) == await draw(refreshed=False)
