"""The watcher's bounds on the local cluster, for real (no trainer: pods are `sh`):

- the flood: `exp-7` fails as pod-lost (its worker SIGKILLed, as a node lost) while an unrelated
  `exp-7-r2` runs; `watch exp-7 --recover --backoff 0 --interval 1` once submitted a job a
  second, each saying "attempt 2 of 3". Now it submits attempt 2 once, under a name of its own,
  and its record names the chain; a watcher started again submits nothing more;
- one watcher per chain whatever the project's spelling: `-p local` and the default are one;
- a job a person suspends ends the watch with the reason.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.local.conftest import describe, wait_phase, wait_until
from tests.local.resubmit_loop import user_profile
from tests.local.test_through_runai_tui import RUNAI_TUI, tui

# Real jobs on the local cluster (several processes each): off `make check`'s quick loop.
pytestmark = pytest.mark.slow

PROFILE = """\
job_name: {name}
image: x:1
workers: 1
gpus: 0
restart_policy: Never
backoff_limit: 0
command: [sh, -c, "echo 'trainer: saved checkpoint /tmp/x/step-1.pt (every)'; exec sleep 600"]
"""


def _watch(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    return subprocess.Popen([*RUNAI_TUI, "watch", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip


def _record(name: str) -> dict[str, object]:
    return json.loads(describe(name)["spec"]["annotations"]["runai-tui.io/submission"])


def _names() -> list[str]:
    return sorted(j["name"] for j in json.loads(tui("list", "--json").stdout))


def _events(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


def _lose_the_worker(name: str) -> None:
    pods = wait_until(lambda: [p for p in describe(name)["pods"] if p.get("pid")], "its pods")
    worker = next(p for p in pods if p["name"] == f"{name}-worker-0")
    os.kill(worker["pid"], signal.SIGKILL)
    wait_phase(name, "Failed")


def test_a_taken_name_does_not_flood_the_cluster() -> None:
    for name in ("exp-7", "exp-7-r2"):
        user_profile(name, PROFILE.format(name=name))
        assert tui("submit", "--profile", name).returncode == 0
    _lose_the_worker("exp-7")
    watch = _watch("exp-7", "--recover", "--backoff", "0", "--max-attempts", "3",
                   "--interval", "1", "--json")  # fmt: skip
    try:
        # The new attempt running, and some ten looks after it: a flood would show by then.
        new = wait_until(lambda: [n for n in _names() if n.startswith("exp-7-r2-")], "attempt 2")
        wait_phase(new[0], "Running")
        time.sleep(10)
    finally:
        watch.terminate()
        out, err = watch.communicate(timeout=30)
    assert _names() == sorted(["exp-7", "exp-7-r2", new[0]]), out + err
    record = _record(new[0])
    assert (record["root"], record["parent"], record["attempt"]) == ("exp-7", "exp-7", 2)
    submitted = [e for e in _events(out) if e["event"] == "submitted"]
    assert len(submitted) == 1, out
    assert submitted[0]["text"] == (
        f"submitted {new[0]} (attempt 2 of 3), resuming from exp-7's checkpoints"
    )
    # A watcher started again reads the chain from the records: attempt 2, nothing submitted.
    again = _watch("exp-7", "--recover", "--backoff", "0", "--interval", "1", "--json")
    try:
        first = json.loads(again.stdout.readline())  # type: ignore[union-attr]
    finally:
        again.terminate()
        out, _ = again.communicate(timeout=30)
    assert [a["job"] for a in first["attempts"]] == ["exp-7", new[0]]
    assert not [e for e in _events(out) if e["event"] == "submitted"]
    # -p local is the project the default resolves to: the same lock, refused.
    holder = _watch("exp-7", "--interval", "1")
    try:
        wait_until(lambda: holder.stdout and holder.stdout.readline(), "the first watcher")
        refused = tui("-p", "local", "watch", "exp-7", "--recover")
    finally:
        holder.terminate()
        holder.communicate(timeout=30)
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"error: job exp-7 is already watched by pid {holder.pid} ")
    # A person suspends the attempt: the watch says so and ends.
    assert tui("suspend", new[0]).returncode == 0
    stopped = tui("watch", "exp-7", "--recover", "--interval", "1", timeout=60)
    assert stopped.returncode == 1
    assert stopped.stdout.splitlines()[-1].endswith(
        f"{new[0]} [attempt 2/3] stopped: {new[0]} is Stopped: stopped by a person, not "
        "submitted again"
    )
