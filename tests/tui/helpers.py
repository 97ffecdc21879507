"""Waiting helpers for Pilot tests: poll a condition while the app runs (generous deadlines, so
a slow machine only makes a test slower, never failing)."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.pilot import Pilot

DEADLINE_S = 30.0


async def wait_for(pilot: Pilot, condition: Callable[[], object], what: str = "") -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await pilot.pause(0.05)


def notifications(app) -> list[str]:
    """Messages of the notifications posted so far (rendered or not)."""
    return [note.message for note in app._notifications]
