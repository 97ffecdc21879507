"""TEST-ONLY hooks, read from the environment by the project's tests (never a command-line flag,
never set by a profile): they make a real run misbehave on purpose.

RUNAI_TUI_TEST_HOOK_STALL="RANK:STEP:SECONDS"  rank RANK sleeps SECONDS before training step STEP
                                              (0-based), as a rank that hangs would
RUNAI_TUI_TEST_HOOK_DIST_TIMEOUT_SECONDS=N     the collective timeout in seconds (the trainer's
                                              --dist-timeout counts minutes)
RUNAI_TUI_TEST_HOOK_COMPILE_BACKEND=NAME       the torch.compile backend of --compile (tests use
                                              "eager": the wiring without minutes of codegen)
"""

from __future__ import annotations

import os
import time

STALL_ENV = "RUNAI_TUI_TEST_HOOK_STALL"
TIMEOUT_ENV = "RUNAI_TUI_TEST_HOOK_DIST_TIMEOUT_SECONDS"
COMPILE_ENV = "RUNAI_TUI_TEST_HOOK_COMPILE_BACKEND"


def compile_backend() -> str:
    return os.environ.get(COMPILE_ENV, "") or "inductor"


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
