"""CompareScreen (`=` on two or more marked jobs, or on the job selected before and this one):
the table of `runai-tui compare` (knowledge/compare.py), gathered in a worker, with every run's
loss and images/s overlaid, one colour per run; `d` shows the settings and run.json fields that
are the same too, `l` puts the curves on a log scale."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static
from textual_plotext.plot import Plot

from runai_tui.knowledge.compare import (
    RunCurves,
    RunSide,
    RunTable,
    run_curves,
    run_table,
    section_title,
    sectioned,
    table_cells,
)
from runai_tui.runai.client import RunaiClient
from runai_tui.shapes.errors import Failure
from runai_tui.tui.widgets.curves import LossAndThroughputPlot
from runai_tui.util.text import literal
from runai_tui.workflows.run_sources import gather_jobs

# Each run's colour, in the table's header and on the curves (tab10: told apart on dark and
# light themes); past ten runs the colours repeat and the names tell them apart.
RUN_COLOURS = (
    (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
    (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207),
)  # fmt: skip


def run_colour(index: int) -> tuple[int, int, int]:
    return RUN_COLOURS[index % len(RUN_COLOURS)]


def _style(index: int) -> str:
    return "rgb({},{},{})".format(*run_colour(index))


def table_renderable(table: RunTable, differences_only: bool = True) -> Table:
    """The table as `runai-tui compare` prints it, each run's name in its curves' colour and the
    best of each row in bold; names and values are text, never markup."""
    grid = Table(show_edge=False, box=None, padding=(0, 2, 0, 0))
    grid.add_column("", no_wrap=True)  # the section titles share it: never folded
    for i, label in enumerate(table.labels):
        grid.add_column(
            Text(literal(label), style=f"bold {_style(i)}"), overflow="fold", max_width=30
        )
    grid.add_column("BEST")
    for section, rows in sectioned(table, differences_only):
        grid.add_row(Text(f"== {section_title(table, section)}", style="bold"))
        for row in rows:
            cells = [
                Text(literal(cell), style="bold green" if i in row.best else "")
                for i, cell in enumerate(table_cells(row))
            ]
            grid.add_row(Text(literal(row.key)), *cells, Text(row.better or "", style="dim"))
    return grid


class RunsCurves(LossAndThroughputPlot):
    """Every run's loss and images/s against step, one colour per run, a legend of names."""

    DEFAULT_CSS = """
    RunsCurves { height: 28; border: round $accent; border-title-color: $accent; }
    """
    THROUGHPUT_TITLE = "images/s (all ranks)"
    SUBTITLE_HINT = " · l toggles"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.curves: list[RunCurves] = []

    def show(self, curves: list[RunCurves]) -> None:
        self.curves = curves
        self.draw()

    def plot_series(self, plt: Plot) -> None:
        top, bottom = plt.subplot(1, 1), plt.subplot(2, 1)  # each call below names its plot
        for i, run in enumerate(self.curves):
            for plot, points in ((top, run.loss), (bottom, run.img_s)):
                shown = [(s, v) for s, v in points if v > 0]  # a log scale has no 0
                if shown:
                    plot.plot(
                        [s for s, _ in shown],
                        [v for _, v in shown],
                        marker="braille",
                        color=run_colour(i),
                        label=run.label,
                    )


class CompareScreen(ModalScreen[None]):
    """`=` on two or more jobs: the table of `runai-tui compare A B …` and the curves of every
    run overlaid. `sides`, when given, are shown as they are (nothing gathered)."""

    BINDINGS = [
        Binding("escape,q", "close", "Close"),
        Binding("d", "toggle_same", "Same rows too"),
        Binding("l", "log_scale", "Log scale"),
    ]

    DEFAULT_CSS = """
    CompareScreen { align: center middle; }
    CompareScreen > Vertical {
        width: 98%; height: 95%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    CompareScreen #compare-status { height: auto; color: $text-muted; }
    CompareScreen #compare-table { height: auto; margin-bottom: 1; }
    CompareScreen VerticalScroll { height: 1fr; }
    """

    def __init__(
        self,
        client: RunaiClient | None,
        jobs: list[str],
        how: str,
        sides: list[RunSide] | None = None,
    ) -> None:
        super().__init__()
        self.client = client
        self.jobs, self.how = list(jobs), how
        self.given = sides
        self.result: RunTable | None = None
        self.differences_only = True

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = f"compare {len(self.jobs)} runs"
            box.border_subtitle = "d same rows too · l log scale · esc close"
            yield Static(
                f"{self.how}; reading {len(self.jobs)} runs…", id="compare-status", markup=False
            )
            with VerticalScroll():
                yield Static("", id="compare-table", markup=False)
                yield RunsCurves(id="compare-curves")

    def on_mount(self) -> None:
        if self.given is not None:
            self.present(self.given)
        else:
            self.gather()

    @work(exclusive=True, group="compare", exit_on_error=False)
    async def gather(self) -> None:
        status = self.query_one("#compare-status", Static)
        if self.client is None:  # given the sides (run directories): nothing to read
            return
        try:
            sides = await gather_jobs(self.client, self.jobs)
        except Failure as error:
            text = f"compare failed: {error.message}"
            status.update(Text(literal(text + (f" — {error.hint}" if error.hint else ""))))
            return
        self.present(sides)

    def present(self, sides: list[RunSide]) -> None:
        self.result = run_table(sides)
        if self.result.sweep:
            box = self.query_one(Vertical)
            box.border_title = f"compare {len(sides)} runs of sweep {literal(self.result.sweep)}"
        lacks = [f"{side.label} lacks {what}" for side in sides for what in side.lacks]
        lines = [literal(line) for line in [self.how, *lacks]]
        self.query_one("#compare-status", Static).update(Text("\n".join(lines)))
        self.show_table()
        self.query_one(RunsCurves).show([run_curves(side) for side in sides])

    def show_table(self) -> None:
        if self.result is not None:
            shown = table_renderable(self.result, self.differences_only)
            self.query_one("#compare-table", Static).update(shown)

    def action_toggle_same(self) -> None:
        """`d`: the settings and run.json fields that are the same on every run, shown or not."""
        self.differences_only = not self.differences_only
        what = "same rows too" if self.differences_only else "differences only"
        self.query_one(Vertical).border_subtitle = f"d {what} · l log scale · esc close"
        self.show_table()

    def action_log_scale(self) -> None:
        self.query_one(RunsCurves).toggle_log_scale()

    def action_close(self) -> None:
        self.dismiss(None)
