"""From a failed job to a fixed resubmit, on the local cluster with real faults: the trainer fails
for a wrong GLOO_SOCKET_IFNAME or a small /dev/shm, `diagnose` proposes the remedy, `resubmit
--apply-fixes --yes` submits NAME-2 with it, and the new job completes. Bad input gets one line
and an exit code, and nothing is submitted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runai_tui import submission_record
from tests.local.conftest import describe, wait_phase
from tests.local.test_through_runai_tui import tui


def user_profile(name: str, text: str) -> None:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(text)


def jobs() -> list[str]:
    return [j["name"] for j in json.loads(tui("list", "--json").stdout)]


def test_bad_input_is_one_line_and_nothing_is_submitted() -> None:
    user_profile("quick", "job_name: quick\nimage: busybox:1\nworkers: 1\n"
                 "command: [sh, -c, 'echo fine']\n")  # fmt: skip
    assert tui("submit", "--profile", "quick").returncode == 0
    try:
        wait_phase("quick", "Completed")
        # The record travels with the job: next to it on the local cluster (spec.json).
        record = submission_record.decode(
            describe("quick")["spec"]["annotations"][submission_record.ANNOTATION]
        )
        assert record.profile == "quick" and record.data["workers"] == 1
        before = jobs()

        res = tui("resubmit", "nosuchjob", "--yes")
        assert res.returncode == 1 and len(res.stderr.splitlines()) == 2
        assert "nosuchjob" in res.stderr.splitlines()[0]

        res = tui("resubmit", "quick", "--name", "quick", "--yes")
        assert res.returncode == 1
        assert res.stderr.splitlines() == [
            "error: job name 'quick' is taken: nothing submitted",
            "hint: pick another --name, or leave it out for quick-2",
        ]

        res = tui("resubmit", "quick", "--apply-fixes", "--yes")
        assert res.returncode == 0, res.stderr
        assert res.stdout == (
            "no remedy to apply: diagnose finds nothing wrong with quick; nothing submitted\n"
        )

        res = tui("resubmit", "quick", "--set", "workers=two", "--yes")
        assert res.returncode == 2
        assert res.stderr.startswith("error: --set workers=two: workers: 'two': expected")

        res = tui("resubmit", "quick", "--json")
        assert res.returncode == 2 and res.stderr.startswith("error: --json goes with --dry-run")

        res = tui("resubmit", "quick")  # no terminal: asks for --yes
        assert res.returncode == 2
        assert res.stderr.startswith("error: refusing to submit 'quick-2' without a terminal")
        assert jobs() == before

        # --dry-run: every override shown, the argv difference, the new command line.
        res = tui("resubmit", "quick", "--set", "workers=2", "--dry-run")
        assert res.returncode == 0, res.stderr
        out = res.stdout.splitlines()
        assert out[0].startswith("resubmit quick as quick-2, from the recorded submission")
        assert "  --set workers=2  yours" in out
        assert any(line.startswith("≠ --workers") and line.endswith("2") for line in out)
        assert out[-1].startswith("runai training pytorch submit quick-2 ")
        assert submission_record.ANNOTATION not in res.stdout  # the record is not a difference
        res = tui("resubmit", "quick", "--set", "workers=2", "--dry-run", "--json")
        plan = json.loads(res.stdout)
        assert (plan["job"], plan["name"], plan["submitted"]) == ("quick", "quick-2", None)
        assert plan["overrides"] == [{"set": "workers=2", "from": "--set", "code": "", "why": ""}]
        assert {"key": "--workers", "before": "1", "after": "2"} in plan["diff"]
        assert plan["argv"][4] == "quick-2"
        assert jobs() == before
    finally:
        tui("delete", "quick", "--yes")


def tiny(name: str, extra_args: str = "", extra: str = "", steps: int = 2) -> str:
    return textwrap.dedent(
        f"""\
        extends: retinanet-local
        job_name: {name}
        {extra}
        args: [--dataset, synthetic, --synthetic-train-images, "{4 * steps}",
               --synthetic-val-images, "2",
               --model, retinanet_resnet18_fpn, --epochs, "1", --max-steps, "{steps}", --batch-size,
               "2", --min-size, "64", --max-size, "64", --log-every, "1",
               --output-dir, /data/runs/{name}{extra_args}]
        """
    )


def until(check: Callable[[], Any], what: str, seconds: float = 300) -> Any:
    """Poll for a trainer's state (slower than the local cluster's own: torch starts first)."""
    deadline = time.monotonic() + seconds
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(1)
    return value


def loop(job: str, code: str, remedy: str) -> None:
    """The job fails (ends Failed, or hangs Running with the error in its log); diagnose names
    `code` with `remedy`; resubmit applies it; NAME-2 ends Completed; compare lines the two up,
    the failed side saying what it lacks."""
    assert tui("submit", "--profile", job).returncode == 0

    def diagnosed() -> list[dict]:
        res = tui("diagnose", job, "--json")
        return [f for f in json.loads(res.stdout)["findings"] if f["code"] == code]

    found = until(diagnosed, f"diagnose to find {code} in {job}")
    assert found[0]["remedy"]["set"] == [remedy], found
    res = tui("resubmit", job, "--apply-fixes", "--yes")
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"  --set {remedy}  remedy of {code}" in res.stdout
    assert f"Submitted job {job}-2 on the LOCAL cluster." in res.stdout
    follow = tui("logs", f"{job}-2", "-f", timeout=600)
    assert '{"kind": "done"' in follow.stdout, follow.stdout[-2000:]
    assert wait_phase(f"{job}-2", "Completed", "Failed")["phase"] == "Completed"
    res = tui("compare", job, f"{job}-2", "--differences")
    assert res.returncode == 0, res.stderr
    assert "A lacks trainer metric records" in res.stdout


@pytest.mark.slow
def test_a_wrong_gloo_interface_is_diagnosed_and_fixed_by_a_resubmit() -> None:
    user_profile("ifbad", tiny("ifbad", extra="env: {GLOO_SOCKET_IFNAME: bad0}"))
    try:
        loop("ifbad", "socket-ifname", "env.GLOO_SOCKET_IFNAME=lo")
    finally:
        for name in ("ifbad", "ifbad-2"):
            tui("delete", name, "--yes")


@pytest.mark.slow
def test_a_small_dev_shm_is_diagnosed_and_fixed_by_a_resubmit() -> None:
    probe = subprocess.run(
        [sys.executable, "-m", "runai_tui.local.shm", "1m", "--", "true"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:  # a kernel without unprivileged user namespaces
        pytest.skip(f"no pod-own /dev/shm here: {probe.stderr.strip()}")
    # Pods without --large-shm get a /dev/shm of 64 KiB (a container's is 64 MiB): the trainer's
    # two DataLoader workers cannot pass a batch through it, and the trainer waits for it.
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "local.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("shm_size: 64Ki\n")
    user_profile("shmbad", tiny("shmbad", ', --workers, "2"', extra="large_shm: false"))
    try:
        loop("shmbad", "shm", "large_shm=true")
    finally:
        for name in ("shmbad", "shmbad-2"):
            tui("delete", name, "--yes")
        config.unlink()


@pytest.mark.slow
def test_a_rank_on_a_throttled_node_is_excluded_by_a_resubmit() -> None:
    # The machine stands for two nodes; local-1 gives its pods a quarter of the CPU. The worker
    # (rank 1) lands there and becomes a straggler; the remedy keeps the new job off local-1.
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "local.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("nodes: 2\nslow_nodes: {local-1: 0.25}\n")
    user_profile("slow", tiny("slow", steps=8))
    try:
        assert tui("submit", "--profile", "slow").returncode == 0
        nodes = {p["name"]: p["nodeName"] for p in describe("slow")["pods"]}
        assert nodes == {"slow-master-0": "local-0", "slow-worker-0": "local-1"}
        follow = tui("logs", "slow", "-f", timeout=600)
        assert '{"kind": "done"' in follow.stdout, follow.stdout[-2000:]
        res = tui("diagnose", "slow", "--json")
        found = [f for f in json.loads(res.stdout)["findings"] if f["code"] == "straggler"]
        assert found and found[0]["evidence"].startswith("rank 1:"), res.stdout
        assert found[0]["remedy"]["set"] == ["exclude_node=[local-1]"]
        res = tui("resubmit", "slow", "--apply-fixes", "--yes")
        assert res.returncode == 0, res.stdout + res.stderr
        assert "  --set exclude_node=[local-1]  remedy of straggler" in res.stdout
        assert any(line.startswith("≠ --exclude-node") for line in res.stdout.splitlines())
        nodes = {p["name"]: p["nodeName"] for p in describe("slow-2")["pods"]}
        assert nodes == {"slow-2-master-0": "local-0", "slow-2-worker-0": "local-0"}
        assert wait_phase("slow-2", "Completed", "Failed")["phase"] == "Completed"
    finally:
        for name in ("slow", "slow-2"):
            tui("delete", name, "--yes")
        config.unlink()
