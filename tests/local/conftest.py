"""Fixtures for the local-cluster tests: run `runai-local` as a real subprocess, wait on state,
and make sure no job process outlives its test."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runai_tui.local import state

RUNAI_LOCAL = [sys.executable, "-m", "runai_tui.local.cli"]
WAIT_SECONDS = 60.0  # only a hang reaches this; every wait polls for a state, not a duration


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_local(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> Result:
    proc = subprocess.run(
        [*RUNAI_LOCAL, *args], capture_output=True, text=True, timeout=timeout, env=env
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def describe(name: str) -> dict[str, Any]:
    res = run_local("training", "pytorch", "describe", name, "-o", "json")
    assert res.code == 0, res.err
    return json.loads(res.out)


def wait_until(check: Callable[[], Any], what: str) -> Any:
    """Poll CHECK until it is true. Checks start new processes (runai-local, runai-tui: a tenth
    to a third of a CPU-second each), so the pause grows from 50 ms to half a second: a quick
    state is seen quickly, and a long wait does not keep a core busy."""
    deadline = time.monotonic() + WAIT_SECONDS
    pause = 0.05
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(pause)
        pause = min(pause * 1.5, 0.5)


def wait_phase(name: str, *phases: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        doc = describe(name)
        return doc if doc["phase"] in phases else None

    return wait_until(check, f"{name} to reach {phases}")


def pid_alive(pid: int) -> bool:
    return state.proc_start_ticks(pid) is not None


def gate_command(gate: Path, before: str = "") -> list[str]:
    """A pod command that runs BEFORE, then waits until GATE exists (the test controls the end)."""
    return ["sh", "-c", f'{before}\nwhile [ ! -e "{gate}" ]; do sleep 0.05; done']


@pytest.fixture(autouse=True)
def stop_jobs_after_test() -> Iterator[None]:
    """Tests that leave a job running get it stopped here (leak checks are in the tests)."""
    yield
    for jobdir in state.iter_job_dirs():
        state.kill_job_processes(jobdir, 2.0)
