"""JobTable's bulk refresh (many rows gone, changed and new at once, issue 12): the rows, their
order, cells, the selection and the column widths are what a row-by-row update gave."""

from __future__ import annotations

from datetime import timedelta

from rich.cells import cell_len
from textual.app import App, ComposeResult

from runai_tui.models import Phase
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
        gone = {f"job-{i:03d}" for i in range(0, 100, 10)}  # 10 rows gone: the bulk path
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
        assert [table.get_row_at(i)[0] for i in range(table.row_count)] == expected
        assert table.selected_name == "job-051"
        assert str(table.get_cell("job-015", "status")) == "Failed"
        assert str(table.get_cell("job-100", "status")) == "Pending"
        assert table.get_cell("job-001", "age") == "1h"  # 300 s old, one hour later
        name_column = table.columns[next(k for k in table.columns if k.value == "name")]
        assert name_column.content_width == cell_len(long_name)

        # The long name goes, with enough others for the bulk path.
        table.update_jobs(
            [j for j in later if j.name not in (long_name, "job-001", "job-002")], NOW
        )
        await pilot.pause()
        assert long_name not in table.visible_names()
        assert table.row_count == len(expected) - 3
        assert table.selected_name == "job-051"


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
