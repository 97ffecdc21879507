"""CompareScreen (`=` on two jobs): the two runs side by side, as `runai-tui compare` prints them
(knowledge/compare.py), gathered in a worker; `d` toggles the rows that are the same."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from runai_tui.errors import Failure
from runai_tui.knowledge.compare import Comparison, compare, render, require_records
from runai_tui.knowledge.run_sources import gather_job
from runai_tui.runai.client import RunaiClient
from runai_tui.text import literal


class CompareScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q", "close", "Close"),
        Binding("d", "toggle_same", "Differences only"),
    ]

    DEFAULT_CSS = """
    CompareScreen { align: center middle; }
    CompareScreen > Vertical {
        width: 95%; height: 90%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    CompareScreen #compare-status { height: auto; color: $text-muted; }
    CompareScreen VerticalScroll { height: 1fr; }
    """

    def __init__(self, client: RunaiClient, job_a: str, job_b: str, how: str) -> None:
        super().__init__()
        self.client = client
        self.job_a, self.job_b, self.how = job_a, job_b, how
        self.result: Comparison | None = None
        self.same_rows = True

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = f"compare {literal(self.job_a)} · {literal(self.job_b)}"
            box.border_subtitle = "d differences only · esc close"
            yield Static(f"{self.how}; reading both runs…", id="compare-status", markup=False)
            with VerticalScroll():
                yield Static("", id="compare-table", markup=False)

    def on_mount(self) -> None:
        self.gather()

    @work(exclusive=True, group="compare", exit_on_error=False)
    async def gather(self) -> None:
        status = self.query_one("#compare-status", Static)
        try:
            a = await gather_job(self.client, self.job_a)
            b = await gather_job(self.client, self.job_b)
            require_records(a, b)
        except Failure as error:
            text = f"compare failed: {error.message}"
            status.update(Text(literal(text + (f" — {error.hint}" if error.hint else ""))))
            return
        self.result = compare(a, b)
        status.update(Text(literal(self.how)))
        self.show()

    def show(self) -> None:
        if self.result is None:
            return
        lines = render(self.result, same_rows=self.same_rows)
        self.query_one("#compare-table", Static).update(Text("\n".join(map(literal, lines))))

    def action_toggle_same(self) -> None:
        self.same_rows = not self.same_rows
        self.show()

    def action_close(self) -> None:
        self.dismiss(None)
