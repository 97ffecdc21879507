"""TEST-ONLY hooks, read from the environment by the project's tests (never a command-line flag,
never set by a profile): they make a real run misbehave on purpose.

RUNAI_TUI_TEST_HOOK_STALL="RANK:STEP:SECONDS"  rank RANK sleeps SECONDS before training step STEP
                                              (0-based), as a rank that hangs would
RUNAI_TUI_TEST_HOOK_DIST_TIMEOUT_SECONDS=N     the collective timeout in seconds (the trainer's
                                              --dist-timeout counts minutes)
RUNAI_TUI_TEST_HOOK_COMPILE_BACKEND=NAME       the torch.compile backend of --compile (tests use
                                              "eager": the wiring without minutes of codegen)
RUNAI_TUI_TEST_HOOK_CPUINFO=PATH               read the CPU's flags from PATH, not /proc/cpuinfo
                                              (--amp auto on a CPU without native bf16)
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

STALL_ENV = "RUNAI_TUI_TEST_HOOK_STALL"
TIMEOUT_ENV = "RUNAI_TUI_TEST_HOOK_DIST_TIMEOUT_SECONDS"
COMPILE_ENV = "RUNAI_TUI_TEST_HOOK_COMPILE_BACKEND"
CPUINFO_ENV = "RUNAI_TUI_TEST_HOOK_CPUINFO"


def compile_backend() -> str:
    return os.environ.get(COMPILE_ENV, "") or "inductor"


def cpuinfo(default: Path) -> Path:
    value = os.environ.get(CPUINFO_ENV, "")
    return Path(value) if value else default


def dist_timeout_seconds(minutes: int) -> float:
    value = os.environ.get(TIMEOUT_ENV, "")
    return float(value) if value else minutes * 60.0


@dataclass(frozen=True)
class Stall:
    """RUNAI_TUI_TEST_HOOK_STALL, read once at the run's start: rank `rank` sleeps `seconds`
    before training step `step` (0-based)."""

    rank: int
    step: int
    seconds: float

    def before_step(self, rank: int, step: int) -> None:
        if rank == self.rank and step == self.step:
            print(
                f"trainer: [rank {rank}] TEST HOOK: stalling {self.seconds:g} s before step {step}",
                flush=True,
            )
            time.sleep(self.seconds)


def stall() -> Stall | None:
    """The stall the environment asks for, None without one."""
    value = os.environ.get(STALL_ENV, "")
    if not value:
        return None
    rank, step, seconds = value.split(":")
    return Stall(int(rank), int(step), float(seconds))
