"""Helpers every screen uses: typed access to the app, and the header."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar, cast

from textual.screen import Screen
from textual.worker import Worker

from runai_tui.tui.widgets.header import StatusHeader

if TYPE_CHECKING:
    from runai_tui.tui.app import RunaiTuiApp


Result = TypeVar("Result")  # what the screen's dismiss() hands back


class AppScreen(Screen[Result]):
    """A screen with the shared StatusHeader."""

    HELP_TITLE = "screen"

    @property
    def tui(self) -> RunaiTuiApp:
        return cast("RunaiTuiApp", self.app)

    def on_screen_resume(self) -> None:
        for header in self.query(StatusHeader):
            self.tui.apply_header(header)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.tui.on_worker_state_changed(event)

    def make_header(self) -> StatusHeader:
        header = StatusHeader()
        self.tui.apply_header(header)
        return header
