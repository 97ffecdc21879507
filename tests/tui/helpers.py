"""Helpers for Pilot tests: poll a condition while the app runs (generous deadlines, so a slow
machine only makes a test slower, never failing), and an app that records its notifications."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.notifications import SeverityLevel
from textual.pilot import Pilot

from runai_tui.tui.app import RunaiTuiApp

DEADLINE_S = 30.0


async def wait_for(pilot: Pilot, condition: Callable[[], object], what: str = "") -> None:
    """Poll CONDITION; once it holds, let the app handle what it queued (a widget updated with
    the new data repaints on its next refresh), so that the screen shows what the data says."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await pilot.pause(0.05)
    await pilot.pause()


class RecordingApp(RunaiTuiApp):
    """The app, recording the message of every notification it is asked to show (toasts that
    expired or were never rendered included): Textual's public `notify`, overridden."""

    # Textual reads a relative CSS_PATH next to the module of the class: this one is elsewhere.
    CSS_PATH = str(Path(inspect.getfile(RunaiTuiApp)).with_name(str(RunaiTuiApp.CSS_PATH)))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.notes: list[str] = []

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        self.notes.append(message)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)


def notifications(app: RecordingApp) -> list[str]:
    """Messages of the notifications posted so far (rendered or not)."""
    return list(app.notes)
