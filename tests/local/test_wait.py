"""`runai-tui wait` against real local-cluster jobs: one that completes, one that fails, one
deleted while waited on (the exit codes CI scripts read)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.local.conftest import gate_command, run_local, wait_phase

pytestmark = pytest.mark.slow  # jobs on the local cluster: real process groups

RUNAI_TUI = [sys.executable, "-m", "runai_tui.cli", "--backend", "local"]


def submit(name: str, command: list[str]) -> None:
    res = run_local("training", "pytorch", "submit", name, "--command", "--", *command)
    assert res.code == 0, res.err


def start_wait(*args: str) -> subprocess.Popen[str]:
    """`wait` running; returns once it has looked at the job and is waiting."""
    proc = subprocess.Popen(
        [*RUNAI_TUI, "wait", *args, "--interval", "0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert line.startswith(f"waiting for job {args[0]} (Running) to be "), line
    return proc


def test_wait_for_completed_and_done_on_a_job_that_completes(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    submit("wdone", gate_command(gate))
    wait_phase("wdone", "Running")
    completed = start_wait("wdone", "--for", "completed")
    done = start_wait("wdone", "--for", "done", "--json")
    gate.touch()
    out, _ = completed.communicate(timeout=60)
    assert completed.returncode == 0 and out.strip() == "job wdone is Completed"
    out, _ = done.communicate(timeout=60)
    assert done.returncode == 0 and json.loads(out)["outcome"] == "reached"


def test_wait_on_a_job_that_fails(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    submit("wcrash", ["sh", "-c", f'while [ ! -e "{gate}" ]; do sleep 0.05; done; exit 3'])
    wait_phase("wcrash", "Running")
    completed = start_wait("wcrash", "--for", "completed")
    done = start_wait("wcrash", "--for", "done", "--json")
    gate.touch()
    _, err = completed.communicate(timeout=60)
    assert completed.returncode == 1
    assert err.splitlines()[-1] == "error: job wcrash ended Failed, not completed"
    out, _ = done.communicate(timeout=60)  # done: it ended, however
    assert done.returncode == 0 and json.loads(out)["phase"] == "Failed"


def test_wait_on_a_job_deleted_meanwhile_exits_1(tmp_path: Path) -> None:
    submit("wdel", gate_command(tmp_path / "never"))
    wait_phase("wdel", "Running")
    proc = start_wait("wdel", "--for", "done", "--json")
    assert run_local("training", "pytorch", "delete", "wdel").code == 0
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, (out, err)
    assert json.loads(out)["outcome"] == "deleted"
