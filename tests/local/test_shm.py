"""A pod's own /dev/shm (runai_local/shm.py): a tmpfs of the size asked, seen only by the
pod, the command exec'd in place (same pid); a command that cannot start says so."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # jobs on the local cluster: real process groups

SHM = [sys.executable, "-m", "runai_local.shm"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SHM, *args], capture_output=True, text=True, timeout=60)


@pytest.fixture(autouse=True)
def namespaces() -> None:
    probe = run("1m", "--", "true")
    if probe.returncode != 0:
        pytest.skip(f"no unprivileged user namespaces here: {probe.stderr.strip()}")


def test_the_pod_sees_its_own_small_dev_shm_and_keeps_its_pid() -> None:
    res = run("2m", "--", "df", "-Pk", "/dev/shm")
    assert res.returncode == 0, res.stderr
    assert int(res.stdout.splitlines()[1].split()[1]) == 2048
    # exec in place: the supervisor's pid is the command's
    code = "import os; print(os.getpid())"
    proc = subprocess.Popen([*SHM, "1m", "--", sys.executable, "-c", code], stdout=subprocess.PIPE)
    out, _ = proc.communicate(timeout=60)
    assert int(out) == proc.pid
    full = run("64k", "--", "sh", "-c", "head -c 200000 /dev/zero > /dev/shm/x")
    assert full.returncode != 0 and "No space left on device" in full.stderr
    outside = subprocess.run(["df", "-Pk", "/dev/shm"], capture_output=True, text=True)
    assert int(outside.stdout.splitlines()[1].split()[1]) != 2048  # the machine's is untouched


def test_a_command_that_cannot_start_and_bad_usage_are_one_line() -> None:
    res = run("1m", "--", "/no/such/cmd")
    assert res.returncode == 126
    assert res.stderr == (
        'runai-local: failed to start container: exec: "/no/such/cmd": No such file or directory\n'
    )
    res = run("1m", "true")
    assert res.returncode == 126 and res.stderr.startswith("runai-local: usage:")
