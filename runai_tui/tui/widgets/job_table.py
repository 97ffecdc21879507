"""JobTable: the jobs list, updated in place by job name so the selection survives refreshes."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone

from rich.cells import cell_len
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._two_way_dict import TwoWayDict
from textual.cache import LRUCache
from textual.renderables.styled import Styled
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, ColumnKey, Row, RowDoesNotExist, RowKey

from runai_tui.knowledge.diagnose import Diagnosis
from runai_tui.models import Job, Phase
from runai_tui.tui.health_view import HealthCache, health_cell

COLUMNS: list[tuple[str, str]] = [
    ("name", "NAME"),
    ("status", "STATUS"),
    ("pods", "PODS"),
    ("gpus", "GPUS"),
    ("project", "PROJECT"),
    ("age", "AGE"),
    (
        "health",
        "HEALTH",
    ),  # from the diagnoses already made (tui/health_view.py), never fetched here
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


_AGE_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def _aware(created: datetime) -> datetime:
    return created.replace(tzinfo=timezone.utc) if created.tzinfo is None else created


def age_seconds(created: datetime, now: datetime) -> int:
    """Whole seconds from `created` to `now`, never negative (a naive `created` is UTC)."""
    return max(0, int((now - _aware(created)).total_seconds()))


def age_text(seconds: int) -> tuple[str, int, int]:
    """k9s-style age of `seconds` (42s, 7m, 3h, 5d) and the seconds [lo, hi) showing that text:
    a refresh re-renders an age only when `now` has left its range."""
    for unit, size in _AGE_UNITS:
        if seconds >= size or size == 1:
            count = seconds // size
            return f"{count}{unit}", count * size, (count + 1) * size
    raise AssertionError("unreachable: the last unit is one second")


def format_age(created: datetime | None, now: datetime) -> str:
    """k9s-style age: 42s, 7m, 3h, 5d."""
    if created is None:
        return "-"
    return age_text(age_seconds(created, now))[0]


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
    """A row's cells. What they are drawn from, the age aside, is `_source` (a refresh skips a
    row whose source is unchanged): a new cell's inputs go there too."""
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
_EPOCH_MIN = datetime.min.replace(tzinfo=timezone.utc)  # "0s" holds however early `now` is

SORTS: dict[str, Callable[[Job], object]] = {
    "name": lambda job: job.name,
    "status": lambda job: (job.phase.value, job.name),
    # Newest first reads naturally for "age"; ties broken by name for a stable order.
    "age": lambda job: (-(job.created or _EPOCH).timestamp(), job.name),
}


class _Shown:
    """A shown row: its key, what it was drawn from, the times its age text holds, its cells."""

    __slots__ = ("key", "meta", "offset", "source", "age_from", "age_until", "cells")

    def __init__(self, key: RowKey, source: tuple[object, ...], cells: dict[str, str | Text]):
        self.key = key
        self.meta = Row(key, 1)  # DataTable's record of the row: one line high, no label
        self.offset = (key, 0)  # its one entry in DataTable's line index
        self.source = source
        self.age_from = self.age_until = _EPOCH  # `now` in [age_from, age_until): same age text
        self.cells = cells


def _source(job: Job, diagnosis: Diagnosis | None) -> tuple[object, ...]:
    """Everything a row shows except its age: equal sources and age texts, equal cells."""
    return (
        job.phase,
        job.running_pods,
        job.requested_pods,
        job.gpus,
        job.project,
        job.created,
        diagnosis,
    )


class JobTable(DataTable):
    """DataTable of jobs keyed by name; `update_jobs` diffs rows instead of rebuilding."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.jobs: dict[str, Job] = {}
        self.sort_by = "name"
        self.sort_reverse = False
        self.filter_text = ""
        self._order: list[str] = []  # the shown rows, top to bottom
        self.health: HealthCache | None = None  # set by the screen: the app's diagnoses
        self._shown: dict[str, _Shown] = {}
        self._column_keys: dict[str, ColumnKey] = {}
        # Per column: how many shown cells have each width, so a column is re-fitted without
        # measuring all its cells again.
        self._widths: dict[str, dict[int, int]] = {key: {} for key, _ in COLUMNS}
        # Rendered cells by what they show and how (see `_render_cell`), across refreshes.
        self._cell_renders: LRUCache[tuple[object, ...], list[list[Segment]]] = LRUCache(4096)

    def on_mount(self) -> None:
        for key, label in COLUMNS:
            self._column_keys[key] = self.add_column(label, key=key)

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

        Linear in the number of jobs, and cheap per unchanged row (5,000 jobs refresh in well
        under 0.1 s; issue 12, benchmarks/fig_job_table.py): a row is compared by what it is
        drawn from and the range of seconds its age text holds, so only changed rows build
        cells. DataTable's own `remove_row`, `add_row`, `sort` and `update_cell(...,
        update_width=True)` each rescan or re-measure the whole table (seconds per refresh);
        here rows are removed, added and placed in one pass each, and a column is re-fitted
        from a count of its cells' widths."""
        selected = self.selected_name
        health = self.health
        self.jobs = {job.name: job for job in jobs}
        if self.filter_text:
            wanted = {job.name: job for job in jobs if self._matches(job)}
        else:
            wanted = self.jobs
        shown = self._shown
        was_empty = not shown
        with self.app.batch_update():
            gone = [name for name in self._order if name not in wanted]
            if gone:
                self._remove_rows(gone)
            added: list[_Shown] = []
            changed: set[str] = set()  # columns with a changed cell
            for name, job in wanted.items():
                diagnosis = health.get(job) if health is not None else None
                source = _source(job, diagnosis)
                created = job.created
                row = shown.get(name)
                if row is not None:
                    if row.source == source and (
                        created is None or row.age_from <= now < row.age_until
                    ):
                        continue  # the same cells as shown
                    cells = job_cells(job, now, diagnosis)
                    data = self._data[row.key]
                    for column, value in cells.items():
                        old = row.cells[column]
                        if old != value:
                            data[self._column_keys[column]] = value
                            self._count_width(column, old, -1)
                            self._count_width(column, value, 1)
                            changed.add(column)
                    row.source, row.cells = source, cells
                else:
                    row = _Shown(RowKey(name), source, job_cells(job, now, diagnosis))
                    shown[name] = row
                    added.append(row)
                if created is not None:
                    created = _aware(created)
                    _, lo, hi = age_text(age_seconds(created, now))
                    row.age_from = created + timedelta(seconds=lo) if lo else _EPOCH_MIN
                    row.age_until = created + timedelta(seconds=hi)
            if added:
                self._add_rows(added)
            if changed:
                self._update_count += 1  # invalidates DataTable's render caches
                self.refresh()
                self._fit_columns(changed)
            self._apply_sort(selected, rows_changed=bool(added or gone))
            if was_empty and added and self.show_cursor and self.cursor_type != "none":
                self._highlight_cursor()  # as add_row does for a table's first row

    def _count_width(self, column: str, value: str | Text, step: int) -> None:
        counts = self._widths[column]
        width = _cell_width(value)
        count = counts.get(width, 0) + step
        if count:
            counts[width] = count
        else:
            del counts[width]

    def _remove_rows(self, names: list[str]) -> None:
        """Remove rows in one pass; `_apply_sort`, which follows, places the rows left.
        (`remove_row` rebuilds the row index for each row removed: quadratic on a big refresh.)"""
        gone: set[RowKey] = set()
        for name in names:
            row = self._shown.pop(name)
            for column, value in row.cells.items():
                self._count_width(column, value, -1)
            del self.rows[row.key]
            del self._data[row.key]
            gone.add(row.key)
        if self._updated_cells:
            self._updated_cells = {c for c in self._updated_cells if c.row_key not in gone}
        self._require_update_dimensions = True
        self.check_idle()
        self._update_count += 1
        self.refresh(layout=True)

    def _add_rows(self, rows: list[_Shown]) -> None:
        """`add_row` for many rows at once: data and metadata in, column widths grown to the new
        cells (as DataTable's own measuring would); `_apply_sort`, which follows, places them."""
        ordered = [(key, self._column_keys[key]) for key, _ in COLUMNS]
        for row in rows:
            cells = row.cells
            self._data[row.key] = {column_key: cells[key] for key, column_key in ordered}
            self.rows[row.key] = row.meta
            for key, value in cells.items():
                self._count_width(key, value, 1)
        for column in self.columns.values():
            key = str(column.key.value)
            widest = max(_cell_width(row.cells[key]) for row in rows)
            if widest > column.content_width:
                column.content_width = widest
        self._require_update_dimensions = True
        self._update_count += 1
        self.check_idle()
        self.refresh(layout=True)

    def _fit_columns(self, keys: set[str]) -> None:
        """Columns `keys` as wide as their widest cell or label, from the plain text (cells are
        one line): DataTable would render and measure every cell of a column per changed cell."""
        for column in self.columns.values():
            key = str(column.key.value)
            if key not in keys:
                continue
            width = max(max(self._widths[key], default=0), cell_len(column.label.plain))
            if width != column.content_width:
                column.content_width = width
                self._require_update_dimensions = True
                self.refresh(layout=True)

    def _apply_sort(self, selected: str | None, rows_changed: bool = True) -> None:
        rank = SORTS.get(self.sort_by, SORTS["name"])
        if rank is SORTS["name"]:
            names = sorted(self._shown, reverse=self.sort_reverse)
        else:
            jobs = self.jobs
            names = sorted(self._shown, key=lambda n: rank(jobs[n]), reverse=self.sort_reverse)
        if rows_changed or names != self._order:  # else the rows already stand in this order
            # What DataTable.sort does, from the order already known; and the two lists
            # DataTable would rebuild from it a row at a time on the next paint (every row is
            # one line high), so a 5,000-row refresh does not pay for them again.
            shown = self._shown
            placed = [shown[name] for name in names]
            keys = [row.key for row in placed]
            self._row_locations = TwoWayDict(dict(zip(keys, range(len(keys)), strict=True)))
            self._update_count += 1
            self._ordered_row_cache[(len(keys), self._update_count)] = [r.meta for r in placed]
            self._offset_cache[self._update_count] = [row.offset for row in placed]
            self.refresh()
            self.hover_coordinate = self.hover_coordinate  # kept inside the table
        self._order = names
        if selected is None or not self.select_name(selected):
            self.move_cursor(row=min(self.cursor_row, max(0, self.row_count - 1)), animate=False)

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> list[list[Segment]]:
        """DataTable's `_render_cell`, reusing the rendering of an equal cell drawn before.

        Any change to a row clears DataTable's render caches for every row, so a refresh that
        moves the rows re-renders every visible cell through Rich (most of a 5,000-job refresh's
        repaint). A cell's lines depend on its text, width and styles, plus the row/column meta
        that DataTable adds to its style (for the mouse): so the lines are kept by the former,
        and the meta is added to their styles afterwards (it sets no colour or attribute, so the
        styles come out equal to DataTable's own; tests/tui/test_job_table_bulk.py compares)."""
        if row_index < 0 or column_index < 0 or self.fixed_rows or self.fixed_columns:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        cache_key = (
            row_key,
            self._column_locations.get_key(column_index),
            base_style,
            cursor,
            hover,
            self._show_hover_cursor,
            self._update_count,
            self._pseudo_class_state,
        )
        lines = self._cell_render_cache.get(cache_key)
        if lines is not None:
            return lines
        row = self.rows.get(row_key) if row_key is not None else None
        cell = self._get_row_renderables(row_index).cells[column_index]
        if row is None or row.height != 1 or row.auto_height or not isinstance(cell, Text):
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        component_style, post_style = self._get_styles_to_render_cell(
            False,
            False,
            False,
            hover,
            cursor,
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority == "css",
            self.cursor_background_priority == "css",
        )
        shown = (
            cell.plain,
            cell.style,
            tuple(cell.spans),
            cell.end,
            cell.justify,
            cell.overflow,
            cell.no_wrap,
            cell.tab_size,
        )
        render_key = (shown, width, base_style, component_style, post_style, self.cell_padding)
        plain_lines = self._cell_renders.get(render_key)
        if plain_lines is None:
            options = self.app.console_options.update_dimensions(width, 1).update(no_wrap=True)
            plain_lines = self.app.console.render_lines(
                Styled(
                    Padding(cell, (0, self.cell_padding)),
                    pre_style=base_style + component_style,
                    post_style=post_style,
                ),
                options,
            )
            self._cell_renders[render_key] = plain_lines
        meta = Style.from_meta({"row": row_index, "column": column_index})
        lines = [
            [
                Segment(text, None if control else (style + meta if style else meta), control)
                for text, style, control in line
            ]
            for line in plain_lines
        ]
        self._cell_render_cache[cache_key] = lines
        return lines

    def _matches(self, job: Job) -> bool:
        if not self.filter_text:
            return True
        needle = self.filter_text.lower()
        return needle in job.name.lower() or needle in job.phase.value.lower()
