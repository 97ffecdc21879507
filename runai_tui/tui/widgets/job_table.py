"""JobTable: the jobs list, updated in place by job name so the selection survives refreshes."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime, timezone

from rich.cells import cell_len
from rich.text import Text
from textual._two_way_dict import TwoWayDict
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, ColumnKey, RowDoesNotExist, RowKey

from runai_tui.diagnose import Diagnosis
from runai_tui.models import Job, Phase
from runai_tui.tui.health import HealthCache, health_cell

COLUMNS: list[tuple[str, str]] = [
    ("name", "NAME"),
    ("status", "STATUS"),
    ("pods", "PODS"),
    ("gpus", "GPUS"),
    ("project", "PROJECT"),
    ("age", "AGE"),
    ("health", "HEALTH"),  # from the diagnoses already made (tui/health.py), never fetched here
]

PHASE_STYLES: dict[Phase, str] = {
    Phase.RUNNING: "bold green",
    Phase.COMPLETED: "cyan",
    Phase.FAILED: "bold red",
    Phase.DEGRADED: "bold dark_orange",
    Phase.PENDING: "yellow",
    Phase.CREATING: "yellow",
    Phase.INITIALIZING: "yellow",
    Phase.RESUMING: "yellow",
    Phase.UPDATING: "yellow",
    Phase.STOPPED: "grey50",
    Phase.STOPPING: "grey50",
    Phase.SUSPENDING: "grey50",
    Phase.DELETING: "magenta",
    Phase.TERMINATING: "magenta",
}


def format_age(created: datetime | None, now: datetime) -> str:
    """k9s-style age: 42s, 7m, 3h, 5d."""
    if created is None:
        return "-"
    if created.tzinfo is None:
        created = created.replace(tzinfo=timezone.utc)
    seconds = max(0, int((now - created).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def format_pods(job: Job) -> str:
    running = "-" if job.running_pods is None else str(job.running_pods)
    requested = "-" if job.requested_pods is None else str(job.requested_pods)
    return f"{running}/{requested}"


def format_gpus(job: Job) -> str:
    if job.gpus is None:
        return "-"
    return f"{job.gpus:g}"


@functools.cache
def status_text(phase: Phase) -> Text:
    """One (never mutated) Text per phase: a refresh of thousands of rows makes no new ones."""
    return Text(phase.value, style=PHASE_STYLES.get(phase, ""))


def job_cells(job: Job, now: datetime, diagnosis: Diagnosis | None = None) -> dict[str, str | Text]:
    return {
        "name": job.name,
        "status": status_text(job.phase),
        "pods": format_pods(job),
        "gpus": format_gpus(job),
        "project": job.project or "-",
        "age": format_age(job.created, now),
        "health": health_cell(diagnosis),
    }


def _cell_width(value: str | Text) -> int:
    return cell_len(value.plain if isinstance(value, Text) else value)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

SORTS: dict[str, Callable[[Job], object]] = {
    "name": lambda job: job.name,
    "status": lambda job: (job.phase.value, job.name),
    # Newest first reads naturally for "age"; ties broken by name for a stable order.
    "age": lambda job: (-(job.created or _EPOCH).timestamp(), job.name),
}


class JobTable(DataTable):
    """DataTable of jobs keyed by name; `update_jobs` diffs rows instead of rebuilding."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.jobs: dict[str, Job] = {}
        self.sort_by = "name"
        self.sort_reverse = False
        self.filter_text = ""
        self._order: list[str] = []
        self.health: HealthCache | None = None  # set by the screen: the app's diagnoses
        self._cells: dict[str, dict[str, str | Text]] = {}  # what each shown row holds

    def on_mount(self) -> None:
        for key, label in COLUMNS:
            self.add_column(label, key=key)

    @property
    def selected_name(self) -> str | None:
        if not self.row_count:
            return None
        try:
            row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except (CellDoesNotExist, RowDoesNotExist):
            return None
        return row_key.value

    @property
    def selected_job(self) -> Job | None:
        name = self.selected_name
        return self.jobs.get(name) if name else None

    def visible_names(self) -> list[str]:
        return list(self._order)

    def select_name(self, name: str) -> bool:
        """Move the cursor to the job `name`; False when it is not shown."""
        try:
            index = self.get_row_index(name)
        except RowDoesNotExist:
            return False
        self.move_cursor(row=index, animate=False)
        return True

    def set_sort(self, column: str) -> None:
        """Sort by `column`; choosing the same column again reverses the order."""
        if column == self.sort_by:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_by, self.sort_reverse = column, False
        self._apply_sort(self.selected_name)

    def update_jobs(self, jobs: Sequence[Job], now: datetime) -> None:
        """Show `jobs`: remove gone rows, update changed cells, add new rows, keep the selection.

        Linear in the number of jobs (5,000 jobs refresh in well under 0.1 s; issue 12,
        benchmarks/fig_job_table.py): DataTable's own `remove_row` and `update_cell(...,
        update_width=True)` each rescan the whole table, which made one refresh take seconds."""
        selected = self.selected_name
        wanted = {job.name: job for job in jobs if self._matches(job)}
        self.jobs = {job.name: job for job in jobs}
        with self.app.batch_update():
            gone = [n for n in self._order if n not in wanted]
            self._remove_rows(gone)
            added = False
            changed: set[str] = set()  # columns with a changed cell
            for name, job in wanted.items():
                cells = job_cells(job, now, self.health.get(job) if self.health else None)
                old = self._cells.get(name)
                if old is not None:
                    if old != cells:
                        # update_cell's work without its refresh per cell (one below).
                        row = self._data[RowKey(name)]
                        for column, value in cells.items():
                            if old[column] != value:
                                row[ColumnKey(column)] = value
                                changed.add(column)
                else:
                    # New rows are measured by DataTable itself, once each.
                    self.add_row(*(cells[key] for key, _ in COLUMNS), key=name)
                    added = True
                self._cells[name] = cells
            if changed:
                self._update_count += 1  # invalidates DataTable's row render cache
                self.refresh()
                self._fit_columns(changed)
            self._apply_sort(selected, rows_changed=added or bool(gone))

    def _remove_rows(self, names: list[str]) -> None:
        """Remove rows in one pass. `remove_row` rebuilds the row index for each row removed
        (quadratic on a big refresh); the sort that follows every update rebuilds it once."""
        if len(names) <= 2:
            for name in names:
                self.remove_row(name)
                del self._cells[name]
            return
        gone = {RowKey(name) for name in names}
        for key in gone:
            del self.rows[key]
            del self._data[key]
            del self._cells[key.value]
        kept = sorted(
            (k for k in self._row_locations if k not in gone), key=self._row_locations.get
        )
        self._row_locations = TwoWayDict({key: index for index, key in enumerate(kept)})
        self._updated_cells = {c for c in self._updated_cells if c.row_key not in gone}
        self._require_update_dimensions = True
        self._update_count += 1
        self.refresh(layout=True)

    def _fit_columns(self, keys: set[str]) -> None:
        """Columns `keys` as wide as their widest cell or label, from the plain text (cells are
        one line): DataTable would render and measure every cell of a column per changed cell."""
        for column in self.columns.values():
            key = str(column.key.value)
            if key not in keys:
                continue
            widest = max(
                (_cell_width(cells[key]) for cells in self._cells.values()),
                default=0,
            )
            width = max(widest, cell_len(column.label.plain))
            if width != column.content_width:
                column.content_width = width
                self._require_update_dimensions = True
                self.refresh(layout=True)

    def _apply_sort(self, selected: str | None, rows_changed: bool = True) -> None:
        rank = SORTS.get(self.sort_by, SORTS["name"])
        order = sorted(
            (self.jobs[n] for n in self._row_names()), key=rank, reverse=self.sort_reverse
        )
        names = [job.name for job in order]
        if rows_changed or names != self._order:  # else the rows already stand in this order
            position = {name: i for i, name in enumerate(names)}
            self.sort("name", key=lambda name: position.get(name, 0))
        self._order = names
        if selected is None or not self.select_name(selected):
            self.move_cursor(row=min(self.cursor_row, max(0, self.row_count - 1)), animate=False)

    def _row_names(self) -> list[str]:
        return [str(key.value) for key in self.rows]

    def _matches(self, job: Job) -> bool:
        if not self.filter_text:
            return True
        needle = self.filter_text.lower()
        return needle in job.name.lower() or needle in job.phase.value.lower()
