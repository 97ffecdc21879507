"""PromptDialog: ask for one line of text (a file name, a profile name)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class PromptDialog(ModalScreen[str | None]):
    """Enter answers the text, escape answers None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    PromptDialog { align: center middle; }
    PromptDialog > Vertical {
        width: 80; height: auto; padding: 1 2;
        border: thick $accent; background: $surface;
    }
    PromptDialog #prompt-error { color: $error; height: auto; }
    """

    def __init__(self, question: str, value: str = "", title: str = "") -> None:
        super().__init__()
        self.question = question
        self.value = value
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = self.title_text
            yield Static(self.question, markup=False)
            yield Input(value=self.value, id="prompt-input")
            yield Static("", id="prompt-error", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            self.query_one("#prompt-error", Static).update("Enter a value or press escape.")
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)
