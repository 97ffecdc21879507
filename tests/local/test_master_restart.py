"""The master pod killed mid-run comes back, as the worker's does (test_recovery.py).

The c10d rendezvous store lives in the master pod's torchrun agent: killing that pod takes the
store with it. The worker's agent then fails (its store is gone; the entry script exits 200, a
retryable code), the master pod restarts and hosts a new store on the same port, the worker pod
restarts and joins it, and the trainer resumes from the newest checkpoint: the job completes
with at most a checkpoint interval of steps lost. One 2-pod job of the shipped retinanet-local
(ExitCode restart policy, backoff limit 3), ResNet-18 at 64 px, 16 steps, a checkpoint every 4,
and a third test of the time to target across the restart (--target-map 1: never reached, so
its record comes at the end)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.local.conftest import isolated_env

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
STEPS, EVERY = 16, 4
PROFILE = f"""\
extends: retinanet-local
job_name: mrs
args: [--dataset, synthetic, --synthetic-train-images, "100", --synthetic-val-images, "2",
       --model, retinanet_resnet18_fpn, --epochs, "1", --max-steps, "{STEPS}",
       --batch-size, "2", --min-size, "64", --max-size, "64", --workers, "0",
       --log-every, "1", --eval-every, "1", --checkpoint-every, "{EVERY}", --amp, none,
       --device, cpu, --comm-check, "off", --trainable-backbone-layers, "0",
       --target-map, "1", --output-dir, /data/runs/mrs]
"""
PHASE_SECONDS = 600.0  # only a hang reaches it: each wait polls for a state


def until(check: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + PHASE_SECONDS
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.5)


class Job:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.jobdir = Path(env["XDG_STATE_HOME"]) / "runai-tui/local/jobs/local/mrs"
        self.out = Path(env["XDG_DATA_HOME"]) / "runai-tui/local/pvc/project-001/runs/mrs"
        self.final: dict[str, Any] = {}
        self.killed_at = 0

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True,
                              timeout=120, env=self.env, cwd=REPO)  # fmt: skip

    def describe(self) -> dict[str, Any]:
        done = self.run("runai_local.cli", "training", "pytorch", "describe", "mrs", "-o",
                        "json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def records(self) -> list[dict[str, Any]]:
        path = self.out / "metrics.jsonl"
        if not path.exists():
            return []
        out = []
        for line in path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line being written
        return out

    def step(self) -> int:
        train = [r for r in self.records() if r["kind"] == "train"]
        return train[-1]["step"] if train else 0


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Job]:
    root = tmp_path_factory.mktemp("master-restart")
    env = isolated_env(root)
    (root / "xdg_config_home" / "runai-tui" / "profiles" / "mrs.yaml").write_text(PROFILE)
    j = Job(env)
    try:
        assert j.run("runai_tui.cli", "submit", "--profile", "mrs").returncode == 0
        until(lambda: j.step() >= EVERY + 2 and j.describe()["phase"] == "Running", "step 6")
        master = next(p for p in j.describe()["pods"] if p["name"] == "mrs-master-0")
        os.killpg(master["pid"], signal.SIGKILL)
        j.killed_at = j.step()  # read after the kill: no step ends without the master
        j.final = until(
            lambda: (d := j.describe())["phase"] in ("Completed", "Failed") and d, "the end"
        )
        yield j
    finally:
        j.run("runai_local.cli", "training", "pytorch", "delete", "mrs")


def test_the_job_completes_after_its_master_pod_is_killed(job: Job) -> None:
    final = job.final
    assert final["phase"] == "Completed", final["message"]
    restarts = {p["name"]: p["restartCount"] for p in final["pods"]}
    assert restarts["mrs-master-0"] >= 1, restarts
    kept = job.records()
    assert [r["step"] for r in kept if r["kind"] == "train"] == list(range(1, STEPS + 1))
    assert [r["step"] for r in kept if r["kind"] == "done"] == [STEPS]


def test_the_steps_lost_are_at_most_the_checkpoint_interval(job: Job) -> None:
    resumes = [r for r in job.records() if r["kind"] == "resume"]
    assert resumes, "the trainer never resumed"
    assert all(0 <= r["lost"] <= EVERY for r in resumes), resumes
    assert resumes[0]["step"] % EVERY == 0 and resumes[0]["step"] <= job.killed_at


def test_the_time_to_target_counts_the_attempt_the_kill_ended(job: Job) -> None:
    kept = job.records()
    (target,) = [r for r in kept if r["kind"] == "target"]
    # From the first attempt's start, before its first record, to the target's record: the
    # steps lost after the checkpoint and the restarts included.
    assert target["wall_time"] >= target["time"] - kept[0]["time"]
    assert target["gap_seconds"] > 0
