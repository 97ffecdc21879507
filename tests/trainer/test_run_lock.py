"""One live run per output dir: the lock names the run, a second run refuses in one line, a
lock whose holder is gone is taken over and the run says so; a holder on another host is judged
by its heartbeat, never by comparing clocks; the lock's helper is one file for both packages."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from trainer import lock_holder, run_lock
from trainer.errors import ConfigError

pytestmark = pytest.mark.slow  # trains or runs the real model

REPO = Path(__file__).resolve().parents[2]


def write_lock(out: Path, pid: int, job: str = "other-job", job_id: str = "other-id") -> None:
    holder = {**run_lock.this_run(), "pid": pid, "pid_start": lock_holder.start_ticks(pid)}
    holder.update({"job": job, "job_id": job_id, "pod": f"{job}-master-0"})
    out.mkdir(parents=True, exist_ok=True)
    (out / run_lock.LOCK_FILE).write_text(json.dumps(holder))


@pytest.fixture
def live_holder():
    proc = subprocess.Popen(["sleep", "60"])
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.fixture
def gone_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_second_trainer_refuses_in_one_line_before_importing_torch(tmp_path, live_holder):
    out = tmp_path / "run"
    write_lock(out, live_holder)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "RUNAI_JOB_UUID")}
    proc = subprocess.run(
        [sys.executable, "-m", "trainer", "--dataset", "synthetic", "--output-dir", str(out)],
        capture_output=True, text=True, timeout=60, cwd=REPO, env=env,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"trainer: error: --output-dir {out} is in use by another live run")
    assert f"job other-job (pod other-job-master-0, pid {live_holder}," in lines[0]
    assert not (out / "metrics.jsonl").exists()
    assert json.loads((out / run_lock.LOCK_FILE).read_text())["pid"] == live_holder  # untouched


def test_a_stale_lock_is_taken_over_and_said(tmp_path, gone_pid, monkeypatch):
    monkeypatch.setenv("RUNAI_JOB_NAME", "mine")
    monkeypatch.setenv("RUNAI_JOB_UUID", "my-id")
    write_lock(tmp_path, gone_pid)
    said: list[str] = []
    lock = run_lock.acquire(str(tmp_path), said.append)
    assert said == [
        f"output dir lock: taking over {tmp_path / run_lock.LOCK_FILE} from job other-job "
        f"(pod other-job-master-0, pid {gone_pid}, started {said[0].split('started ')[1]}"
    ]
    assert said[0].endswith(": its holder is gone")
    holder = json.loads((tmp_path / run_lock.LOCK_FILE).read_text())
    assert (holder["job"], holder["job_id"], holder["pid"]) == ("mine", "my-id", os.getpid())
    lock.release()
    assert not (tmp_path / run_lock.LOCK_FILE).exists()


def test_the_same_job_restarted_takes_its_own_lock_and_others_are_refused(
    tmp_path, live_holder, monkeypatch
):
    monkeypatch.setenv("RUNAI_JOB_UUID", "job-a")
    write_lock(tmp_path, live_holder, job="a", job_id="job-a")  # this job's previous start
    said: list[str] = []
    run_lock.acquire(str(tmp_path), said.append).release()
    assert said[0].endswith(": this job's previous start")
    write_lock(tmp_path, live_holder, job="b", job_id="job-b")
    with pytest.raises(ConfigError, match="in use by another live run: job b"):
        run_lock.acquire(str(tmp_path), said.append)


# A holder in another process that says it runs on host `node-a` (so this process cannot check
# its pid and must go by its heartbeat), beating every 0.1 s; it holds until its stdin closes.
HOLDER = """
import socket, sys
socket.gethostname = lambda: "node-a"
from trainer import run_lock
run_lock.HEARTBEAT_SECONDS = 0.1
lock = run_lock.acquire(sys.argv[1], lambda m: None)
print(lock.me["token"], flush=True)
sys.stdin.read()
lock.release()
"""


@pytest.fixture
def holder_elsewhere(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    env = {k: v for k, v in os.environ.items() if k != "RUNAI_JOB_UUID"}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    assert proc.stdout is not None
    token = proc.stdout.readline().strip()
    assert token, "the holder did not take the lock"
    yield tmp_path, token
    proc.communicate("", timeout=30)


@pytest.mark.parametrize("skew", [-3600.0, 3600.0])
def test_a_skewed_mtime_never_makes_a_live_holder_elsewhere_stale(
    holder_elsewhere, skew: float, monkeypatch
) -> None:
    """An mtime an hour behind (the old rule: stale) or ahead: the holder's beat decides."""
    out, token = holder_elsewhere
    monkeypatch.setattr(run_lock, "STALE_SECONDS", 2.0)
    path = out / run_lock.LOCK_FILE
    said: list[str] = []
    when = time.time() + skew
    os.utime(path, (when, when))
    with pytest.raises(ConfigError, match="in use by another live run: .*its heartbeat moves"):
        run_lock.acquire(str(out), said.append)
    assert said and "watching its heartbeat for 2 s" in said[0]
    assert json.loads(path.read_text())["token"] == token  # untouched


@pytest.mark.parametrize("skew", [-3600.0, 3600.0])
def test_a_dead_holder_elsewhere_is_taken_over_whatever_its_mtime(tmp_path, skew, monkeypatch):
    """A holder on another host that beats no more: taken over after the window of this
    process's own clock, an mtime in the future (the old rule: fresh for an hour) or past."""
    monkeypatch.setenv("RUNAI_JOB_UUID", "mine")
    monkeypatch.setattr(run_lock, "STALE_SECONDS", 0.5)
    holder = {**lock_holder.new_holder(job="x", job_id="other", pod="x-0"), "host": "node-b"}
    path = tmp_path / run_lock.LOCK_FILE
    path.write_text(json.dumps(holder))
    when = time.time() + skew
    os.utime(path, (when, when))
    said: list[str] = []
    lock = run_lock.acquire(str(tmp_path), said.append)
    assert said[-1].endswith(": its heartbeat stood still for 0.5 s"), said
    assert json.loads(path.read_text())["token"] == lock.me["token"] != holder["token"]
    lock.release()


def test_a_shared_rendezvous_id_is_no_job_identity(holder_elsewhere, monkeypatch) -> None:
    """Two runs launched without a Run:ai job UUID (torchrun's default run id, the launch
    script's `retinanet`) are two jobs: the second does not take the first's lock."""
    out, _ = holder_elsewhere
    monkeypatch.delenv("RUNAI_JOB_UUID", raising=False)
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "retinanet")
    monkeypatch.setattr(run_lock, "STALE_SECONDS", 1.0)
    me = run_lock.this_run()
    assert me["job_id"] not in ("", "none", "retinanet") and str(os.getpid()) in str(me["job_id"])
    with pytest.raises(ConfigError, match="in use by another live run"):
        run_lock.acquire(str(out), lambda m: None)


def test_one_lock_helper_for_the_trainer_and_runai_tui() -> None:
    """runai_tui/util/lock_holder.py is a link to trainer/lock_holder.py (the trainer imports nothing
    from runai_tui): one holder format and one /proc reader, importing neither package."""
    from runai_tui.util import lock_holder as ours

    link = REPO / "runai_tui" / "util" / "lock_holder.py"
    assert link.is_symlink() and link.resolve() == Path(lock_holder.__file__).resolve()
    tree = ast.parse(Path(lock_holder.__file__).read_text())
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0] for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0
    }  # fmt: skip
    assert imported and not imported & {"trainer", "runai_tui", "torch"}, imported
    me = os.getpid()
    assert ours.start_ticks(me) == lock_holder.start_ticks(me) is not None
    assert set(ours.new_holder()) == set(lock_holder.new_holder())
