"""Atomic file writes for everything the trainer saves (checkpoints, dataset index, run.json,
synthetic images).

A reader, or a resume after a crash, sees the previous file or the complete new one, never half.
Runs live on a PVC shared with teammates of other uids, so a new file gets the mode a plain
`open(path, "wb")` would give it (0666 minus the umask, and the directory's default ACL) and a
replaced file keeps its mode; `tempfile.mkstemp` would make every file 0600. The same rule as
runai_tui/util/atomic.py, written again here because the trainer imports nothing from runai_tui.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from typing import BinaryIO


def _create_temp(path: str) -> tuple[int, str]:
    directory, name = os.path.split(os.path.abspath(path))
    for _attempt in range(100):
        tmp = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
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
        with contextlib.suppress(OSError):  # not ours to chmod: keep the umask's mode
            os.fchmod(fd, stat.S_IMODE(existing.st_mode))
        return fd, tmp
    raise FileExistsError(f"cannot create a temp file beside {path}")


def fsync_directory(directory: str) -> None:
    """Make a rename in `directory` durable (skipped where a directory cannot be fsynced)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_open(path: str) -> Iterator[BinaryIO]:
    """A binary handle on a temp file beside `path`; on success it is fsynced and renamed over
    `path` (and the directory fsynced, so the rename survives a power cut)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = _create_temp(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_directory(directory)


def write_text_atomic(path: str, text: str) -> None:
    with atomic_open(path) as handle:
        handle.write(text.encode("utf-8"))
