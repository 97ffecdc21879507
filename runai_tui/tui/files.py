"""Saving what the TUI shows (log lines) through the core's atomic writer."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from runai_tui.util.atomic import atomic_open


def write_lines_atomic(path: Path, lines: Iterable[str]) -> int:
    """Write `lines` newline-terminated to `path` atomically; return how many were written.
    Undecodable bytes that reached us as surrogates are written back unchanged."""
    count = 0
    with atomic_open(path.expanduser(), errors="surrogateescape", newline="") as out:
        for line in lines:
            out.write(line)
            out.write("\n")
            count += 1
    return count
