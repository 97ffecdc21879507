"""HelpScreen: every key of the screen it was opened from, plus the global ones."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static


def screen_keys(screen: Screen[Any]) -> list[tuple[str, str]]:
    """(keys, description) for the screen's bindings and then the app's, without duplicates."""
    rows: list[tuple[str, str]] = []
    seen: set[str] = set()
    for owner in (screen, screen.app):
        for binding in owner.BINDINGS:
            if not isinstance(binding, Binding) or not binding.description:
                continue
            keys = binding.key_display or binding.key
            if binding.action in seen:
                continue
            seen.add(binding.action)
            rows.append((keys.replace(",", " / "), binding.description))
    return rows


class HelpScreen(ModalScreen[None]):
    """A table of keys for `for_screen`; escape, q or ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: 72; height: auto; max-height: 90%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    HelpScreen DataTable { height: auto; max-height: 30; }
    HelpScreen #help-hint { color: $text-muted; margin-top: 1; }
    """

    def __init__(self, for_screen: Screen[Any], title: str) -> None:
        super().__init__()
        self.rows = screen_keys(for_screen)
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = f"keys: {self.title_text}"
            table: DataTable[str] = DataTable(cursor_type="none", show_cursor=False)
            table.add_columns("KEY", "ACTION")
            for keys, description in self.rows:
                table.add_row(keys, description)
            yield table
            yield Static("ctrl+p opens the command palette with every action.", id="help-hint")

    def action_close(self) -> None:
        self.dismiss(None)
