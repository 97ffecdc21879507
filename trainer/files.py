"""Atomic file writes: a reader, or a resume after a crash, sees the old file or the complete new
one, never half of either. Everything the trainer saves (checkpoints, dataset index, run.json,
shards, synthetic images) and everything runai-tui saves (profiles, caches, state) goes through it.

Files may live on a PVC shared by teammates with other uids, so the new file gets the mode a
plain `open(path, "w")` would give it: an existing file keeps its mode, a new one honours the
umask (and the directory's default ACL); `tempfile.mkstemp` would make every file 0600. The
directory is fsynced after the rename, so the rename itself survives a power cut.

One file for both: runai_tui/util/atomic.py is a link to it (the trainer imports nothing from
runai_tui, and runai-tui installs no trainer). Standard library only, and light to import (the
headless CLI loads it at start-up: no `secrets`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO, TextIO, cast

PathLike = str | os.PathLike[str]


def _create_temp(path: Path) -> tuple[int, Path]:
    """A new temp file beside `path`, created 0666 minus the umask (the kernel applies it), then
    given the mode of the file it will replace, when there is one."""
    for _attempt in range(100):
        tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
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


def fsync_directory(directory: PathLike) -> None:
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
def _replacing(
    path: PathLike,
    binary: bool,
    errors: str,
    newline: str | None,
    before_replace: Callable[[], None] | None = None,
) -> Iterator[IO[Any]]:
    """A handle on a temp file beside `path`; on success it is fsynced and renamed over `path`
    and the directory fsynced; on any error it is removed and `path` left untouched.
    `before_replace` runs just before the rename: what it raises leaves `path` as it was."""
    target = Path(os.path.abspath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temp(target)
    try:
        handle = (
            os.fdopen(fd, "wb")
            if binary
            else os.fdopen(fd, "w", encoding="utf-8", errors=errors, newline=newline)
        )
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if before_replace is not None:
            before_replace()
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_directory(target.parent)


@contextlib.contextmanager
def atomic_open(
    path: PathLike, *, errors: str = "strict", newline: str | None = None
) -> Iterator[TextIO]:
    """Write text (UTF-8) to `path` atomically: the handle's file replaces `path` on success."""
    with _replacing(path, False, errors, newline) as handle:
        yield cast("TextIO", handle)


@contextlib.contextmanager
def atomic_open_binary(
    path: PathLike, before_replace: Callable[[], None] | None = None
) -> Iterator[BinaryIO]:
    """Write bytes to `path` atomically: the handle's file replaces `path` on success (after
    `before_replace`, when given, has run without raising)."""
    with _replacing(path, True, "strict", None, before_replace) as handle:
        yield cast("BinaryIO", handle)


def atomic_write(path: PathLike, text: str) -> None:
    """Replace `path` with `text` atomically."""
    with atomic_open(path) as handle:
        handle.write(text)
