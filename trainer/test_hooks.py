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


def stall(rank: int, step: int) -> None:
    value = os.environ.get(STALL_ENV, "")
    if not value:
        return
    stall_rank, stall_step, seconds = value.split(":")
    if rank == int(stall_rank) and step == int(stall_step):
        print(
            f"trainer: [rank {rank}] TEST HOOK: stalling {seconds} s before step {step}", flush=True
        )
        time.sleep(float(seconds))
