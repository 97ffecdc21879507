"""The per-pod diagnoser: one pod's log in, its findings, counts, transport and records out.

A `PodDiagnoser` keeps only counters, the first few findings per code, the transport NCCL chose
and the newest trainer record lines, so a multi-gigabyte log is read with flat memory. It takes
a streamed log a line at a time (`feed`) or a saved log as bytes (`feed_bytes`, saved.py).
"""

from __future__ import annotations

import math
import re
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO

from runai_tui.knowledge import nccl_env
from runai_tui.knowledge.diagnose.codes import line_codes, make_finding
from runai_tui.knowledge.diagnose.nccl_net import (
    IB_SETTING,
    NET_INIT,
    TRANSPORT_IB,
    TRANSPORT_SOCKET,
    TRANSPORT_UNKNOWN,
    NetChoice,
    final_device,
    final_transport,
    init_devices,
)
from runai_tui.knowledge.diagnose.prefilter import COMM_RECORD, newlines, pick_prefilter
from runai_tui.knowledge.diagnose.records import (
    B_RECORD,
    RECORD_MARK,
    RECORDS_KEPT,
    TrainerRecords,
    decode,
    records_in,
)
from runai_tui.knowledge.findings import Finding
from runai_tui.knowledge.records.progress import parse_metric_line
from runai_tui.trainer_flags import records

FINDINGS_PER_CODE = 3  # findings kept per code per pod; the rest are only counted
LOG_HEADER = re.compile(r"[EWIF]\d{4} [\d:.]+ +\d+ \S+:\d+\] ")  # torch's glog-style prefix
MAX_LINE_READ = 1 << 20  # a saved log's "line" longer than this is read in pieces
LINE_BATCH_CHARS = 1 << 20  # streamed lines are examined in blocks of about this many characters
COMM_MARK = COMM_RECORD.decode()
SEEN_MAX, SEEN_LINE = 4096, 512  # recent short candidate lines whose codes are remembered


@dataclass(frozen=True)
class Limits:
    """How a diagnoser cuts its input (the defaults suit any log; tests make them tiny)."""

    batch_chars: int = LINE_BATCH_CHARS  # streamed lines are examined in blocks this big
    max_line: int = MAX_LINE_READ  # a longer line is taken in pieces of this size
    records_kept: int = RECORDS_KEPT  # the newest trainer record lines kept


DEFAULT_LIMITS = Limits()


@dataclass
class PodHealth:
    pod: str
    transport: str = TRANSPORT_UNKNOWN
    device: str = ""
    lines: int = 0

    def to_dict(self) -> dict[str, object]:
        return {"pod": self.pod, "transport": self.transport, "device": self.device}


class PodDiagnoser:
    """Reads one pod's log; memory stays bounded whatever the log's length.

    The log is examined in blocks of bytes (`feed_bytes`; `feed` gathers streamed lines into
    blocks): the line prefilter (prefilter.py) finds the candidate lines, and only those are decoded
    and matched (`_line`, the one per-line classification). Trainer records are not all decoded:
    the newest are kept (raw) and read at the end.

    `saved`: the log is a file read from its start (saved.py): the newest records are then not
    kept block by block but read again from the file at the end (`reread_records`).
    `hyperscan`: use the Hyperscan prefilter when installed (False: the pure-Python prefilter)."""

    def __init__(
        self,
        pod: str,
        *,
        saved: bool = False,
        hyperscan: bool = True,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.pod = pod
        self.limits = limits
        self.lines = 0
        self.findings: list[Finding] = []
        self.counts: dict[str, int] = {}
        self.ib_wanted: bool | None = None  # True: NCCL_IB_HCA / NCCL_IB_DISABLE=0 seen
        self.prefilter = pick_prefilter(hyperscan)
        self._batch: list[str] = []
        self._batch_chars = 0
        self._carry = b""  # feed_bytes: the start of a line the last piece cut
        self._full: set[str] = set()  # codes with all their FINDINGS_PER_CODE findings
        self._seen: dict[bytes, tuple[tuple[str, ...], bool]] = {}  # raw line -> _raw_codes
        # A saved log: per block (file offset, length, lines after it, has a record, newline
        # added); the newest records are read again at the end, not kept per block.
        self._index: list[tuple[int, int, int, bool, bool]] | None = [] if saved else None
        self._examined = 0  # file offset of the next byte to examine (a saved log)
        self.net_init: dict[str, NetChoice] = {}  # "IB"/"Socket" -> the first NET/<x> : Using line
        self._final: NetChoice | None = None  # the last "Using network X" / "via NET/X" line
        # Trainer records: the newest record lines (line number, raw text), decoded at the end.
        self._records: deque[tuple[int, bytes]] = deque(maxlen=limits.records_kept)
        self._records_dropped = False  # older record lines than those kept were seen
        self._summary: TrainerRecords | None = None
        # torchrun's log header ("E1126 13:24:46.301000 14196 .../api.py:1008] ") of its exit
        # barrier's error: the traceback lines that carry it are that error's, not findings.
        self._exit_barrier_header: str | None = None
        self.comm_record: tuple[int, str] | None = None  # the trainer's wire check: (line, text)

    # -- lines --------------------------------------------------------------------------------

    def feed(self, line: str) -> None:
        """Take one line (a streamed log). Lines are examined in blocks, so call `flush()` (or
        read a result: transport, records(), health()) before reading counts and findings."""
        self._batch.append(line)
        self._batch_chars += len(line) + 1
        if self._batch_chars >= self.limits.batch_chars:
            self.flush()

    def feed_all(self, lines: Iterable[str]) -> PodDiagnoser:
        for line in lines:
            self.feed(line)
        self.flush()
        return self

    def flush(self) -> None:
        batch, self._batch, self._batch_chars = self._batch, [], 0
        if batch:
            batch.append("")  # every line ends with a newline
            self._block("\n".join(batch).encode("utf-8", errors="replace"))

    def feed_bytes(self, data: bytes, final: bool = False) -> None:
        """Take the next piece of a log as bytes (any size, cut anywhere); `final` on the last
        piece (a last line without a newline is a line). Only whole lines are examined; a line
        still without its newline after `limits.max_line` bytes is taken in pieces of that size,
        each a line (as `read_log_lines` does), so memory stays flat."""
        max_line = self.limits.max_line
        lo = 0  # data[lo:] is what is left to examine
        if self._carry:  # the line the last piece cut: its end is this piece's first newline
            first_end = data.find(b"\n") + 1
            if first_end:
                self._block(self._carry + data[:first_end])
                lo = first_end
            else:
                data = self._carry + data
            self._carry = b""
        end = data.rfind(b"\n", lo) + 1 or lo  # the block examined in place: data[lo:end]
        if end > lo:
            self._block(data, lo, end)
        if final:
            if end < len(data):
                self._block(data[end:] + b"\n", added_newline=True)
            return
        if end == 0 and len(data) >= max_line:  # a huge line: pieces, as read_log_lines
            end = len(data) - len(data) % max_line
            for piece in range(0, end, max_line):
                self._block(data[piece : piece + max_line] + b"\n", added_newline=True)
        self._carry = data[end:]

    def _block(
        self, block: bytes, lo: int = 0, hi: int | None = None, added_newline: bool = False
    ) -> None:
        """Examine the whole lines of block[lo:hi] (it ends with a newline, `added_newline` when
        that newline is not the log's: a last line, a piece of a huge line), in place."""
        hi = len(block) if hi is None else hi
        current = self._final.transport if self._final is not None else None
        ends, has_record = self.prefilter.candidates(block, lo, hi, current)
        self._examine(block, lo, hi, ends)
        if self._index is None:
            if has_record:
                keep = self.limits.records_kept
                self._add_records(*records_in(block, lo, hi, self.lines, keep))
        else:  # a saved log: its newest records are read again at the end (reread_records)
            length = hi - lo - added_newline
            self._index.append((self._examined, length, self.lines, has_record, added_newline))
            self._examined += length

    def _examine(self, block: bytes, lo: int, hi: int, ends: list[int]) -> None:
        """Count, classify and number the candidate lines ending at `ends`; count block[lo:hi]'s
        lines. Each distinct candidate text is classified once: a line whose codes all have
        their findings already is only counted (an error storm repeats its lines); the others
        are examined in order, numbered by counting newlines from the last numbered line."""
        if not ends:  # most blocks of a healthy log
            self.lines += newlines(block, lo, hi)
            return
        starts = [block.rfind(b"\n", lo, end) + 1 or lo for end in ends]
        lines = [block[start:end] for start, end in zip(starts, ends, strict=True)]
        counts, full = self.counts, self._full
        slow = set()
        for raw, times in Counter(lines).items():
            codes, other = self._raw_codes(raw)
            if not other and full.issuperset(codes):
                for code in codes:
                    counts[code] += times
            else:
                slow.add(raw)
        block_lines = newlines(block, lo, hi)
        number, counted = self.lines + 1, lo  # `number` is the line starting at `counted`
        for start, raw in zip(starts, lines, strict=True) if slow else ():
            if raw not in slow:
                continue
            codes, other = self._raw_codes(raw)
            if not other and full.issuperset(codes):  # its codes' findings filled up meanwhile
                for code in codes:
                    counts[code] += 1
                continue
            number += block.count(b"\n", counted, start)
            counted = start
            self._line(number, decode(raw), codes)
        self.lines += block_lines

    def _raw_codes(self, raw: bytes) -> tuple[tuple[str, ...], bool]:
        """A candidate line's codes, and whether `_line` has more to do with it than count them
        (the network, NCCL_IB_* settings, a record's non-finite loss). Logs repeat their lines,
        so the answers for recent short lines are kept."""
        seen = self._seen.get(raw)
        if seen is None:
            other = b"NET/" in raw or b"Using network" in raw or b"NCCL_IB_" in raw
            other = other or COMM_RECORD in raw
            if B_RECORD in raw and (b"NaN" in raw or b"Infinity" in raw):
                other = True
            seen = (line_codes(decode(raw)), other)
            if len(raw) <= SEEN_LINE:
                if len(self._seen) >= SEEN_MAX:
                    self._seen.clear()
                self._seen[raw] = seen
        return seen

    def _add_records(self, found: list[tuple[int, bytes]], more: bool) -> None:
        """Keep a block's newest record lines (`records_in`), after the older blocks'."""
        if found:
            if more or len(self._records) + len(found) > self.limits.records_kept:
                self._records_dropped = True
            self._records.extend(reversed(found))
            self._summary = None

    def reread_records(self, f: BinaryIO) -> None:
        """A saved log, once examined: its newest records, read again from the blocks that hold
        them, newest first (`f` is the log). Numbering records in every block as it passes costs
        a third of the time on a log whose records are far apart."""
        index, self._index = self._index or [], None
        keep = self.limits.records_kept
        picked: list[tuple[list[tuple[int, bytes]], bool]] = []
        total = 0
        for start, length, lines, has_record, added_newline in reversed(index):
            if not has_record:
                continue
            f.seek(start)
            block = f.read(length) + (b"\n" if added_newline else b"")
            found, more = records_in(block, 0, len(block), lines, keep)
            if not found:
                continue
            if total >= keep:  # an older block with records: they were dropped
                self._records_dropped = True
                break
            picked.append((found, more))
            total += len(found)
        for found, more in reversed(picked):  # oldest first, as when streamed
            self._add_records(found, more)

    def _line(self, number: int, line: str, codes: tuple[str, ...]) -> None:
        """One candidate line: its line codes, the network NCCL uses, the NCCL_IB_* settings, a
        trainer record with a non-finite loss."""
        if self._exit_barrier_header is not None and line.startswith(self._exit_barrier_header):
            codes = ()
        elif "exit-barrier" in codes:
            header = LOG_HEADER.match(line)
            self._exit_barrier_header = header.group(0) if header else None
            codes = ("exit-barrier",)
        for code in codes:
            self._add(code, number, line)
        if "NET/" in line or "Using network" in line:
            self._network(number, line)
        if "NCCL_IB_" in line:
            self._settings(line)
        if COMM_MARK in line:
            self.comm_record = (number, line)  # the newest wire check (knowledge/records/wire.py)
        if RECORD_MARK in line and ("NaN" in line or "Infinity" in line):
            record = parse_metric_line(line)
            loss = record.get("loss") if record is not None else None
            train = record is not None and record.get(records.KIND) == records.TRAIN
            if train and isinstance(loss, float) and not math.isfinite(loss):
                self._add("nan-loss", number, line)

    def _settings(self, line: str) -> None:
        """The NCCL_IB_* settings a line gives: do they ask for InfiniBand/RoCE?"""
        for key, value in IB_SETTING.findall(line):
            if key == "DISABLE":  # NCCL's echo is the integer it read; `K=V` is as written
                self.ib_wanted = not nccl_env.ib_disabled({"NCCL_IB_DISABLE": value.strip("'\"")})
            elif value and self.ib_wanted is None:
                self.ib_wanted = True

    def _add(self, code: str, number: int, line: str) -> None:
        count = self.counts.get(code, 0)
        self.counts[code] = count + 1
        if count < FINDINGS_PER_CODE:
            self.findings.append(make_finding(code, self.pod, number, line))
        if count + 1 >= FINDINGS_PER_CODE:
            self._full.add(code)

    def _network(self, number: int, line: str) -> None:
        """Follow the transport (see `transport`)."""
        transport = final_transport(line)
        if transport is not None:
            if self._final is None or self._final.transport != transport:
                init = self.net_init.get(transport)
                device = init.device if init else final_device(line)
                self._final = NetChoice(transport, device, number, line)
            return
        match = NET_INIT.search(line)
        if not match:
            return
        transport = TRANSPORT_IB if match.group(1) == "IB" else TRANSPORT_SOCKET
        if transport not in self.net_init:
            devices = init_devices(transport, match.group(2))
            self.net_init[transport] = NetChoice(transport, devices, number, line)
        final = self._final
        if final is not None and final.transport == transport and not final.device:
            final.device = self.net_init[transport].device

    # -- the results --------------------------------------------------------------------------

    def records(self) -> TrainerRecords:
        """What the newest kept record lines say (decoded once, when asked)."""
        self.flush()
        if self._summary is None:
            self._summary = TrainerRecords.of(
                self._records, first_is_start=not self._records_dropped
            )
        return self._summary

    def record_lines(self) -> list[tuple[int, bytes]]:
        """The newest kept trainer record lines, oldest first: (line number, raw line)."""
        self.flush()
        return list(self._records)

    @property
    def records_dropped(self) -> bool:
        """Older record lines than those kept were seen (the kept ones are not the first)."""
        return self._records_dropped

    @property
    def finished(self) -> bool:
        """The trainer printed its "done"/"stopped" record (and no train record after it)."""
        return self.records().finished

    @property
    def transport(self) -> NetChoice | None:
        """The transport NCCL finally uses: a `Using network X` / `via NET/X` line decides; else
        IB when NET/IB initialised (a bootstrap or fallback NET/Socket line does not count),
        else Socket when only NET/Socket did."""
        self.flush()
        if self._final is not None:
            return self._final
        return self.net_init.get(TRANSPORT_IB) or self.net_init.get(TRANSPORT_SOCKET)

    def usual_interval(self) -> float | None:
        return self.records().usual_interval()

    def health(self) -> PodHealth:
        net = self.transport  # flushes
        if net is None:
            return PodHealth(self.pod, lines=self.lines)
        return PodHealth(self.pod, net.transport, net.device, self.lines)
