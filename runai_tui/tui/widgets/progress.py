"""TrainingPanel: step, epoch, loss, learning rate, images/s and a loss sparkline."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

from runai_tui.knowledge.records.progress import TrainingProgress


class TrainingPanel(Vertical):
    """Shows a TrainingProgress; hidden until the first metric line arrives."""

    DEFAULT_CSS = """
    TrainingPanel {
        height: auto;
        display: none;
        border: round $accent;
        border-title-color: $accent;
        padding: 0 1;
    }
    TrainingPanel.-seen { display: block; }
    TrainingPanel #training-summary { height: 1; }
    TrainingPanel Sparkline { height: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.progress = TrainingProgress()
        self.border_title = "training"

    def compose(self) -> ComposeResult:
        yield Static(self.progress.summary(), id="training-summary", markup=False)
        yield Sparkline([], id="loss-sparkline")

    def feed_lines(self, lines: list[str]) -> bool:
        """Parse lines; redraw once if any was a metric line."""
        changed = False
        for line in lines:
            changed = self.progress.feed(line) or changed
        if changed:
            self.refresh_progress()
        return changed

    def reset(self) -> None:
        self.progress = TrainingProgress()
        self.border_subtitle = ""
        self.refresh_progress()

    def refresh_progress(self) -> None:
        self.set_class(self.progress.seen, "-seen")
        self.query_one("#training-summary", Static).update(self.progress.summary())
        self.query_one(Sparkline).data = list(self.progress.losses)
        loss = self.progress.losses
        if loss:
            self.border_subtitle = f"loss {min(loss):.4f} … {max(loss):.4f}"
