"""When a job ends: the transitions the TUI announces, and `wait` (block until a job is running,
completed or done, for CI scripts).

Core: the client is a parameter (anything with `adescribe`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from runai_tui.shapes.errors import ErrorKind, RunaiError, UsageError
from runai_tui.shapes.models import Phase
from runai_tui.workflows.sources import Describes

ENDED = (Phase.COMPLETED, Phase.FAILED, Phase.STOPPED)
TARGETS = ("running", "completed", "done")


def ended(before: Phase | None, now: Phase) -> bool:
    """A job the list saw Running (or Degraded) is now Completed, Failed or Stopped."""
    return before in (Phase.RUNNING, Phase.DEGRADED) and now in ENDED


def end_message(name: str, phase: Phase) -> str:
    return f"job {name} {phase.value.lower()}"


@dataclass
class WaitResult:
    job: str
    target: str
    phase: str  # the last phase seen ("" when the job was deleted)
    outcome: str  # "reached", "failed", "deleted" or "timeout"
    waited: float  # seconds

    @property
    def exit_code(self) -> int:
        return {"reached": 0, "failed": 1, "deleted": 1}.get(self.outcome, 2)

    def to_dict(self) -> dict[str, object]:
        return {
            "job": self.job,
            "for": self.target,
            "phase": self.phase,
            "outcome": self.outcome,
            "waited": round(self.waited, 1),
        }

    def text(self) -> str:
        said = {
            "reached": f"job {self.job} is {self.phase}",
            "failed": f"job {self.job} ended {self.phase}, not {self.target}",
            "deleted": f"job {self.job} was deleted",
            "timeout": f"job {self.job} is still {self.phase} after {self.waited:.0f} s",
        }
        return said[self.outcome]


def judge(target: str, phase: Phase) -> str | None:
    """ "reached", "failed", or None (keep waiting). `running`: Running or already Completed;
    `completed`: Completed; `done`: ended however (Completed, Failed or Stopped)."""
    if target == "done":
        return "reached" if phase in ENDED else None
    if target == "running" and phase in (Phase.RUNNING, Phase.COMPLETED):
        return "reached"
    if target == "completed" and phase is Phase.COMPLETED:
        return "reached"
    return "failed" if phase in ENDED else None


async def wait_for(
    client: Describes,
    name: str,
    target: str,
    timeout: float | None,
    interval: float,
    sleep: Callable[[float], Awaitable[Any]] | None = None,
    on_waiting: Callable[[Phase], None] | None = None,
) -> WaitResult:
    """Poll describe every `interval` seconds until `target` is reached, the job fails or is
    deleted, or `timeout` passes. An unknown job at the first look is bad input (UsageError).
    `on_waiting` hears the phase once, when the first look shows there is something to wait for."""
    if target not in TARGETS:
        raise UsageError(f"--for {target!r}: not one of {', '.join(TARGETS)}", "e.g. --for done")
    if sleep is None:
        sleep = asyncio.sleep
    started = time.monotonic()
    phase = ""
    first = True
    while True:
        try:
            detail = await client.adescribe(name)
        except RunaiError as error:
            if error.kind is not ErrorKind.NOT_FOUND:
                raise
            if first:
                raise UsageError(f"unknown job {name!r}", "see the jobs: runai-tui list") from None
            return WaitResult(name, target, "", "deleted", time.monotonic() - started)
        phase = detail.job.phase.value
        outcome = judge(target, detail.job.phase)
        waited = time.monotonic() - started
        if outcome is not None:
            return WaitResult(name, target, phase, outcome, waited)
        if first and on_waiting is not None:
            on_waiting(detail.job.phase)
        first = False
        if timeout is not None and waited >= timeout:
            return WaitResult(name, target, phase, "timeout", waited)
        pause = interval if timeout is None else min(interval, max(timeout - waited, 0.0))
        await sleep(pause)
