"""Saved logs (`diagnose --log FILE`): read in blocks, in one process, never held whole."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from runai_tui.knowledge.diagnose.pod import DEFAULT_LIMITS, MAX_LINE_READ, Limits, PodDiagnoser
from runai_tui.knowledge.diagnose.report import Diagnosis, combine

# A saved log is read in blocks this big: a block, and the copy its newline count makes, stay in
# the cache between the passes over it (8 MiB blocks cost the failed-job figure about a tenth).
BLOCK_BYTES = 2 << 20


def read_log_lines(path: Path, max_line: int = MAX_LINE_READ) -> Iterator[str]:
    """A saved log, a line at a time, never more than `max_line` bytes held (a longer line
    comes in pieces). Raises OSError."""
    with path.open("rb") as f:
        while True:
            chunk = f.readline(max_line)
            if not chunk:
                return
            yield chunk.decode("utf-8", errors="replace").rstrip("\r\n")


def read_log_file(
    path: Path,
    pod: str | None = None,
    *,
    block_bytes: int = BLOCK_BYTES,
    hyperscan: bool = True,
    limits: Limits = DEFAULT_LIMITS,
) -> PodDiagnoser:
    """A saved log, read in blocks of `block_bytes`; the pod is named after the file (without
    its extension) unless `pod` is given. Raises OSError."""
    diagnoser = PodDiagnoser(
        path.stem if pod is None else pod, saved=True, hyperscan=hyperscan, limits=limits
    )
    with path.open("rb", buffering=0) as f:
        while block := f.read(block_bytes):
            diagnoser.feed_bytes(block)
        diagnoser.feed_bytes(b"", final=True)
        diagnoser.reread_records(f)
    return diagnoser


def diagnose_files(paths: Iterable[Path], now: float | None = None) -> Diagnosis:
    """`--log FILE...`: each file is one pod, named after the file without its extension."""
    return combine((read_log_file(p) for p in paths), running=False, now=now)
