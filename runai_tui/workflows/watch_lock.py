"""One watcher per job: a lock file per chain of attempts, in this machine's state directory
(`$XDG_STATE_HOME/runai-tui/watch/PROJECT/JOB.lock`), held with `flock` for the watcher's life
and holding its pid, host and start time, so a second watcher is refused in one line that names
the first. The kernel drops a `flock` when its holder dies, however it dies: a lock file whose
holder is gone is free, and the next watcher takes it over and says whose it was.

Nothing else lives here: what a watcher knows of a job (its attempts, their parents and numbers)
is in the jobs' submission records on the cluster; a watcher started again reads them.

The holder record and the flock are runai_tui/util/lock_holder.py's, the trainer's run lock's too.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from runai_tui.shapes.errors import RuntimeFailure
from runai_tui.util import lock_holder, paths


def lock_path(project: str | None, job: str) -> Path:
    """`project`: the project the cluster put the chain in (its jobs' own), never the spelling of
    a flag, so `-p p1` and a default that is p1 take the one lock."""
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
    return lock_holder.describe(doc) if isinstance(doc, dict) else ""


def take(project: str | None, job: str) -> WatchLock:
    """Hold the watch lock of `job`'s chain; RuntimeFailure (one line) when a live watcher holds
    it."""
    path = lock_path(project, job)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    with os.fdopen(os.dup(fd), "r", encoding="utf-8", errors="replace") as seen:
        before = seen.read()
    try:
        held = lock_holder.flock(fd, blocking=False)
    except OSError:  # cannot lock it: refused as if held, never watched twice
        held = False
    if not held:
        os.close(fd)
        holder = _holder(before) or "another watcher"
        raise RuntimeFailure(
            f"job {job} is already watched by {holder} ({path}): not watching it twice",
            "stop that watcher first, or watch another job",
        )
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(lock_holder.new_holder(job=job)).encode(), 0)
    return WatchLock(path, fd, _holder(before))
