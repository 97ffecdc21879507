"""GPU-hours that add up: the local cluster records every run of every pod's container (a
restart's and a preemption's earlier runs included), and `report` sums them, the time waiting
for slots left out. Shell pods with a GPU each (RUNAI_LOCAL_GPUS=2): the master fails once and
restarts (OnFailure), then a job of higher priority takes the slots, then both run to the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from tests.local.conftest import describe, run_local, wait_phase, wait_until

# Real jobs on the local cluster (several processes each): off `make check`'s quick loop.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def report() -> dict:
    done = subprocess.run([sys.executable, "-m", "runai_tui.cli", "--backend", "local", "report",
                           "--since", "1h", "--json"], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=dict(os.environ))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_every_container_run_is_recorded_and_report_sums_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNAI_LOCAL_GPUS", "2")
    gate, high_gate = tmp_path / "gate", tmp_path / "high-gate"
    once = tmp_path / "failed-once"
    script = (f'if [ "$RUNAI_LOCAL_POD" = low-master-0 ] && [ ! -e "{once}" ]; then '
              f'touch "{once}"; exit 1; fi; trap "exit 143" TERM; '
              f'while [ ! -e "{gate}" ]; do sleep 0.05; done')  # fmt: skip
    res = run_local("training", "pytorch", "submit", "low", "--workers", "1", "-g", "1",
                    "--restart-policy", "OnFailure", "--backoff-limit", "3", "--command", "--",
                    "sh", "-c", script, env=dict(os.environ))  # fmt: skip
    assert res.code == 0, res.err
    wait_until(lambda: (d := describe("low"))["phase"] == "Running"
               and d["pods"][0]["restartCount"] == 1 and d["pods"][0]["pid"], "the restart")  # fmt: skip
    res = run_local("training", "pytorch", "submit", "high", "--workers", "0", "-g", "2",
                    "--priority", "high", "--command", "--", "sh", "-c",
                    f'while [ ! -e "{high_gate}" ]; do sleep 0.05; done', env=dict(os.environ))  # fmt: skip
    assert res.code == 0, res.err
    wait_phase("high", "Running")
    assert describe("low")["phase"] == "Pending"
    high_gate.touch()
    wait_phase("high", "Completed")
    wait_until(lambda: all(p["pid"] for p in describe("low")["pods"]), "low to run again")
    gate.touch()
    low = wait_phase("low", "Completed", "Failed")
    assert low["phase"] == "Completed", low["message"]

    master, worker = low["pods"]
    assert [r["reason"] for r in master["runs"]] == ["Restarted", "Preempted", "Completed"]
    assert [r["exitCode"] for r in master["runs"]] == [1, 143, 0]
    assert [r["reason"] for r in worker["runs"]] == ["Preempted", "Completed"]
    every = [r for p in (master, worker) for r in p["runs"]]
    assert all(seconds(r["finishedAt"]) >= seconds(r["startedAt"]) for r in every)
    used = sum(seconds(r["finishedAt"]) - seconds(r["startedAt"]) for r in every)  # a GPU each
    first = min(seconds(r["startedAt"]) for r in every)
    last = max(seconds(r["finishedAt"]) for r in every)

    doc = report()
    row = next(r for r in doc["jobs"] if r["job"] == "low")
    assert row["gpu_hours_basis"] == ["container runs"]
    assert row["gpu_hours"] == pytest.approx(used / 3600, abs=1e-4)
    assert (row["restarts"], row["preemptions"]) == (1, 1)
    # The wait for slots (and the restart's back-off) is not GPU time: less than 2 GPUs over
    # the first start to the last end.
    assert used < 2 * (last - first)
    assert row["wall_seconds"] == pytest.approx(last - first, abs=0.1)
