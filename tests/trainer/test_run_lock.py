"""One live run per output dir: the lock names the run, a second run refuses in one line, a
lock whose holder is gone is taken over and the run says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainer import run_lock
from trainer.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def write_lock(out: Path, pid: int, job: str = "other-job", job_id: str = "other-id") -> None:
    holder = {**run_lock.this_run(), "pid": pid, "pid_start": run_lock._start_ticks(pid)}
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


def test_a_holder_on_another_host_counts_while_its_heartbeat_is_fresh(tmp_path):
    holder = {"host": "elsewhere", "pid": 1, "job": "x"}
    assert run_lock.holder_alive(holder, age=5.0)
    assert not run_lock.holder_alive(holder, age=run_lock.STALE_SECONDS + 1)
