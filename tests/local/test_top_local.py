"""`runai-tui top` on real local-cluster pods: a python busy loop holding 256 MiB under a 280 Mi
limit, and torchrun's workers (in sessions of their own), are read from /proc through the same
exec probe as on a cluster."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from tests.local.conftest import run_local, wait_phase, wait_until
from tests.local.test_through_runai_tui import RUNAI_TUI, tui

pytestmark = pytest.mark.slow  # jobs on the local cluster: real process groups

# The busy loops below run a quarter of the time (20 ms of CPU, then 60 ms asleep): top reads
# them busy all the same, and the suite's other tests keep the rest of the core.
BUSY = """\
import time
while True:
    t = time.process_time()
    while time.process_time() - t < 0.02:
        pass
    time.sleep(0.06)
"""

HOG = (
    """\
b = bytearray(256 * 1024 * 1024)
for i in range(0, len(b), 4096):
    b[i] = 1
print("ready", flush=True)
"""
    + BUSY
)


def submit(name: str, *args: str) -> None:
    res = run_local("training", "pytorch", "submit", name, "--image", "x", "--workers", "0", *args)
    assert res.code == 0, res.err


def test_top_reads_a_real_busy_pod_and_warns_near_its_memory_limit() -> None:
    submit("hog", "--cpu-memory-limit", "280Mi", "--", "python3", "-c", HOG)
    wait_until(lambda: "ready" in run_local("training", "pytorch", "logs", "hog").out, "hog")

    res = tui("top", "hog", "--json")
    assert res.returncode == 0, res.stderr
    [pod] = json.loads(res.stdout)["pods"]
    assert pod["pod"] == "hog-master-0" and pod["source"] == "processes"
    assert 256 * 1024**2 <= pod["memory_bytes"] <= pod["memory_limit_bytes"] * 1.1
    assert pod["memory_limit_bytes"] == 280 * 1024**2
    assert pod["memory_fraction"] >= 0.9 and pod["memory_warning"]
    assert pod["cpu_cores"] > 0.05  # a busy loop, whatever share of the machine it gets
    assert (pod["gpu_tool"], pod["gpus"], pod["error"]) == (False, [], "")

    res = tui("top", "hog")
    assert res.returncode == 0, res.stderr
    assert "no GPU tool" in res.stdout and "% !" in res.stdout
    assert "warning: hog-master-0: memory at" in res.stdout
    # --watch --json: one document per reading, until Ctrl-C (exit 130, as any interrupted command)
    watch = subprocess.Popen(
        [*RUNAI_TUI, "top", "hog", "--watch", "--json", "--every", "0.1"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "RUNAI_TUI_BACKEND": "local"},
    )
    assert watch.stdout is not None
    readings = [json.loads(watch.stdout.readline()) for _ in range(2)]
    watch.send_signal(signal.SIGINT)
    assert watch.wait(timeout=60) == 130
    assert [r["pods"][0]["pod"] for r in readings] == ["hog-master-0", "hog-master-0"]
    res = tui("top", "hog", "--pod", "hog-worker-7")
    assert res.returncode == 1 and res.stderr.startswith(
        "error: job 'hog' has no pod 'hog-worker-7'"
    )


def test_top_watch_stops_on_ctrl_c_at_a_terminal() -> None:
    # Ctrl-C at a real terminal reaches the whole foreground group (the probes' children too):
    # the watch ends with 130, no traceback, at whatever point of a reading it lands.
    submit("tty", "--", "python3", "-c", "import time; print('ready', flush=True); time.sleep(300)")
    wait_until(lambda: "ready" in run_local("training", "pytorch", "logs", "tty").out, "tty")
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    for json_flag in ([], ["--json"]):
        child = pexpect.spawn(
            RUNAI_TUI[0], [*RUNAI_TUI[1:], "top", "tty", "--watch", "--every", "0.1", *json_flag],
            env=env, encoding="utf-8", timeout=60,
        )  # fmt: skip
        for _ in range(3):
            child.expect("tty-master-0")
        child.sendintr()
        child.expect(pexpect.EOF, timeout=30)
        child.close()
        assert child.exitstatus == 130, child.before
        assert "Traceback" not in child.before


# As torchrun starts its workers: a busy child in a session (and process group) of its own.
TORCHRUN_LIKE = f"""\
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", {BUSY!r}], start_new_session=True)
print("ready", flush=True)
time.sleep(300)
"""


def test_top_counts_workers_started_in_their_own_session() -> None:
    submit("elastic", "--", "python3", "-c", TORCHRUN_LIKE)
    wait_until(lambda: "ready" in run_local("training", "pytorch", "logs", "elastic").out, "ready")
    res = tui("top", "elastic", "--json")
    assert res.returncode == 0, res.stderr
    [pod] = json.loads(res.stdout)["pods"]
    assert pod["cpu_cores"] > 0.05  # the child's busy loop, though not in the pod's group
    assert pod["memory_limit_bytes"] is None


def test_top_reads_a_milli_byte_limit_as_kubernetes_does() -> None:
    # `512m` is 0.512 bytes to Kubernetes (lint warns: did you mean 512Mi?), which rounds it up
    # to a limit of 1 byte; a real node would not even start the pod. The local cluster reads it
    # the same way and top shows the pod far over its limit.
    submit("tiny", "--cpu-memory-limit", "512m", "--", "python3", "-c", TORCHRUN_LIKE)
    wait_until(lambda: "ready" in run_local("training", "pytorch", "logs", "tiny").out, "ready")
    res = tui("top", "tiny", "--json")
    assert res.returncode == 0, res.stderr
    [pod] = json.loads(res.stdout)["pods"]
    assert pod["memory_limit_bytes"] == 1
    assert pod["memory_bytes"] > 1 and pod["memory_warning"]


def test_top_refuses_ended_pods_and_unknown_jobs_in_one_line() -> None:
    submit("done", "--", "true")
    wait_phase("done", "Completed")
    res = tui("top", "done")
    assert res.returncode == 1 and res.stdout == ""
    error, hint = res.stderr.splitlines()
    assert error == (
        "error: job 'done' (Completed): no pod of it is running; resources are read in running pods"
    )
    assert hint.startswith("hint: ")
    res = tui("top", "nosuchjob")
    assert res.returncode == 1 and "could not be found" in res.stderr.splitlines()[0]
