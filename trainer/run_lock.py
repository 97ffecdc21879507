"""One live run per output directory: OUTPUT_DIR/run.lock names the run that writes there.

A run is every rank of one job; its rank 0 holds the lock (the other ranks write nothing of
their own in the output dir). The lock is a holder record (trainer/lock_holder.py: pid and its
start, pid namespace, host, start time, a fencing token, a heartbeat counter) naming the job and
pod too. While the run lives, its heartbeat raises the counter every HEARTBEAT_SECONDS; it is
removed when the run ends. A second run refuses in one line while the holder lives.

Whether the holder lives:
- where its pid can be checked (this host, this pid namespace): the pid with its start time;
- elsewhere (a PVC shared by pods on several nodes): whether its heartbeat moves while the
  taker watches the file for STALE_SECONDS of its own monotonic clock. No clock is compared
  with another: an mtime is the writer's or the file server's clock, and a skew of a minute
  made a live holder look dead.
A lock of this same job (RUNAI_JOB_UUID: a worker group restarted in place, a pod restarted) is
its own. A lock whose holder is gone is taken over, and the run says so.

Fencing: a taken-over run's heartbeat stops (it never writes over the new holder), and before
each checkpoint write (`check_held`, from trainer/checkpoint.py, before the write and before
its rename) the run checks that the file still holds its token; if not it stops with one line
(LockLost) instead of writing where another run now writes.

Imports nothing heavy: it runs before torch is imported, so a refused start costs no time.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator

from trainer import lock_holder
from trainer.errors import ConfigError, TrainerError
from trainer.files import atomic_write

LOCK_FILE = "run.lock"
HEARTBEAT_SECONDS = 10.0
# How long a taker watches a holder on another host for a heartbeat: several beats, and the
# minute an NFS client may cache what it last saw of a file.
STALE_SECONDS = 60.0
_TRIES = 3  # a lock that changes hands while we decide: decide again, this many times

Holder = dict[str, object]


class LockLost(TrainerError):
    """This run's lock was taken over (or removed): it stops before writing a checkpoint."""


def this_run() -> Holder:
    """What the lock says about this process's run. The job id is Run:ai's job UUID; without
    one it is this process's own (host, pid and start), never a value other runs share."""
    me = lock_holder.new_holder()
    own = f"{me['host']}/{me['pid']}/{me['pid_start']}"
    me.update(
        job=os.environ.get("RUNAI_JOB_NAME", ""),
        job_id=os.environ.get("RUNAI_JOB_UUID") or own,
        pod=os.environ.get("POD_NAME") or os.environ.get("HOSTNAME") or me["host"],
    )
    return me


def describe(holder: Holder) -> str:
    job = holder.get("job") or "a run outside any job"
    return (
        f"job {job} (pod {holder.get('pod')}, pid {holder.get('pid')}, "
        f"started {lock_holder.started_text(holder)})"
    )


def _read(path: str) -> Holder | None:
    """The lock's holder; None when there is none (or what is there is no holder)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _seen(path: str) -> tuple[object, ...] | None:
    """What changes when the holder beats: its token and counter, and (a holder of an older
    trainer only touches the file) the file's inode and mtime, compared only with themselves."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    holder = _read(path) or {}
    return (holder.get("token"), holder.get("beat"), st.st_ino, st.st_mtime_ns)


def beat_moves(path: str, window: float, first: tuple[object, ...] | None) -> bool:
    """Whether the lock file changes from FIRST (a heartbeat, a release, another taker) within
    WINDOW seconds of this process's monotonic clock."""
    deadline = time.monotonic() + window
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, HEARTBEAT_SECONDS / 4, 1.0))
        if _seen(path) != first:
            return True
    return False


def _guard(output_dir: str) -> contextlib.AbstractContextManager[int]:
    """Two starts deciding at once (and a heartbeat) take turns: a flock on the directory."""
    return lock_holder.flocked(output_dir)


class RunLock:
    """The lock this run holds; `release` at the end (a kill leaves it to be taken over)."""

    def __init__(self, output_dir: str, me: Holder) -> None:
        self.output_dir = output_dir
        self.path = os.path.join(output_dir, LOCK_FILE)
        self.me = me
        self.lost = ""  # why this run no longer holds the lock ("" while it does)
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name="run-lock", daemon=True)
        self._beat.start()

    def _still_mine(self) -> str:
        """ "" while the file holds this run's token; else who holds it now (or that none does)."""
        holder = None
        for _ in range(_TRIES):  # a read that fails once (a network filesystem) is not a loss
            holder = _read(self.path)
            if holder is not None:
                break
            time.sleep(0.05)
        if holder is None:
            return f"{self.path} was removed"
        if holder.get("token") != self.me["token"]:
            return f"{self.path} was taken over by {describe(holder)}"
        return ""

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            with contextlib.suppress(OSError), _guard(self.output_dir):
                self.lost = self.lost or self._still_mine()
                if self.lost:
                    return  # never writes over the lock of the run that took it
                beat = self.me["beat"]
                self.me["beat"] = (beat if isinstance(beat, int) else 0) + 1
                atomic_write(self.path, json.dumps(self.me, sort_keys=True) + "\n")

    def check(self) -> None:
        """LockLost (one line) unless this run still holds its output dir's lock."""
        self.lost = self.lost or self._still_mine()
        if self.lost:
            raise LockLost(
                f"--output-dir {self.output_dir} is no longer this run's: {self.lost}; "
                "stopping before the next checkpoint write (two runs must not write one dir)"
            )

    def release(self) -> None:
        self._stop.set()
        _HELD.pop(os.path.realpath(self.output_dir), None)
        with _guard(self.output_dir):
            if not self._still_mine():
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)


# The locks this process holds, by real output dir: the checkpoint writer checks them.
_HELD: dict[str, RunLock] = {}


def check_held(output_dir: str) -> None:
    """LockLost when this process took OUTPUT_DIR's lock and no longer holds it (nothing when it
    holds none there: a rank that does not write, a test)."""
    lock = _HELD.get(os.path.realpath(output_dir))
    if lock is not None:
        lock.check()


def _verdict(holder: Holder | None, me: Holder) -> str:
    """free, same-job, gone or alive: what to do with HOLDER's lock; watch when only its beat can
    tell."""
    if holder is None:
        return "free"
    if holder.get("job_id") == me["job_id"]:
        return "same-job"
    alive = lock_holder.alive_here(holder)
    if alive is None:
        return "watch"
    return "alive" if alive else "gone"


def _refuse(output_dir: str, holder: Holder, how: str = "") -> ConfigError:
    return ConfigError(
        f"--output-dir {output_dir} is in use by another live run: {describe(holder)}{how}; "
        "give this run its own --output-dir, or stop that run"
    )


@contextlib.contextmanager
def _deciding(output_dir: str, me: Holder) -> Iterator[tuple[Holder | None, str]]:
    with _guard(output_dir):
        holder = _read(os.path.join(output_dir, LOCK_FILE))
        yield holder, _verdict(holder, me)


def acquire(output_dir: str, log: Callable[[str], None]) -> RunLock:
    """Hold OUTPUT_DIR's lock, or raise ConfigError (one line) while another live run holds it.
    A holder on another host is watched for STALE_SECONDS first (the log says so)."""
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, LOCK_FILE)
    me = this_run()
    stale: tuple[object, ...] | None = None  # what a silent holder's file looked like
    for _ in range(_TRIES):
        with _deciding(output_dir, me) as (holder, verdict):
            if verdict == "watch" and stale is not None and _seen(path) == stale:
                verdict = "silent"
            if verdict == "alive":
                raise _refuse(output_dir, holder or {})
            if verdict != "watch":
                if holder is not None:
                    log(
                        f"output dir lock: taking over {path} from {describe(holder)}: {_why(verdict)}"
                    )
                atomic_write(path, json.dumps(me, sort_keys=True) + "\n")
                lock = _HELD[os.path.realpath(output_dir)] = RunLock(output_dir, me)
                return lock
        assert holder is not None
        log(f"output dir lock: {describe(holder)} holds {path} from host {holder.get('host')}; "
            f"watching its heartbeat for {STALE_SECONDS:g} s")  # fmt: skip
        before = _seen(path)
        if beat_moves(path, STALE_SECONDS, before):
            now = _read(path)
            if now is not None and now.get("token") == holder.get("token"):
                raise _refuse(output_dir, now, f", its heartbeat moves (host {now.get('host')})")
            continue  # released, or taken by another: decide again
        stale = before
    raise _refuse(output_dir, _read(path) or {}, ": the lock changed hands while this run waited")


def _why(verdict: str) -> str:
    if verdict == "same-job":
        return "this job's previous start"
    if verdict == "silent":
        return f"its heartbeat stood still for {STALE_SECONDS:g} s"
    return "its holder is gone"
