"""Fixtures for the local-cluster tests: run `runai-local` as a real subprocess, wait on state,
and make sure no job process outlives its test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runai_local import state

RUNAI_LOCAL = [sys.executable, "-m", "runai_local.cli"]
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


# A sweep of three short training jobs that differ in learning rate, shared by a module's tests
# (`lr_sweep`): one real trainer run each (ResNet-18 at 64 px, 2 steps, one pod: the grid, not
# DDP, is the subject), run once per module. It lives in its own XDG folders, so the per-test
# folders of `isolated_xdg` neither see nor stop it; its commands run with `LocalSweep.env`.
SWEEP_PROFILE = """\
extends: retinanet-local
job_name: sweep-tiny
no_master: true
args: [--dataset, synthetic, --synthetic-train-images, "8", --synthetic-val-images, "2",
       --model, retinanet_resnet18_fpn, --epochs, "1", --max-steps, "2", --batch-size, "2",
       --min-size, "64", --max-size, "64", --workers, "0", --log-every, "1", --eval-every, "1",
       --amp, none, --device, cpu, --output-dir, /data/runs/sweep-tiny]
"""
SWEEP_RATES = ("0.01", "0.02", "0.04")


@dataclass
class LocalSweep:
    """`runai-tui sweep --profile sweep-tiny --grid trainer.lr=0.01,0.02,0.04 --name lr` as it
    ran: its ID, the `--json` it printed (names, values, argv), what `wait --sweep ID --for
    completed --json` said, and the environment (XDG folders, local backend) its jobs live in.
    `other` is a job named like one of the sweep's (lr-4) that is not of it."""

    id: str
    submitted: dict[str, Any]
    waited: dict[str, Any]
    env: dict[str, str]
    other: str = "lr-4"

    @property
    def names(self) -> list[str]:
        return [job["name"] for job in self.submitted["jobs"]]

    def tui(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`runai-tui ARGS` in the sweep's environment."""
        return subprocess.run(
            [sys.executable, "-m", "runai_tui.cli", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env,
        )

    def data(self) -> Path:
        """The local PVC the jobs write their runs to."""
        return Path(self.env["XDG_DATA_HOME"]) / "runai-tui/local/pvc/project-001"


def isolated_env(root: Path, **extra: str) -> dict[str, str]:
    """This process's environment for a local cluster of its own under `root`: fresh XDG folders
    (the user's profile folder made), none of the caller's RUNAI_TUI_*/RUNAI_LOCAL_* settings,
    the local backend, and `extra` on top."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RUNAI_TUI_", "RUNAI_LOCAL_", "XDG_"))
    }
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        (root / var.lower()).mkdir()
        env[var] = str(root / var.lower())
    (root / "xdg_config_home" / "runai-tui" / "profiles").mkdir(parents=True)
    return env | {"RUNAI_TUI_BACKEND": "local"} | extra


@pytest.fixture(scope="module")
def lr_sweep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSweep]:
    root = tmp_path_factory.mktemp("sweep-xdg")
    env = isolated_env(root)
    profiles = root / "xdg_config_home" / "runai-tui" / "profiles"
    (profiles / "sweep-tiny.yaml").write_text(SWEEP_PROFILE)
    sweep = LocalSweep("", {}, {}, env)
    grid = f"trainer.lr={','.join(SWEEP_RATES)}"
    done = sweep.tui("sweep", "--profile", "sweep-tiny", "--grid", grid, "--name", "lr", "-y",
                     "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    sweep.submitted = json.loads(done.stdout)
    sweep.id = sweep.submitted["sweep"]
    try:
        other = run_local("training", "pytorch", "submit", sweep.other, "--command", "--",
                          "sh", "-c", "true", env=env)  # fmt: skip
        assert other.code == 0, other.err
        waited = sweep.tui("wait", "--sweep", sweep.id, "--for", "completed", "--interval",
                           "1", "--json", timeout=600)  # fmt: skip
        sweep.waited = json.loads(waited.stdout or "{}")
        yield sweep
    finally:
        sweep.tui("delete", "--sweep", sweep.id, "-y")
        run_local("training", "pytorch", "delete", sweep.other, env=env)
