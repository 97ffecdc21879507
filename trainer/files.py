"""Atomic file writes for everything rank 0 saves (checkpoints, dataset index, run.json).

A reader, or a resume after a crash, sees the previous file or the complete new one, never half.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import BinaryIO


@contextlib.contextmanager
def atomic_open(path: str) -> Iterator[BinaryIO]:
    """A binary handle on a temp file beside `path`; on success it is fsynced and renamed over
    `path` (and the directory fsynced, so the rename survives a power cut)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
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
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_text_atomic(path: str, text: str) -> None:
    with atomic_open(path) as handle:
        handle.write(text.encode("utf-8"))
