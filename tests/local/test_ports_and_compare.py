"""`runai-tui port-forward` and `runai-tui compare` against real local-cluster jobs.

The forward test runs a pod that serves TCP on an ephemeral port and talks to it through the
relay; the compare tests read jobs that log records or none. Two real trained runs compared as
jobs and as saved run directories: tests/local/test_sweep.py, on the sweep's runs.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runai_tui.knowledge.compare import NEVER_LOGGED
from tests.local.conftest import wait_until
from tests.local.test_through_runai_tui import RUNAI_TUI, tui

pytestmark = pytest.mark.slow  # jobs on the local cluster: real process groups

ECHO = textwrap.dedent(
    """
    import socket
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    print("PORT", server.getsockname()[1], flush=True)
    while True:
        conn, _ = server.accept()
        conn.sendall(b"echo:" + conn.recv(100))
        conn.close()
    """
)


def user_profile(name: str, text: str) -> None:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(text)


def start_forward(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    return subprocess.Popen(
        [*RUNAI_TUI, "port-forward", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_port_forward_carries_a_real_tcp_connection_to_the_pod(tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text(ECHO)
    user_profile("echo", f"job_name: echo\nimage: busybox:1\nworkers: 1\n"
                 f"command: [{sys.executable}, {script}]\n")  # fmt: skip
    assert tui("submit", "--profile", "echo").returncode == 0
    forward = None
    try:
        line = wait_until(lambda: tui("logs", "echo").stdout.strip(), "the pod's port")
        port = int(line.split()[1])
        forward = start_forward("echo", f"0:{port}")
        assert forward.stderr is not None and forward.stdout is not None
        said = forward.stderr.readline()  # the URL, once the relay listens
        assert said.startswith("http://127.0.0.1:") and f"-> echo (the master) port {port}" in said
        local = int(said.split(":")[2].split("/")[0])
        assert forward.stdout.readline() == f"Forwarding from 127.0.0.1:{local} -> {port}\n"
        with socket.create_connection(("127.0.0.1", local), timeout=30) as conn:
            conn.sendall(b"hello")
            assert conn.recv(100) == b"echo:hello"

        # The local port taken: one line, exit 1 (the machine's state, not the command, is wrong).
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            used = taken.getsockname()[1]
            res = tui("port-forward", "echo", f"{used}:{port}")
        assert res.returncode == 1
        err = res.stderr.splitlines()
        assert err[0] == f"error: local port {used} is already in use on this machine"
        assert err[1].startswith("hint: pick another local port: runai-tui port-forward echo ")
        assert len(err) == 2

        # LOCAL == REMOTE: the pod's port already is the local address; said, not relayed.
        same = start_forward("echo", str(port))
        try:
            assert same.stderr is not None and same.stdout is not None
            assert same.stderr.readline().startswith(f"http://127.0.0.1:{port}/ -> echo")
            assert same.stdout.readline() == f"Forwarding from 127.0.0.1:{port} -> {port}\n"
            assert "is already local" in same.stdout.readline()
        finally:
            same.kill()
            same.wait()
    finally:
        if forward is not None:
            forward.kill()
            forward.wait()
        tui("delete", "echo", "--yes")


def test_port_forward_bad_input_one_line_each() -> None:
    res = tui("port-forward", "nosuchjob", "6006")
    assert res.returncode == 1 and res.stderr.startswith("error: ")
    assert "nosuchjob" in res.stderr.splitlines()[0] and len(res.stderr.splitlines()) == 2
    res = tui("port-forward", "job", "80:http")
    assert res.returncode == 2
    assert res.stderr.splitlines()[0] == "error: port '80:http': expected [LOCAL:]REMOTE numbers"


RECORDS = "".join(
    f'echo \'{{"kind": "train", "step": {step}, "loss": 1.0, "images_per_sec": 8.0}}\'\n'
    for step in (1, 2)
)


def test_compare_shows_a_side_without_records_and_names_an_unknown_job(tmp_path: Path) -> None:
    script = tmp_path / "records.sh"
    # Many lines before the records: the log read of this live job is still going when the
    # missing job's describe fails (the reads that must then be cancelled in order).
    script.write_text("seq 1 50000\n" + RECORDS + "exec sleep 300\n")
    user_profile("records", f"job_name: records\nimage: busybox:1\nworkers: 1\n"
                 f"command: [sh, {script}]\n")  # fmt: skip
    user_profile("quiet", "job_name: quiet\nimage: busybox:1\nworkers: 1\n"
                 "command: [sh, -c, 'echo no records here; exec sleep 300']\n")  # fmt: skip
    assert tui("submit", "--profile", "records").returncode == 0
    assert tui("submit", "--profile", "quiet").returncode == 0
    try:
        wait_until(lambda: '"step": 2' in tui("logs", "records").stdout, "the records")
        wait_until(lambda: tui("logs", "quiet").stdout, "the quiet job's line")
        # A side that never logged a step is still compared: what both have, one line on what
        # it lacks (a job that failed before its first step is the one a resubmit replaces).
        res = tui("compare", "records", "quiet")
        assert res.returncode == 0, res.stderr
        out = res.stdout.splitlines()
        assert out[0] == "compare 2 runs: records, quiet"
        lacks = [line for line in out if " lacks trainer metric records" in line]
        assert lacks == [
            "quiet lacks trainer metric records (no metric lines in the master's log): it never "
            "logged a step"
        ]
        final = next(line for line in out if line.startswith("final loss "))
        assert final.split() == ["final", "loss", "1.0000", "-", "lower"]
        assert next(line for line in out if line.startswith("ended ")).endswith(NEVER_LOGGED)
        # A live job and a missing one: the missing one's error, once, and nothing else; the
        # live job's log read is cancelled and its stream closed before the command ends.
        for _ in range(5):  # the old failure came in about two runs of three
            res = tui("compare", "records", "nosuchjob", "--json")
            assert res.returncode == 1 and res.stdout == ""
            err = res.stderr.splitlines()
            assert [line for line in err if line.startswith("error:")] == [err[0]]
            assert "nosuchjob" in err[0] and all(
                line.startswith(("error:", "hint:")) for line in err
            )
            assert "Traceback" not in res.stderr and "aclose" not in res.stderr
        res = tui("compare", "records", str(tmp_path / "missing"), "--run-dir")
        assert res.returncode == 2 and res.stderr.startswith("error: records: no such run dir")
    finally:
        tui("delete", "quiet", "--yes")
        tui("delete", "records", "--yes")
