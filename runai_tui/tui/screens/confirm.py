"""ConfirmDialog: a yes/no question whose default (focused) answer is the safe one."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmDialog(ModalScreen[bool]):
    """Ask `question`; Cancel has the focus so a stray Enter never confirms."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    ConfirmDialog { align: center middle; }
    ConfirmDialog > Vertical {
        width: 64; height: auto; padding: 1 2;
        border: thick $error; background: $surface;
    }
    ConfirmDialog #confirm-question { margin-bottom: 1; }
    ConfirmDialog Horizontal { height: auto; align-horizontal: right; }
    ConfirmDialog Button { margin-left: 2; }
    """

    def __init__(
        self, question: str, confirm_label: str = "Delete", title: str = "Confirm"
    ) -> None:
        super().__init__()
        self.question = question
        self.confirm_label = confirm_label
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = self.title_text
            yield Static(self.question, id="confirm-question", markup=False)
            with Horizontal():
                yield Button("Cancel", id="cancel")
                yield Button(self.confirm_label, id="confirm", variant="error")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm")

    def action_cancel(self) -> None:
        self.dismiss(False)


class ChoiceDialog(ModalScreen[str]):
    """Show `message` and offer `choices` (id, label); escape answers `cancel_id`."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    ChoiceDialog { align: center middle; }
    ChoiceDialog > Vertical {
        width: 80; max-height: 80%; height: auto; padding: 1 2;
        border: thick $warning; background: $surface;
    }
    ChoiceDialog #choice-message { margin-bottom: 1; height: auto; max-height: 20; }
    ChoiceDialog Horizontal { height: auto; align-horizontal: right; }
    ChoiceDialog Button { margin-left: 2; }
    """

    def __init__(
        self, message: str, choices: list[tuple[str, str]], title: str, cancel_id: str
    ) -> None:
        super().__init__()
        self.message = message
        self.choices = choices
        self.title_text = title
        self.cancel_id = cancel_id

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = self.title_text
            yield Static(self.message, id="choice-message", markup=False)
            with Horizontal():
                for choice_id, label in self.choices:
                    yield Button(label, id=choice_id)

    def on_mount(self) -> None:
        self.query_one(f"#{self.choices[0][0]}", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id or self.cancel_id)

    def action_cancel(self) -> None:
        self.dismiss(self.cancel_id)
