"""What each watcher on this machine shows of its chain, so that the jobs table and describe say
which jobs are watched, by whom, at which attempt and what comes next: beside the chain's lock
file (watch_lock.py, `PROJECT/ROOT.lock`) a `PROJECT/ROOT.state.json` written atomically by the
watcher ({"root", "job", "attempt", "max_attempts", "next", "pid", "by"}) and removed when it
ends. A state is read back only while its lock is held: a watcher that died leaves a file that
no one shows.

Reading costs a directory listing and a lock probe per watched chain: O(watched), never
O(jobs), and no subprocess.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from runai_tui.util.atomic import atomic_write
from runai_tui.workflows.watch_lock import lock_path

SUFFIX = ".state.json"


@dataclass(frozen=True)
class Shown:
    """One watched chain as the app shows it: its project and first job, the latest attempt
    (`job`, `attempt` of `max_attempts`), what comes next, and who watches it (`by`)."""

    project: str
    root: str
    job: str
    attempt: int
    max_attempts: int
    next: str
    by: str

    @property
    def cell(self) -> str:
        """The jobs table's WATCH cell: `2/3 on failure: …`."""
        return f"{self.attempt}/{self.max_attempts} {self.next}"

    @property
    def line(self) -> str:
        """Describe's line."""
        return (f"Watched by {self.by}: attempt {self.attempt} of {self.max_attempts} "
                f"({self.job}); next: {self.next}")  # fmt: skip


def state_path(project: str | None, root: str) -> Path:
    lock = lock_path(project, root)
    return lock.with_name(lock.name.removesuffix(".lock") + SUFFIX)


def writer(project: str | None, root: str, by: str) -> Callable[[object], None]:
    """The function a watcher publishes its chain's state with (a WatchState's `to_dict`
    holder, or None once it ends: the file goes)."""
    path = state_path(project, root)

    def publish(state: object) -> None:
        if state is None:
            clear(project, root)
            return
        to_dict = getattr(state, "to_dict", None)
        doc = dict(to_dict()) if callable(to_dict) else {}
        doc |= {"pid": os.getpid(), "by": by}
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, json.dumps(doc))

    return publish


def clear(project: str | None, root: str) -> None:
    """The chain's state gone (its watcher ends, however it ends)."""
    with contextlib.suppress(OSError):
        state_path(project, root).unlink()


def held(lock: Path) -> bool:
    """Whether a live watcher holds `lock` (a shared lock is refused while it does)."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops the shared lock, when it was taken
    return False


def _shown(project: str, path: Path) -> Shown | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return Shown(project, str(doc["root"]), str(doc["job"]), int(doc["attempt"]),
                     int(doc["max_attempts"]), str(doc["next"]),
                     f"{doc.get('by', 'watch')} (pid {doc.get('pid')})")  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return None


def watched(base: Path) -> dict[str, Shown]:
    """Every chain a live watcher on this machine watches (`base`: the `watch` state folder),
    by its latest attempt's name and by its first job's."""
    found: dict[str, Shown] = {}
    try:
        projects = [p for p in base.iterdir() if p.is_dir()]
    except OSError:
        return found
    for folder in projects:
        for state in folder.glob(f"*{SUFFIX}"):
            lock = state.with_name(state.name.removesuffix(SUFFIX) + ".lock")
            if not held(lock):
                continue
            shown = _shown(folder.name, state)
            if shown is not None:
                found.setdefault(shown.root, shown)
                found[shown.job] = shown
    return found


def watch_folder() -> Path:
    """Where the locks and states live."""
    return lock_path(None, "x").parent.parent
