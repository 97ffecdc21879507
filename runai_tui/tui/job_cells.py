"""Cells a job is drawn with, shared by the jobs table and the describe screen: the phase in
its colour."""

from __future__ import annotations

from rich.text import Text

from runai_tui.shapes.models import Phase

PHASE_STYLES: dict[Phase, str] = {
    Phase.RUNNING: "bold green",
    Phase.COMPLETED: "cyan",
    Phase.FAILED: "bold red",
    Phase.DEGRADED: "bold dark_orange",
    Phase.PENDING: "yellow",
    Phase.CREATING: "yellow",
    Phase.INITIALIZING: "yellow",
    Phase.RESUMING: "yellow",
    Phase.UPDATING: "yellow",
    Phase.STOPPED: "grey50",
    Phase.STOPPING: "grey50",
    Phase.SUSPENDING: "grey50",
    Phase.DELETING: "magenta",
    Phase.TERMINATING: "magenta",
}


def status_text(phase: Phase, preemptions: int = 0) -> Text:
    """The phase in its colour; `(preempted Nx)` after it for a job that was preempted."""
    text = Text(phase.value, style=PHASE_STYLES.get(phase, ""))
    if preemptions:
        text.append(f" (preempted {preemptions}x)", style="dim")
    return text
