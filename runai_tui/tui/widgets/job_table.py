"""JobTable: the jobs list, updated in place by job name so the selection and the marks survive
refreshes. Built on DataTable's public API only: a refresh is a keyed diff (`update_cell`,
`add_row`, `remove_row`, `sort`), and only the columns whose widest cell changed are re-fitted.

A row's key is a slot, not the job's name (`ShownRows.keys` maps one to the other): DataTable
renumbers every row on each `remove_row`, so a row whose job is gone is given to a new job
instead (its cells updated) and only the rows left over are removed. A refresh where as many
jobs come as go (the usual one) removes nothing. Read a cell by job name with `cell(name,
column)`.

Every column has an explicit width, its widest cell's (ShownRows keeps it), set in the same step
as the cells that change it. DataTable's own fit-to-content measures new rows later, when the
table is next idle, and caches the lines it draws by a counter that this measuring does not
advance: a paint in between (a resize of the screen, which Textual handles at once) kept the
columns at their labels' width until something else changed the table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, ColumnKey, RowDoesNotExist

from runai_tui.shapes.models import Job, format_age, format_gpus, format_pods
from runai_tui.tui.health_view import HealthCache, health_cell
from runai_tui.tui.job_cells import status_text
from runai_tui.util.text import literal, natural_key

if TYPE_CHECKING:
    from runai_tui.knowledge.diagnose import Diagnosis

Cell = str | Text

# (key, label). HEALTH comes from the diagnoses already made (tui/health_view.py), never
# fetched here.
COLUMNS: list[tuple[str, str]] = [
    ("name", "NAME"),
    ("status", "STATUS"),
    ("pods", "PODS"),
    ("gpus", "GPUS"),
    ("project", "PROJECT"),
    ("age", "AGE"),
    ("health", "HEALTH"),
]
# Shown after GPUS from the first `set_gpu_util` on: no column while there is nothing to show.
GPU_UTIL_COLUMN = ("gpu_util", "GPU UTIL")
# Shown after STATUS while the list holds a training job of another framework than PyTorch (its
# verbs go to that framework's `runai training` subcommand).
FRAMEWORK_COLUMN = ("framework", "FRAMEWORK")
# Shown after STATUS while a watcher (the app's `W`, or a `watch` process) watches a listed job:
# its attempt of how many and what the watcher does next (runai_tui/workflows/watch_state.py).
WATCH_COLUMN = ("watch", "WATCH")
NO_WATCH = Text("")  # every unwatched row's WATCH cell: one object, nothing made per row
WATCH_STYLE = "bold cyan"

MARK = "✓ "  # before the name of a marked row
MARK_STYLE = "bold magenta"

# Removing a row is linear in the table's rows (DataTable renumbers the rows), and so is a
# rebuild (clear, add every row, measure them): past about this many rows removed in one refresh
# (the rows gone beyond those given to new jobs), whatever the table's size, rebuilding costs
# less (benchmarks/fig_job_table.py sizes).
REBUILD_AFTER_REMOVALS = 150


def data_text(value: str, style: str = "") -> Text:
    """A cell from cluster data: never read as markup (DataTable reads a str cell as markup)."""
    return Text(literal(value), style=style, end="", no_wrap=True)


def name_cell(name: str, marked: bool = False) -> Text:
    return data_text(MARK + name, MARK_STYLE) if marked else data_text(name)


def job_cells(job: Job, now: datetime, diagnosis: Diagnosis | None = None) -> dict[str, Cell]:
    """A row's cells, by column key (the columns of COLUMNS)."""
    return {
        "name": name_cell(job.name),
        "status": status_text(job.phase, job.preemptions),
        "pods": format_pods(job),
        "gpus": format_gpus(job),
        "project": data_text(job.project or "-"),
        "age": format_age(job.created, now),
        "health": health_cell(diagnosis),
    }


def same_cell(a: Cell, b: Cell) -> bool:
    """Whether two cells draw the same (Text's own `==` ignores the style)."""
    if isinstance(a, Text) and isinstance(b, Text):
        return a.plain == b.plain and a.style == b.style and a.spans == b.spans
    return type(a) is type(b) and a == b


def cell_width(value: Cell) -> int:
    return cell_len(value.plain if isinstance(value, Text) else value)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

# Names as people read them (`t2` before `t10`): text.natural_key, as `runai-tui list` sorts.
SORTS: dict[str, Callable[[Job], Any]] = {
    "name": lambda job: natural_key(job.name),
    "status": lambda job: (job.phase.value, natural_key(job.name)),
    # Newest first reads naturally for "age"; ties broken by name for a stable order.
    "age": lambda job: (-(job.created or _EPOCH).timestamp(), natural_key(job.name)),
}


class ShownRows:
    """What the table shows, in plain Python: each row's cells and row key by job name, the
    rows' order, and per column how many cells have each width (so a column's widest cell is
    known without measuring the column again)."""

    def __init__(self, columns: Sequence[tuple[str, str]]) -> None:
        self.labels = {key: cell_len(label) for key, label in columns}
        self.cells: dict[str, dict[str, Cell]] = {}
        self.keys: dict[str, str] = {}  # job name -> its row's key
        self.names: dict[str, str] = {}  # row key -> job name
        self.order: list[str] = []  # top to bottom
        self.widths: dict[str, Counter[int]] = {key: Counter() for key in self.labels}
        self.next_key = 0

    def add(self, name: str, cells: dict[str, Cell], key: str | None = None) -> str:
        """Record the row of `name`, under `key` (a row given over from a job gone) or a new
        key; the key is returned."""
        if key is None:
            key, self.next_key = f"row-{self.next_key}", self.next_key + 1
        self.cells[name] = cells
        self.keys[name], self.names[key] = key, name
        self.order.append(name)
        for column, value in cells.items():
            self.widths[column][cell_width(value)] += 1
        return key

    def remove(self, names: Iterable[str]) -> list[str]:
        """Forget the rows of `names`; their row keys are returned."""
        gone = set(names)
        keys = []
        for name in gone:
            for column, value in self.cells.pop(name).items():
                self.widths[column][cell_width(value)] -= 1
            key = self.keys.pop(name)
            del self.names[key]
            keys.append(key)
        self.order = [name for name in self.order if name not in gone]
        return keys

    def give(self, pairs: dict[str, str], cells: dict[str, dict[str, Cell]]) -> None:
        """Give each row of a job gone (a key of `pairs`) to a new job (its value), in place:
        the row keeps its key and its place; its cells become `cells[new]`."""
        for old, new in pairs.items():
            for column, value in self.cells.pop(old).items():
                self.widths[column][cell_width(value)] -= 1
            key = self.keys.pop(old)
            self.keys[new], self.names[key] = key, new
            self.cells[new] = cells[new]
            for column, value in cells[new].items():
                self.widths[column][cell_width(value)] += 1
        self.order = [pairs.get(name, name) for name in self.order]

    def change(self, name: str, column: str, value: Cell) -> None:
        cells = self.cells[name]
        self.widths[column][cell_width(cells[column])] -= 1
        self.widths[column][cell_width(value)] += 1
        cells[column] = value

    def width(self, column: str) -> int:
        """The column's content width: its widest cell or its label."""
        cells = max((w for w, count in self.widths[column].items() if count > 0), default=0)
        return max(cells, self.labels[column])

    def widest_row(self, column: str) -> str | None:
        """A job whose row holds the column's widest cell (None when there are no rows)."""
        return max(self.cells, key=lambda name: cell_width(self.cells[name][column]), default=None)


class JobTable(DataTable[Cell]):
    """DataTable of jobs keyed by job name.

    Public API (other screens build on it):
    - `update_jobs(jobs, now)`: show `jobs` (keyed by name), keeping the selection and marks;
    - `selected_name` / `selected_job`, `select_name(name)`, `visible_names()`;
    - `set_sort(column)`, `filter_text`, `health` (set by the jobs screen);
    - `toggle_mark(name)`, `is_marked(name)`, `marked()`, `clear_marks()`; space toggles the
      selected row's mark;
    - `set_gpu_util(name, text)`: the GPU UTIL cell of a job, filled asynchronously;
    - `cell(name, column)`: what a job's cell shows (row keys are slots, not job names).
    - `watched`: job name -> (its project, its WATCH cell), set by the screen before
      `update_jobs`.
    """

    BINDINGS = [Binding("space", "toggle_mark", "Mark", show=False)]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.jobs: dict[str, Job] = {}
        self.sort_by = "name"
        self.sort_reverse = False
        self.filter_text = ""
        self.health: HealthCache | None = None  # set by the screen: the app's diagnoses
        self.marks: set[str] = set()  # job names, kept across refreshes while the job exists
        self.marking = True  # space marks rows (the screen turns it off under --readonly)
        self.gpu_util: dict[str, str] = {}  # job name -> text, kept while the job exists
        self.gpu_util_shown = False  # the GPU UTIL column, from the first value on
        self.framework_shown = False  # the FRAMEWORK column, while another framework is listed
        self.watched: dict[str, tuple[str, str]] = {}  # job name -> (project, WATCH cell)
        self.watch_shown = False  # the WATCH column, while a listed job is watched
        self.shown = ShownRows(self.column_specs())

    def on_mount(self) -> None:
        for key, label in self.column_specs():
            self.add_column(label, width=self.shown.width(key), key=key)

    def column_specs(self) -> list[tuple[str, str]]:
        """The columns shown now: COLUMNS, with GPU UTIL after GPUS once it has a value and
        FRAMEWORK after STATUS while a job of another framework is listed."""
        specs = list(COLUMNS)
        if self.gpu_util_shown:
            at = [key for key, _ in specs].index("gpus") + 1
            specs.insert(at, GPU_UTIL_COLUMN)
        if self.framework_shown:
            at = [key for key, _ in specs].index("status") + 1
            specs.insert(at, FRAMEWORK_COLUMN)
        if self.watch_shown:
            at = [key for key, _ in specs].index("status") + 1
            specs.insert(at, WATCH_COLUMN)
        return specs

    # -- selection ---------------------------------------------------------------------------

    @property
    def selected_name(self) -> str | None:
        """The job name of the row under the cursor (None when the table is empty)."""
        if not self.row_count:
            return None
        try:
            row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except (CellDoesNotExist, RowDoesNotExist):
            return None
        return self.shown.names.get(row_key.value or "")

    @property
    def selected_job(self) -> Job | None:
        name = self.selected_name
        return self.jobs.get(name) if name else None

    def visible_names(self) -> list[str]:
        """The job names shown, top to bottom."""
        return list(self.shown.order)

    def select_name(self, name: str) -> bool:
        """Move the cursor to the job `name`; False when it is not shown."""
        key = self.shown.keys.get(name)
        if key is None:
            return False
        self.move_cursor(row=self.get_row_index(key), animate=False)
        return True

    def cell(self, name: str, column: str) -> Cell:
        """The cell of the job `name` in `column` (RowDoesNotExist when it is not shown)."""
        key = self.shown.keys.get(name)
        if key is None:
            raise RowDoesNotExist(f"no row for the job {name!r}")
        return self.get_cell(key, column)

    def set_sort(self, column: str) -> None:
        """Sort by `column`; choosing the same column again reverses the order."""
        if column == self.sort_by:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_by, self.sort_reverse = column, False
        with self.app.batch_update():
            self.place_rows(self.selected_name)

    # -- marks ---------------------------------------------------------------------------------

    def toggle_mark(self, name: str) -> bool:
        """Mark the job `name`, or unmark it if marked; True when it is now marked. A job not in
        the table is not marked."""
        if name not in self.jobs:
            return False
        marked = name not in self.marks
        if marked:
            self.marks.add(name)
        else:
            self.marks.discard(name)
        if name in self.shown.cells:
            self.set_cells(name, {"name": name_cell(name, marked)})
        return marked

    def is_marked(self, name: str) -> bool:
        return name in self.marks

    def marked(self) -> list[str]:
        """The marked jobs shown, top to bottom (a marked job the filter hides stays marked but
        is not listed: bulk actions act on what the user sees)."""
        return [name for name in self.shown.order if name in self.marks]

    def clear_marks(self) -> None:
        for name in list(self.marks):
            self.toggle_mark(name)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_mark" and not self.marking:
            return False
        return super().check_action(action, parameters)

    def action_toggle_mark(self) -> None:
        name = self.selected_name
        if name is not None:
            self.toggle_mark(name)

    # -- GPU utilisation -----------------------------------------------------------------------

    def set_gpu_util(self, name: str, text: str | None) -> None:
        """Show `text` (literally) in the GPU UTIL cell of the job `name`; None clears it. The
        column appears with the first value; the value shows while the job is active (a
        stopped job's last figure would mislead) and is forgotten when the job disappears."""
        if text is None:
            self.gpu_util.pop(name, None)
        elif name in self.jobs:
            self.gpu_util[name] = text
        else:
            return
        if not self.gpu_util_shown:
            if self.gpu_util:
                self.gpu_util_shown = True
                self.rebuild(self.shown.cells, self.selected_name)
            return
        if name in self.shown.cells:
            self.set_cells(name, {"gpu_util": self.gpu_util_cell(self.jobs[name])})

    def gpu_util_cell(self, job: Job) -> Text:
        text = self.gpu_util.get(job.name)
        return data_text(text) if text is not None and job.phase.is_active else data_text("")

    # -- refresh -------------------------------------------------------------------------------

    def row_cells(self, job: Job, now: datetime) -> dict[str, Cell]:
        diagnosis = self.health.get(job) if self.health is not None else None
        cells = job_cells(job, now, diagnosis)
        if job.name in self.marks:
            cells["name"] = name_cell(job.name, marked=True)
        if self.gpu_util_shown:
            cells["gpu_util"] = self.gpu_util_cell(job)
        if self.framework_shown:
            cells["framework"] = data_text(job.framework or job.family)
        if self.watch_shown:
            hit = self.watched.get(job.name)
            mine = hit is not None and hit[0] in (job.project or "default", "default")
            cells["watch"] = data_text(hit[1], WATCH_STYLE) if hit and mine else NO_WATCH
        return cells

    def update_jobs(self, jobs: Sequence[Job], now: datetime) -> None:
        """Show `jobs`, keyed by name: remove the rows gone, update the cells that changed, add
        the new rows, re-fit the columns whose width changed, sort, keep the selection. Marks
        and GPU values of jobs no longer listed are dropped."""
        selected = self.selected_name
        self.jobs = {job.name: job for job in jobs}
        self.marks &= self.jobs.keys()
        self.gpu_util = {name: v for name, v in self.gpu_util.items() if name in self.jobs}
        others = any(job.family != "pytorch" for job in jobs)
        watching = any(name in self.jobs for name in self.watched)  # O(watched)
        columns_change = others != self.framework_shown or watching != self.watch_shown
        self.framework_shown, self.watch_shown = others, watching
        wanted = {
            job.name: self.row_cells(job, now)
            for job in jobs
            if not self.filter_text or self.matches(job)
        }
        shown = self.shown
        gone = [name for name in shown.order if name not in wanted]
        new = [name for name in wanted if name not in shown.cells]
        surplus = len(gone) - len(new)  # rows left over once the new jobs have theirs
        if (
            columns_change
            or surplus > REBUILD_AFTER_REMOVALS
            or (gone and len(gone) == len(shown.order))
        ):
            self.rebuild(wanted, selected)
            return
        before = {column: shown.width(column) for column in shown.labels}
        with self.app.batch_update():
            given = dict(zip(gone, new, strict=False))
            self.give_rows(given, wanted)
            for key in shown.remove(gone[len(given) :]):
                self.remove_row(key)
            for name in new[len(given) :]:
                cells = wanted[name]
                self.add_row(
                    *(cells[column] for column in shown.labels), key=shown.add(name, cells)
                )
            self.update_rows(wanted, skip=given.values())
            self.fit_columns(before)
            self.place_rows(selected)

    def give_rows(self, pairs: dict[str, str], wanted: dict[str, dict[str, Cell]]) -> None:
        """Give the row of each job gone (a key of `pairs`) to a new job (its value): the cells
        that differ are updated; the row keeps its key until the sort moves it."""
        shown = self.shown
        cells: dict[str, dict[str, Cell]] = {}
        for old, new in pairs.items():
            key, kept = shown.keys[old], shown.cells[old]
            cells[new] = dict(kept)
            for column, value in wanted[new].items():
                if not same_cell(kept[column], value):
                    self.update_cell(key, column, value)
                    cells[new][column] = value
        shown.give(pairs, cells)

    def update_rows(self, wanted: dict[str, dict[str, Cell]], skip: Iterable[str]) -> None:
        """Update the cells that changed in the rows shown before (those not in `skip`)."""
        shown, skipped = self.shown, set(skip)
        for name, cells in wanted.items():
            if name in skipped:
                continue
            old, key = shown.cells[name], shown.keys[name]
            for column, value in cells.items():
                if not same_cell(old[column], value):
                    self.update_cell(key, column, value)
                    shown.change(name, column, value)

    def set_cells(self, name: str, cells: dict[str, Cell]) -> None:
        """Change some cells of the shown row `name`, re-fitting their columns if needed."""
        shown = self.shown
        before = {column: shown.width(column) for column in cells}
        for column, value in cells.items():
            if not same_cell(shown.cells[name][column], value):
                self.update_cell(shown.keys[name], column, value)
                shown.change(name, column, value)
        self.fit_columns(before)

    def fit_columns(self, before: dict[str, int]) -> None:
        """Re-fit each column whose width is no longer `before` to its widest cell (the
        column's public `width`), and redraw it at once: `update_cell` invalidates what the
        table drew and (`update_width`) has it recompute its scrollable size."""
        shown = self.shown
        for column, width in before.items():
            if shown.width(column) == width:
                continue
            self.columns[ColumnKey(column)].width = shown.width(column)
            name = shown.widest_row(column)
            if name is not None:
                key = shown.keys[name]
                self.update_cell(key, column, shown.cells[name][column], update_width=True)

    def place_rows(self, selected: str | None) -> None:
        """Sort the rows (only if their order changed) and put the cursor back on `selected`."""
        shown = self.shown
        order = self.sorted_names(shown.cells)
        if order != shown.order:
            # DataTable sorts by cell values: each row's name cell, by identity, gives its place.
            place = {id(shown.cells[name]["name"]): i for i, name in enumerate(order)}
            self.sort("name", key=lambda cell: place[id(cell)])
            shown.order = order
        if selected is not None:
            self.select_name(selected)

    def sorted_names(self, names: Iterable[str]) -> list[str]:
        """`names` in the order of the current sort."""
        rank = SORTS.get(self.sort_by, SORTS["name"])
        jobs = self.jobs
        return sorted(names, key=lambda name: rank(jobs[name]), reverse=self.sort_reverse)

    def rebuild(self, wanted: dict[str, dict[str, Cell]], selected: str | None) -> None:
        """Clear the table and add `wanted` in order: one linear pass, for a refresh that
        removes many rows or a change of the columns shown."""
        scroll_y, cursor_row = self.scroll_y, self.cursor_row
        specs = self.column_specs()
        self.shown = shown = ShownRows(specs)
        for name in self.sorted_names(wanted):
            cells = wanted[name]
            if self.gpu_util_shown and "gpu_util" not in cells:
                cells = {**cells, "gpu_util": self.gpu_util_cell(self.jobs[name])}
            shown.add(name, cells)
        with self.app.batch_update():
            self.clear(columns=True)
            for key, label in specs:
                self.add_column(label, width=shown.width(key), key=key)
            for name in shown.order:
                cells = shown.cells[name]
                self.add_row(*(cells[column] for column in shown.labels), key=shown.keys[name])
            self.scroll_to(y=scroll_y, animate=False, immediate=True)  # the view stays put
            if selected is None or not self.select_name(selected):
                self.move_cursor(row=min(cursor_row, max(0, self.row_count - 1)), animate=False)

    def matches(self, job: Job) -> bool:
        """Whether the filter shows `job`: its name or status contains the filter text."""
        if not self.filter_text:
            return True
        needle = self.filter_text.lower()
        return needle in job.name.lower() or needle in job.phase.value.lower()
