"""A fault no restart cures ends the job at its first occurrence, on the real local cluster.

The shipped retinanet-local (ExitCode restart policy, backoff limit 3, the entry script's
torchrun --max-restarts 3) with GLOO_SOCKET_IFNAME naming an interface this machine lacks: each
pod's trainer says so before any process group, names the fault for the entry script and stops
its torchrun agent, which stops instead of restarting the worker group; the script exits 2 and
the cluster fails the job: no pod restart, no torchrun restart, the error once per pod. diagnose
then shows one finding naming both pods."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runai_local import state
from tests.local.conftest import describe, run_local, wait_until

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def tui(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runai_tui.cli", "--backend", "local", *argv],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          env=dict(os.environ))  # fmt: skip


def pod_log(name: str, pod: str, previous: bool = False) -> Path:
    jobdir = state.job_dir("local", name)
    return state.JobPaths(jobdir).pod_log(pod, previous=previous)


def test_a_missing_interface_fails_the_job_at_its_first_occurrence() -> None:
    submitted = tui("submit", "--profile", "retinanet-local", "--name", "ifnone",
                    "--set", "env.GLOO_SOCKET_IFNAME=nonexist0")  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    doc = wait_until(lambda: (d := describe("ifnone"))["phase"] in ("Completed", "Failed") and d,
                     "the job to end")  # fmt: skip
    assert doc["phase"] == "Failed"
    assert [p["restartCount"] for p in doc["pods"]] == [0, 0]
    reasons = [e["reason"] for e in doc["events"]]
    assert "BackOff" not in reasons
    assert "exited with code 2" in doc["message"]
    for pod in ("ifnone-master-0", "ifnone-worker-0"):
        assert not pod_log("ifnone", pod, previous=True).exists()
        text = pod_log("ifnone", pod).read_text()
        # Once: torchrun did not restart the worker group to meet it again.
        errors = [x for x in text.splitlines() if x.startswith("trainer: error: GLOO_SOCKET_")]
        assert len(errors) <= 1, text
        if "trainer: error:" in text:  # the other pod may be stopped before its trainer starts
            assert "permanent fault, not restarted (exit 2)" in text, text
            assert "Worker group FAILED" not in text and "will restart worker group" not in text

    res = tui("diagnose", "ifnone", "--json")
    found = [f for f in json.loads(res.stdout)["findings"] if f["code"] == "socket-ifname"]
    assert len(found) == 1, res.stdout


def test_bad_input_under_torchrun_is_not_restarted() -> None:
    """A trainer exit 2 (a --data-root that does not exist) ends the job the same way."""
    submitted = tui("submit", "--profile", "retinanet-local", "--name", "badin", "--set",
                    "args=[--data-root,/nonexistent/data,--device,cpu]")  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    doc = wait_until(lambda: (d := describe("badin"))["phase"] in ("Completed", "Failed") and d,
                     "the job to end")  # fmt: skip
    assert doc["phase"] == "Failed" and "exited with code 2" in doc["message"]
    assert [p["restartCount"] for p in doc["pods"]] == [0, 0]
    master = pod_log("badin", "badin-master-0").read_text()
    errors = [x for x in master.splitlines() if x.startswith("trainer: error: --data-root")]
    assert len(errors) <= 1, master
    assert run_local("training", "list").code == 0
