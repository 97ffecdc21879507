"""The local cluster says why a job waits, as a cluster's scheduler would: jobs past `max_pods`
queue Pending until pods free, a claim mapped to a missing directory waits until it exists; and
`runai-tui diagnose` names the reason."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.local.conftest import describe, gate_command, run_local, wait_phase, wait_until
from tests.local.test_through_runai_tui import tui

pytestmark = pytest.mark.slow  # jobs on the local cluster: real process groups


def submit(name: str, *args: str, command: list[str]) -> None:
    res = run_local("training", "pytorch", "submit", name, "--image", "x", *args, "--", *command)
    assert res.code == 0, res.err


def waiting_because(name: str, phrase: str) -> dict:
    return wait_until(
        lambda: (
            (d := describe(name))["phase"] == "Pending"
            and any(phrase in e["message"] for e in d["events"])
            and d
        ),
        f"{name} pending with {phrase!r}",
    )


def pending_finding(name: str) -> dict:
    res = tui("diagnose", name, "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    [finding] = [f for f in json.loads(res.stdout)["findings"] if f["code"] == "pending"]
    return finding


def test_jobs_past_max_pods_queue_and_a_missing_pvc_waits(tmp_path: Path) -> None:
    data = tmp_path / "claim-dir"
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "local.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"max_pods: 2\npvcs: {{shared: {data}}}\n")
    gate = tmp_path / "gate"
    submit("first", "--workers", "1", command=gate_command(gate))
    wait_phase("first", "Running")
    submit("second", "--workers", "1", command=["true"])
    doc = waiting_because("second", "Too many pods")
    assert "runs at most 2 (max_pods in local.yaml)" in doc["message"]
    finding = pending_finding("second")
    assert finding["message"] == "the node runs as many pods as it may"
    assert "max_pods" in finding["fix"]

    gate.touch()  # first ends, its two pods free: second starts
    assert wait_phase("second", "Completed", "Failed")["phase"] == "Completed"

    claim = ["--workers", "0", "--existing-pvc", "claimname=shared,path=/data"]
    res = run_local("training", "pytorch", "submit", "third", "--image", "x", *claim, "--", "true")
    assert res.code == 0 and f"Warning: PVC shared: {data} does not exist" in res.err
    waiting_because("third", "unbound immediate PersistentVolumeClaims")
    assert pending_finding("third")["message"] == "a PVC is not bound"
    data.mkdir()  # the claim is bound now: third starts
    assert wait_phase("third", "Completed", "Failed")["phase"] == "Completed"


def test_a_job_excluding_the_local_node_waits_and_says_why() -> None:
    submit("shunned", "--workers", "0", "--exclude-node", "local", command=["true"])
    doc = waiting_because("shunned", "--exclude-node local excludes every node of the local")
    assert doc["spec"]["flags"]["exclude-node"] == ["local"]
    assert not any("exclude-node" in note for note in doc["notes"])  # honoured, not a no-op
    res = run_local("training", "pytorch", "delete", "shunned")
    assert res.code == 0, res.err
