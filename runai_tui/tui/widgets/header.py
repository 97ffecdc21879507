"""StatusHeader: backend (LOCAL or the runai version), project, login state and last error."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


@dataclass(frozen=True)
class HeaderState:
    """What every screen's StatusHeader shows; the app holds one and copies it onto each."""

    backend: str
    project: str
    readonly: bool
    login: str = "checking login…"
    logged_in: bool | None = None  # None: not known yet
    refreshed: str = ""  # when the last refresh succeeded, HH:MM:SS
    error: str = ""  # the banner while the backend is failing


class StatusHeader(Widget):
    """One line at the top; a second line (the banner) appears while the backend is failing."""

    DEFAULT_CSS = """
    StatusHeader {
        height: auto;
        background: $panel;
        color: $text;
        padding: 0 1;
    }
    """

    backend: reactive[str] = reactive("")
    project: reactive[str] = reactive("")
    login: reactive[str] = reactive("checking login…")
    logged_in: reactive[bool | None] = reactive(None)
    readonly: reactive[bool] = reactive(False)
    refreshed: reactive[str] = reactive("")
    error: reactive[str] = reactive("")

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(" runai-tui ", style="bold reverse")
        text.append("  ")
        text.append(self.backend or "?", style="bold magenta")
        text.append("  project ", style="dim")
        text.append(self.project or "(default)", style="bold")
        text.append("  ")
        login_style = {True: "green", False: "bold red", None: "dim"}[self.logged_in]
        text.append(self.login, style=login_style)
        if self.readonly:
            text.append("  READ-ONLY", style="bold yellow")
        if self.refreshed:
            text.append(f"  refreshed {self.refreshed}", style="dim")
        if self.error:
            text.append("\n")
            text.append(f" ✖ {self.error}", style="bold white on dark_red")
        return text

    def show(self, state: HeaderState) -> None:
        self.backend = state.backend
        self.project = state.project
        self.login = state.login
        self.logged_in = state.logged_in
        self.readonly = state.readonly
        self.refreshed = state.refreshed
        self.error = state.error
