"""One watcher per job: a lock file per chain of attempts, in this machine's state directory
(`$XDG_STATE_HOME/runai-tui/watch/PROJECT/JOB.lock`), held with `flock` for the watcher's life
and holding its pid, host and start time, so a second watcher is refused in one line that names
the first. The kernel drops a `flock` when its holder dies, however it dies: a lock file whose
holder is gone is free, and the next watcher takes it over and says whose it was.

Nothing else lives here: what a watcher knows of a job (its attempts, their parents and numbers)
is in the jobs' submission records on the cluster; a watcher started again reads them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from runai_tui.shapes.errors import RuntimeFailure
from runai_tui.util import paths


def lock_path(project: str | None, job: str) -> Path:
    return paths.state_dir() / "watch" / (project or "default") / f"{job}.lock"


@dataclass
class WatchLock:
    """A held lock (`release` or the process's end frees it); `took_over` says whose stale lock
    it replaced ("" when none)."""

    path: Path
    fd: int
    took_over: str = ""

    def release(self) -> None:
        """Free it: emptied (never removed: a watcher that opened it meanwhile would then lock a
        file no one else sees), then closed."""
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)
        with contextlib.suppress(OSError):
            os.close(self.fd)


def _holder(text: str) -> str:
    try:
        doc = json.loads(text)
    except ValueError:
        return ""
    if not isinstance(doc, dict):
        return ""
    started = doc.get("started")
    when = time.strftime("%H:%M:%S", time.localtime(started)) if isinstance(started, float) else ""
    return f"pid {doc.get('pid')} on {doc.get('host')}" + (f" since {when}" if when else "")


def take(project: str | None, job: str) -> WatchLock:
    """Hold the watch lock of `job`'s chain; RuntimeFailure (one line) when a live watcher holds
    it."""
    path = lock_path(project, job)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    with os.fdopen(os.dup(fd), "r", encoding="utf-8", errors="replace") as seen:
        before = seen.read()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        holder = _holder(before) or "another watcher"
        raise RuntimeFailure(
            f"job {job} is already watched by {holder} ({path}): not watching it twice",
            "stop that watcher first, or watch another job",
        ) from None
    mine = {"pid": os.getpid(), "host": socket.gethostname(), "job": job, "started": time.time()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(mine).encode(), 0)
    return WatchLock(path, fd, _holder(before))
