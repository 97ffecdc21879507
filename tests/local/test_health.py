"""`runai-tui diagnose JOB` and `runai-tui preflight JOB` on real local-cluster jobs: every pod's
log fetched through the client, the probe run in every pod through `exec` (no TTY)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.local.conftest import wait_until
from tests.local.test_through_runai_tui import jobs, tui

# The master listens on MASTER_PORT as torchrun's rendezvous would; the worker prints what a
# broken DataLoader and a hostile program print, then both wait.
PROFILE = """\
description: a master that listens like a rendezvous, a worker that waits
job_name: probe
image: busybox:1
workers: 1
env: {NCCL_SOCKET_IFNAME: lo, NCCL_DEBUG: INFO}
command:
  - sh
  - -c
  - |
    echo "host:1:1 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>"
    if [ "$RANK" = 0 ]; then
      exec python3 -c 'import os, socket, time; s = socket.create_server(("127.0.0.1", int(os.environ["MASTER_PORT"]))); time.sleep(300)'
    fi
    printf '\\033]0;owned\\007[bold red]RuntimeError: DataLoader worker (pid(s) 77) exited unexpectedly\\n'
    sleep 300
"""


@pytest.fixture
def probe_job() -> str:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "probe.yaml").write_text(PROFILE)
    res = tui("submit", "--profile", "probe")
    assert res.returncode == 0, res.stderr
    wait_until(lambda: jobs().get("probe", {}).get("status") == "Running", "probe running")
    return "probe"


@pytest.mark.slow
def test_preflight_and_diagnose_on_a_real_local_job(probe_job: str) -> None:
    res = tui("preflight", probe_job, "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert [p["pod"] for p in doc["pods"]] == ["probe-master-0", "probe-worker-0"]
    for pod in doc["pods"]:
        status = {i["code"]: i["status"] for i in pod["items"]}
        # The local cluster has no IB and no GPU: those items are skipped and say why.
        assert status == {
            "memlock": "skip",
            "shm": status["shm"],  # this machine's /dev/shm, whatever its size
            "gpus": "skip",
            "rdma": "skip",
            "socket-ifname": "pass",
            "nccl-env": "pass",
            "master": "pass",
            "python": "pass",
            "torch": "pass",
            "gpu-health": "skip",  # no nvidia-smi here
            "gpu-xid": status["gpu-xid"],  # pass where dmesg is readable, else skip
        }
        reasons = {i["code"]: i["message"] for i in pod["items"]}
        assert "IB is not in use" in reasons["memlock"]
        assert reasons["nccl-env"] == "NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=lo"
        assert "answers" in reasons["master"]

    # One pod, and a check that fails: the exit code says so, the fix is printed.
    res = tui("preflight", probe_job, "--pod", "probe-worker-0")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("probe-worker-0\n") and "probe-master-0" not in res.stdout
    res = tui("--backend", "local", "submit", "--profile", "probe", "--name", "probe-bad",
              "--set", "env.NCCL_SOCKET_IFNAME=nosuchif0")  # fmt: skip
    assert res.returncode == 0, res.stderr
    wait_until(lambda: jobs().get("probe-bad", {}).get("status") == "Running", "probe-bad")
    res = tui("preflight", "probe-bad", "--pod", "probe-bad-master-0")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAIL  socket-ifname NCCL_SOCKET_IFNAME=nosuchif0 names no interface" in res.stdout
    assert "fix: check the Multus network annotation" in res.stdout
    # Both pods fail the same check the same way: one fault naming them, its fix given once.
    res = tui("preflight", "probe-bad")
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.stdout.count("FAIL  socket-ifname NCCL_SOCKET_IFNAME=nosuchif0") == 2  # each pod's
    assert "FAIL  socket-ifname probe-bad-master-0, probe-bad-worker-0\n" in res.stdout
    assert res.stdout.count("fix: check the Multus network annotation") == 1
    faults = json.loads(tui("preflight", "probe-bad", "--json").stdout)["faults"]
    assert [f["pods"] for f in faults if f["code"] == "socket-ifname"] == [
        ["probe-bad-master-0", "probe-bad-worker-0"]
    ]  # (shm too, on a machine whose /dev/shm is under 1 GiB)
    res = tui("preflight", "probe", "--pod", "nope")
    assert res.returncode == 1 and "error: job 'probe' has no pod 'nope'" in res.stderr

    # Diagnose reads both pods' logs concurrently; the hostile line is quoted inertly.
    res = tui("diagnose", probe_job, "--json")
    assert res.returncode == 1, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert doc["pods"] == [
        {"pod": "probe-master-0", "transport": "Socket", "device": "lo"},
        {"pod": "probe-worker-0", "transport": "Socket", "device": "lo"},
    ]
    [finding] = doc["findings"]
    assert (finding["code"], finding["pod"], finding["line"]) == (
        "dataloader-killed",
        "probe-worker-0",
        2,
    )
    assert finding["evidence"].startswith("\x1b]0;owned\x07[bold red]RuntimeError")
    res = tui("diagnose", probe_job, "--pod", "probe-master-0")
    assert res.returncode == 0 and "no problems found" in res.stdout
    res = tui("diagnose", probe_job)
    assert "\x1b" not in res.stdout and "^[]0;owned^G[bold red]RuntimeError" in res.stdout
