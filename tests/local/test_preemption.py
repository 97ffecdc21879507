"""Preemption as Run:ai does it, on the local cluster's slots (max_pods): a job of higher
priority takes a lower, preemptible one's slots; the lower one gets SIGTERM and its grace
period, waits Pending (as `runai training list` shows a preempted training), and starts again
when the slots free up. A non-preemptible job is never taken. Shell pods: the trainer's part
(a checkpoint on SIGTERM, the resume) is in test_recovery.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.local.conftest import describe, run_local, wait_phase, wait_until

pytestmark = pytest.mark.slow  # jobs on the local cluster: real process groups


@pytest.fixture(autouse=True)
def two_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNAI_LOCAL_MAX_PODS", "2")


def submit(name: str, script: str, *flags: str) -> None:
    res = run_local("training", "pytorch", "submit", name, "--workers", "1", *flags,
                    "--command", "--", "sh", "-c", script, env=dict(os.environ))  # fmt: skip
    assert res.code == 0, res.err


def test_a_higher_priority_job_preempts_and_the_lower_one_comes_back(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    submit("low", 'trap "echo saved on TERM; exit 143" TERM; echo start; '
                  "while true; do sleep 0.1; done")  # fmt: skip
    wait_phase("low", "Running")
    submit("high", f'while [ ! -e "{gate}" ]; do sleep 0.1; done', "--priority", "high")
    wait_phase("high", "Running")
    low = describe("low")
    assert low["phase"] == "Pending" and low["preemptions"] == 1
    assert low["message"].startswith("preempted by higher-priority workload high (priority high)")
    listed = run_local("training", "list").out.splitlines()
    assert any(line.split()[:3] == ["low", "Training", "Pending"] for line in listed)
    reasons = [e["reason"] for e in low["events"]]
    assert "Preempted" in reasons
    # The preempted container got TERM and its grace period: its log is the previous one now.
    previous = run_local("training", "pytorch", "logs", "low", "--previous").out
    assert previous.splitlines()[-1] == "saved on TERM"
    gate.touch()
    wait_phase("high", "Completed")
    doc = wait_phase("low", "Running")
    assert doc["preemptions"] == 1 and "Preempted" in [e["reason"] for e in doc["events"]]
    wait_until(lambda: run_local("training", "pytorch", "logs", "low").out == "start\n", "low")


def test_a_non_preemptible_or_equal_job_is_never_taken(tmp_path: Path) -> None:
    submit("keep", "sleep 60", "--preemptibility", "non-preemptible")
    wait_phase("keep", "Running")
    submit("same", "true")  # the default priority: no preemption between equals either
    submit("urgent", "true", "--priority", "very-high")
    for name in ("same", "urgent"):
        wait_until(lambda n=name: describe(n)["events"][-1]["reason"] == "Unschedulable", name)
    assert describe("keep")["phase"] == "Running" and describe("keep")["preemptions"] == 0
    assert "Yes" not in [line.split()[4] for line in run_local("training", "list").out.splitlines()
                         if line.startswith("keep ")]  # fmt: skip


def test_gpus_are_slots_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNAI_LOCAL_MAX_PODS", "0")
    monkeypatch.setenv("RUNAI_LOCAL_GPUS", "2")
    gate = tmp_path / "gate"
    submit("lowgpu", "sleep 60", "-g", "1")  # a master and a worker, a GPU each
    wait_phase("lowgpu", "Running")
    res = run_local("training", "pytorch", "submit", "highgpu", "--workers", "0", "-g", "1",
                    "--priority", "very-high", "--command", "--", "sh", "-c",
                    f'while [ ! -e "{gate}" ]; do sleep 0.1; done', env=dict(os.environ))  # fmt: skip
    assert res.code == 0, res.err
    assert wait_phase("highgpu", "Running")["allocatedGPUs"] == 1
    low = describe("lowgpu")
    assert (low["phase"], low["allocatedGPUs"], low["preemptions"]) == ("Pending", 0, 1)
    gate.touch()
    assert wait_phase("lowgpu", "Running")["allocatedGPUs"] == 2
