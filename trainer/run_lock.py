"""One live run per output directory: OUTPUT_DIR/run.lock names the run that writes there.

A run is every rank of one job; its rank 0 holds the lock (the other ranks write nothing of
their own in the output dir). The lock is a JSON file naming the job, pod, pid, host and start
time, refreshed every HEARTBEAT_SECONDS while the run lives, and removed when it ends. A second
run refuses in one line while the holder lives. A holder is gone when its process is gone (same
host: the pid, checked with its start time so a reused pid does not count) or, seen from another
host (a PVC shared by pods on several nodes), when its heartbeat is older than STALE_SECONDS; a
lock of this same job (a worker group restarted in place, a pod restarted) is its own. A lock
whose holder is gone is taken over, and the run says so.

Imports nothing heavy: it runs before torch is imported, so a refused start costs no time.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone

from trainer.errors import ConfigError
from trainer.files import atomic_write

LOCK_FILE = "run.lock"
HEARTBEAT_SECONDS = 10.0
STALE_SECONDS = 60.0


def _start_ticks(pid: int) -> int | None:
    """PID's start time in clock ticks since boot (None when gone or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    return None if fields[0] in ("Z", "X") else int(fields[19])


def this_run() -> dict[str, object]:
    """What the lock says about this process's run."""
    pid = os.getpid()
    return {
        "job": os.environ.get("RUNAI_JOB_NAME", ""),
        "job_id": os.environ.get("RUNAI_JOB_UUID") or os.environ.get("TORCHELASTIC_RUN_ID", ""),
        "pod": os.environ.get("POD_NAME") or os.environ.get("HOSTNAME") or socket.gethostname(),
        "host": socket.gethostname(),
        "pid": pid,
        "pid_start": _start_ticks(pid),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def describe(holder: dict[str, object]) -> str:
    job = holder.get("job") or "a run outside any job"
    return (
        f"job {job} (pod {holder.get('pod')}, pid {holder.get('pid')}, "
        f"started {holder.get('started')})"
    )


def holder_alive(holder: dict[str, object], age: float) -> bool:
    """Whether the run the lock names still runs (age: seconds since its last heartbeat)."""
    pid = holder.get("pid")
    if holder.get("host") == socket.gethostname() and isinstance(pid, int):
        ticks = _start_ticks(pid)
        return ticks is not None and holder.get("pid_start") in (None, ticks)
    return age < STALE_SECONDS


def _read(path: str) -> tuple[dict[str, object] | None, float]:
    """The lock's holder (None when there is none or it cannot be read) and its age in s."""
    try:
        with open(path, encoding="utf-8") as f:
            age = time.time() - os.fstat(f.fileno()).st_mtime
            data = json.load(f)
    except (OSError, ValueError):
        return None, 0.0
    return (data if isinstance(data, dict) else None), age


@contextlib.contextmanager
def _guard(output_dir: str) -> Iterator[None]:
    """Two starts deciding at once decide one after the other."""
    fd = os.open(output_dir, os.O_RDONLY)  # flock on the directory itself: no file left behind
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class RunLock:
    """The lock this run holds; `release` at the end (a kill leaves it to be taken over)."""

    def __init__(self, path: str, me: dict[str, object]) -> None:
        self.path = path
        self.me = me
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name="run-lock", daemon=True)
        self._beat.start()

    def _mine(self) -> bool:
        holder, _ = _read(self.path)
        if holder is None:
            return False
        return holder.get("pid") == self.me["pid"] and holder.get("host") == self.me["host"]

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            with contextlib.suppress(OSError):
                os.utime(self.path)

    def release(self) -> None:
        self._stop.set()
        if self._mine():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


def acquire(output_dir: str, log: Callable[[str], None]) -> RunLock:
    """Hold OUTPUT_DIR's lock, or raise ConfigError (one line) while another live run holds it."""
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, LOCK_FILE)
    me = this_run()
    with _guard(output_dir):
        holder, age = _read(path)
        if holder is not None:
            same_job = bool(me["job_id"]) and holder.get("job_id") == me["job_id"]
            if not same_job and holder_alive(holder, age):
                raise ConfigError(
                    f"--output-dir {output_dir} is in use by another live run: "
                    f"{describe(holder)}; give this run its own --output-dir, or stop that run"
                )
            why = "this job's previous start" if same_job else "its holder is gone"
            log(f"output dir lock: taking over {path} from {describe(holder)}: {why}")
        atomic_write(path, json.dumps(me, sort_keys=True) + "\n")
    return RunLock(path, me)
