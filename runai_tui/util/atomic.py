"""Atomic file writes: a reader sees the old file or the new one, never half of either.

Files may live on a PVC shared by teammates with other uids, so the new file gets the mode a
plain `open(path, "w")` would give it: an existing file keeps its mode, a new one honours the
umask (and the directory's default ACL). `tempfile.mkstemp` would make every file 0600.
The directory is fsynced after the rename, so the rename itself survives a power cut.
(trainer/files.py is the trainer's copy of this rule: the trainer cannot import runai_tui.)
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO


def _create_temp(path: Path) -> tuple[int, Path]:
    """A new temp file beside `path`, created 0666 minus the umask (the kernel applies it), then
    given the mode of the file it will replace, when there is one."""
    for _attempt in range(100):
        tmp = path.with_name(
            f".{path.name}.{os.urandom(4).hex()}.tmp"
        )  # not `secrets`: start-up cost
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        try:
            existing = os.stat(path)
        except FileNotFoundError:
            return fd, tmp
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        with contextlib.suppress(OSError):  # a file we may not chmod keeps the umask's mode
            os.fchmod(fd, stat.S_IMODE(existing.st_mode))
        return fd, tmp
    raise FileExistsError(f"cannot create a temp file beside {path}")


def fsync_directory(directory: Path) -> None:
    """Make a rename in `directory` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):  # some filesystems refuse fsync on a directory
            os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_open(
    path: Path, *, errors: str = "strict", newline: str | None = None
) -> Iterator[TextIO]:
    """Open a temp file beside `path` for writing text; on success fsync it, rename it over
    `path` and fsync the directory; on any error remove it and leave `path` untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temp(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=errors, newline=newline) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_directory(path.parent)


def atomic_write(path: Path, text: str) -> None:
    """Replace `path` with `text` atomically."""
    with atomic_open(path) as handle:
        handle.write(text)
