"""The line prefilter: which lines of a block of log are worth a closer look.

A log is examined in blocks of bytes. The prefilter finds, at C speed, the candidate lines of a
block: those holding a needle of a line code (any case; codes.prefilter_needles), `NCCL_IB_` (a
setting), `NaN`/`Infinity` on a trainer record (a non-finite loss), and the lines where the
transport NCCL uses may change. Only those are decoded and matched (pod.py).

Two prefilters give the same candidates: `PythonPrefilter` (`bytes.find` passes) always works;
`HyperscanPrefilter` does it in one pass when the optional `hyperscan` package is installed (a
platform without its wheel uses the Python prefilter). Tests check that both agree.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Any, Protocol

from runai_tui.knowledge.diagnose.codes import prefilter_needles
from runai_tui.knowledge.diagnose.nccl_net import TRANSPORT_IB, final_transport
from runai_tui.knowledge.diagnose.records import B_RECORD, decode
from runai_tui.trainer_flags import records

NEEDLES = prefilter_needles()
B_NEEDLES = tuple(n.encode() for n in NEEDLES)
# The trainer's wire check record (knowledge/records/wire.py), as trainer/records.py prints it.
COMM_RECORD = records.kind_mark(records.COMM).encode()
CASED = (b"NCCL_IB_", COMM_RECORD)  # looked for in their case on every line
CASED_ON_RECORDS = (b"NaN", b"Infinity")  # ...on trainer record lines (a non-finite loss)
NEWLINES_SAMPLE = 1 << 14  # `newlines`: shorter spans are counted by `count`; its sample
MEMCHR_LINE_MIN = 32  # `newlines`: shorter lines on average are counted by `count`


class LinePrefilter(Protocol):
    name: str  # "python" or "hyperscan": what found the candidate lines

    def candidates(
        self, block: bytes, lo: int, hi: int, current: str | None
    ) -> tuple[list[int], bool]:
        """The end (newline) of every candidate line of block[lo:hi] (it ends with a newline),
        in order, and whether it holds a trainer record. `current`: the transport NCCL uses
        before the block (None: not known yet)."""
        ...


class PythonPrefilter:
    """The prefilter in `bytes.find` passes: one per needle over the lowered block."""

    name = "python"

    def candidates(
        self, block: bytes, lo: int, hi: int, current: str | None
    ) -> tuple[list[int], bool]:
        starts: set[int] = set()  # offsets where a candidate line starts
        lowered = block.lower()
        for needle in B_NEEDLES:
            line_starts(lowered, needle, starts, lo, hi)
        for needle in CASED:
            line_starts(block, needle, starts, lo, hi)
        has_record = block.find(B_RECORD, lo, hi) >= 0
        if has_record:
            for needle in CASED_ON_RECORDS:
                line_starts(block, needle, starts, lo, hi)
        network_starts(block, starts, lo, hi, current)
        return line_ends(block, starts, hi), has_record


class HyperscanPrefilter:
    """The prefilter in one Hyperscan pass over a block: it finds the end of every line that holds
    a needle (any case) or a cased needle, and notes whether the block has a `Using ` line or a
    channel line naming each transport (the network pass runs only on blocks where the
    transport may change). `NaN` and `Infinity` stay plain cased needles: an expression that
    wants them next to the record mark follows every record line to its end (the error storm's
    pass took 1.6x as long, the failed job's no less)."""

    name = "hyperscan"
    _LINES, _LINES_CASED, _USING, _VIA_IB, _VIA_SOCKET, _RECORD = range(6)

    def __init__(self, hyperscan: Any) -> None:
        def lines(needles: Iterable[str]) -> bytes:  # a needle, then the rest of its line
            return ("(?:" + "|".join(map(re.escape, needles)) + r")[^\n]*\n").encode()

        single = hyperscan.HS_FLAG_SINGLEMATCH
        cased = [n.decode() for n in (*CASED, *CASED_ON_RECORDS)]
        expressions = {
            self._LINES: (lines(NEEDLES), hyperscan.HS_FLAG_CASELESS),
            self._LINES_CASED: (lines(cased), 0),
            self._USING: (b"Using ", single),
            self._VIA_IB: (b"via NET/IB", single),
            self._VIA_SOCKET: (b"via NET/Socket", single),
            self._RECORD: (B_RECORD, single),
        }
        self._hyperscan = hyperscan
        self._db = hyperscan.Database()
        self._db.compile(
            expressions=[e for e, _ in expressions.values()],
            ids=list(expressions),
            elements=len(expressions),
            flags=[f for _, f in expressions.values()],
        )
        self._local = threading.local()  # a scratch space per thread (TUI workers)

    def candidates(
        self, block: bytes, lo: int, hi: int, current: str | None
    ) -> tuple[list[int], bool]:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hyperscan.Scratch(self._db)
        ends: list[int] = []
        seen: set[int] = set()

        def match(expression: int, _start: int, end: int, _flags: int, _context: object) -> None:
            if expression <= self._LINES_CASED:  # called for every candidate line: kept lean
                ends.append(end)
            else:
                seen.add(expression)

        self._db.scan(memoryview(block)[lo:hi], match_event_handler=match, scratch=scratch)
        has_record = self._RECORD in seen
        seen.discard(self._RECORD)
        if current is None:
            network = bool(seen)
        else:
            other = self._VIA_SOCKET if current == TRANSPORT_IB else self._VIA_IB
            network = self._USING in seen or other in seen
        found = {lo + end - 1 for end in ends}  # a line of both kinds comes twice
        if network:  # add the lines where the transport may change
            more: set[int] = set()
            network_starts(block, more, lo, hi, current)
            found.update(line_ends(block, more, hi))
        return sorted(found), has_record


_HYPERSCAN: list[HyperscanPrefilter | None] = []  # compiled once, when first needed


def pick_prefilter(hyperscan: bool = True) -> LinePrefilter:
    """The Hyperscan prefilter when `hyperscan` and the package is installed, else the Python one."""
    if hyperscan and not _HYPERSCAN:
        try:
            # optional dependency (no wheel on every platform); loaded on the first scan
            import hyperscan as package
        except ImportError:
            _HYPERSCAN.append(None)
        else:
            _HYPERSCAN.append(HyperscanPrefilter(package))
    fast = _HYPERSCAN[0] if hyperscan else None
    return fast if fast is not None else PythonPrefilter()


def hyperscan_installed() -> bool:
    return pick_prefilter().name == "hyperscan"


def newlines(block: bytes, lo: int, hi: int) -> int:
    """How many newlines block[lo:hi] holds. CPython's `bytes.count` of one byte tests every byte
    in a loop (as long as the whole Hyperscan pass over a block); `bytes.replace` finds them with
    memchr, several times faster on a log's lines, so most of a block is counted as what its
    replace removes (the few bytes outside the span by `count`). Lines shorter than
    `MEMCHR_LINE_MIN` bytes on average (a call of memchr each) are left to `count`."""
    span = hi - lo
    if span < NEWLINES_SAMPLE or len(block) - span > span // 8:
        return block.count(b"\n", lo, hi)
    if block.count(b"\n", lo, lo + NEWLINES_SAMPLE) > NEWLINES_SAMPLE // MEMCHR_LINE_MIN:
        return block.count(b"\n", lo, hi)
    whole = len(block) - len(block.replace(b"\n", b""))
    return whole - block.count(b"\n", 0, lo) - block.count(b"\n", hi)


def line_ends(block: bytes, starts: Iterable[int], hi: int) -> list[int]:
    """The ends (newlines) of the lines starting at `starts`, in order."""
    return [block.find(b"\n", start, hi) for start in sorted(starts)]


def line_starts(block: bytes, needle: bytes, out: set[int], lo: int, hi: int) -> None:
    """Add the start offset of every line of block[lo:hi] holding `needle` (one search a line)."""
    pos = block.find(needle, lo, hi)
    while pos >= 0:
        out.add(block.rfind(b"\n", lo, pos) + 1 or lo)
        end = block.find(b"\n", pos, hi)
        pos = block.find(needle, end, hi)


def network_starts(block: bytes, out: set[int], lo: int, hi: int, current: str | None) -> None:
    """Add the start of every line of block[lo:hi] where the transport NCCL uses may change,
    found without looking at every `via NET/` channel line: every line with `Using `
    (`NET/<x> : Using`, `Using network X`: a few per run), and only those channel lines naming
    another transport than the one in use (`current`, followed through the block)."""
    using: list[tuple[int, int, str | None]] = []  # (start, end, the final transport named)
    pos = block.find(b"Using ", lo, hi)
    while pos >= 0:
        start, end = block.rfind(b"\n", lo, pos) + 1 or lo, block.find(b"\n", pos, hi)
        out.add(start)
        using.append((start, end, final_transport(decode(block[start:end]))))
        pos = block.find(b"Using ", end, hi)
    pos = lo
    while True:
        marker = b"via NET/"
        if current is not None:
            marker += b"Socket" if current == TRANSPORT_IB else b"IB"
        event = next((u for u in using if u[0] >= pos and u[2] not in (None, current)), None)
        via = block.find(marker, pos, hi)
        if via >= 0:
            start, end = block.rfind(b"\n", lo, via) + 1 or lo, block.find(b"\n", via, hi)
            if event is None or event[0] > start:
                transport = final_transport(decode(block[start:end]))
                if transport is None or transport == current:
                    pos = end + 1
                    continue
                event = (start, end, transport)
        if event is None:
            return
        out.add(event[0])
        current, pos = event[2], event[1] + 1
