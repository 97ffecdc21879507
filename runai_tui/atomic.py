"""Atomic file writes: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO


@contextlib.contextmanager
def atomic_open(
    path: Path, *, errors: str = "strict", newline: str | None = None
) -> Iterator[TextIO]:
    """Open a temp file beside `path` for writing text; on success fsync it and rename it over
    `path`; on any error remove it and leave `path` untouched."""
    import tempfile  # lazy: not on the read-only headless paths (benchmarks/, issue 12)

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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


def atomic_write(path: Path, text: str) -> None:
    """Replace `path` with `text` atomically."""
    with atomic_open(path) as handle:
        handle.write(text)
