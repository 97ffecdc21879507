"""Who holds a lock, and whether that holder still runs: one holder format, one reader of a
process's start in /proc and one flock for the project's three locks, the trainer's output-dir
lock (trainer/run_lock.py), the watcher's lock (runai_tui/workflows/watch_lock.py) and the local cluster's
state locks and process records (runai_local/state.py).

The standard library only, and nothing of either package: the trainer imports nothing from
runai_tui, so this file is trainer/lock_holder.py and runai_tui/util/lock_holder.py is a link to it,
as runai_tui/trainer_flags/fast_path.py is to trainer/fast_path.py (the wheel carries the
file; tests/trainer/test_run_lock.py checks the link).

A holder, as a lock file holds it in JSON::

    {"pid": 4242, "pid_start": 912345, "pid_ns": "pid:[4026531836]", "host": "node-3",
     "started": "2026-12-06T11:30:00+00:00", "token": "9f1c...", "beat": 0, ...}

- pid_start: the process's start in clock ticks since boot, so a reused pid does not count;
- pid_ns: its pid namespace: a pid means something only in its own (a container's pid 30 is
  not this container's pid 30, even on the same node and under the same host name);
- started: when it took the lock, UTC, for people to read (never compared with a clock);
- token: random and new at every taking: a holder that writes checks first that the file still
  holds its token (a fencing token), so a run whose lock was taken over stops writing;
- beat: a counter the holder raises while it lives: another host tells a live holder from a
  dead one by whether its beat changes over a window of its own monotonic clock, never by
  comparing its clock with the holder's (mtimes come from the writer's clock or the server's).

A lock adds its own fields (a job, a pod); readers ignore what they do not know.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import socket
from collections.abc import Iterator
from datetime import datetime, timezone


def start_ticks(pid: int) -> int | None:
    """PID's start time in clock ticks since boot (None when it is gone or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            raw = f.read()
    except OSError:
        return None
    # comm (field 2) may hold spaces and parentheses: the fields start after the last ')'.
    fields = raw[raw.rfind(")") + 2 :].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def process_alive(pid: object, ticks: object = None) -> bool:
    """Whether PID runs (not a zombie) and, when TICKS is given, started then (no pid reuse)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    now = start_ticks(pid)
    return now is not None and (ticks is None or now == ticks)


def pid_namespace() -> str:
    """This process's pid namespace (`pid:[4026531836]`); "" where /proc does not say."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def new_holder(**extra: object) -> dict[str, object]:
    """The holder record of this process, with a fresh token and beat 0, plus EXTRA."""
    pid = os.getpid()
    return {
        "pid": pid,
        "pid_start": start_ticks(pid),
        "pid_ns": pid_namespace(),
        "host": socket.gethostname(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "token": secrets.token_hex(16),
        "beat": 0,
        **extra,
    }


def here(holder: dict[str, object]) -> bool:
    """Whether HOLDER's pid can be checked from this process: the same host and, where both
    say, the same pid namespace."""
    if holder.get("host") != socket.gethostname():
        return False
    ns = holder.get("pid_ns")
    return not ns or not pid_namespace() or ns == pid_namespace()


def alive_here(holder: dict[str, object]) -> bool | None:
    """Whether HOLDER runs, where its pid says so (`here`): True or False; None elsewhere (then
    only its beat can tell)."""
    if not here(holder) or not isinstance(holder.get("pid"), int):
        return None
    return process_alive(holder["pid"], holder.get("pid_start"))


def started_text(holder: dict[str, object]) -> str:
    """When HOLDER took its lock, as written (an older watcher's epoch seconds in UTC)."""
    started = holder.get("started")
    if isinstance(started, (int, float)) and not isinstance(started, bool):
        with contextlib.suppress(OverflowError, OSError, ValueError):
            when = datetime.fromtimestamp(started, timezone.utc)
            return when.isoformat(timespec="seconds")
        return ""
    return started if isinstance(started, str) else ""


def describe(holder: dict[str, object]) -> str:
    """`pid 4242 on node-3 since 2026-12-06T11:30:00+00:00`."""
    since = started_text(holder)
    return f"pid {holder.get('pid')} on {holder.get('host')}" + (f" since {since}" if since else "")


def flock(fd: int, blocking: bool = True) -> bool:
    """An exclusive flock on FD: False when BLOCKING is off and another process holds it. The
    kernel drops it when its holder dies, however it dies."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def flocked(path: str) -> Iterator[int]:
    """Hold an exclusive flock on PATH, a directory or a file (created if needed), for the
    block; its fd is yielded."""
    if os.path.isdir(path):
        fd = os.open(path, os.O_RDONLY)  # a directory's own lock: no file left behind
    else:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        flock(fd)
        yield fd
    finally:
        os.close(fd)
