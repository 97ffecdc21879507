"""How the TUI shows a failure: a toast with the error and its fix, markup-free. One function, so
the app and the dialogs it opens (which know only Textual's App) show failures the same way."""

from __future__ import annotations

from typing import Any

from textual.app import App

from runai_tui.shapes.errors import Failure, RunaiError
from runai_tui.util.text import literal


def notify_failure(app: App[Any], error: Failure) -> None:
    """Show `error` with its fix; the app keeps running."""
    title = "runai" if isinstance(error, RunaiError) else "error"
    if isinstance(error, RunaiError):
        title = f"runai: {error.kind.value}"
    message = literal(str(error))
    if error.hint:
        message += f"\nfix: {literal(error.hint)}"
    app.notify(message, title=title, severity="error", timeout=8, markup=False)
