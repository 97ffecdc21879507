"""Job diagnosis from pod logs: what went wrong (NCCL, PyTorch, the trainer) and what to change.

Core (no Textual, no Rich). A `PodDiagnoser` takes one pod's log a line at a time and keeps only
counters, the first few findings per code and the transport NCCL chose, so a multi-gigabyte log
is streamed with flat memory. `CODES` is the one table of what each finding means and how to fix
it; the CLI (`runai-tui diagnose`), the TUI's health panel and the README all read it.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import threading
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import repeat
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from runai_tui.errors import ErrorKind, RunaiError
from runai_tui.forks import forked_map
from runai_tui.knowledge import flight_recorder
from runai_tui.knowledge.progress import parse_metric_line
from runai_tui.models import JobDetail, Phase
from runai_tui.text import literal

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITY_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}

EVIDENCE_MAX = 300  # characters of an evidence line that are kept
FINDINGS_PER_CODE = 3  # findings kept per code per pod; the rest are only counted
MAX_LINE_READ = 1 << 20  # a saved log's "line" longer than this is read in pieces
DATA_STARVED_RATIO = 1 / 3  # data wait above this share of step time
STALL_FACTOR = 20  # "stalled": no record for this many usual record intervals...
STALL_MIN_SECONDS = 600.0  # ...and at least this long (an evaluation pauses records too)
MAX_CONCURRENT_PODS = 8  # `runai logs` processes at once for one job
INTERVALS_KEPT = 64  # recent record intervals kept for the usual interval (their median)

TRANSPORT_IB, TRANSPORT_SOCKET, TRANSPORT_UNKNOWN = "IB", "Socket", "unknown"


@dataclass(frozen=True)
class Code:
    """One kind of finding. `pattern` (with cheap `needles` tried first) finds it in a line;
    codes without a pattern are derived from the transport or the trainer's records."""

    code: str
    severity: str
    message: str
    fix: str
    example: str  # a line of evidence, as NCCL / PyTorch / the trainer print it
    pattern: re.Pattern[str] | None = None
    needles: tuple[str, ...] = ()


def _re(text: str) -> re.Pattern[str]:
    return re.compile(text, re.IGNORECASE)


CODES: dict[str, Code] = {
    c.code: c
    for c in (
        Code(
            "memlock",
            ERROR,
            "NCCL could not register memory for RDMA (ibv_reg_mr failed): the locked-memory "
            "limit (memlock) is too low, so IB fails or falls back to TCP",
            "make memlock unlimited on the nodes (CRI-O default_ulimits "
            '"memlock=-1:-1"), give the pod IPC_LOCK (capabilities: [IPC_LOCK]); check with '
            "`runai-tui preflight JOB`",
            "host-1:312:340 [0] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_reg_mr failed "
            "with error Cannot allocate memory",
            _re(r"\bibv_reg_mr\w*(?:\(\))? failed|Call to ibv_reg_mr\w* failed"),
            ("ibv_reg_mr",),
        ),
        Code(
            "tcp-fallback",
            WARNING,
            "InfiniBand/RoCE was asked for but NCCL uses sockets (TCP): all-reduce is far slower",
            "check NCCL_IB_HCA matches a device in /sys/class/infiniband, the RDMA resource "
            "(openshift.io/mlxrdma) and IPC_LOCK are granted, memlock is unlimited; "
            "`runai-tui preflight JOB` checks the pod",
            "host-1:312:312 [0] NCCL INFO NET/Socket : Using [0]net1:10.0.0.2<0>",
        ),
        Code(
            "nccl-timeout",
            ERROR,
            "a collective (all-reduce, broadcast...) timed out: a rank hung, died or the network "
            "between pods stalled",
            "find the rank that stopped first (other findings, the logs of every pod); check the "
            "transport and the network; raise the timeout only for long evaluation pauses "
            "(trainer --dist-timeout)",
            "[rank1]:[E1123 10:02:13.123 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=2144, OpType=ALLREDUCE, "
            "NumelIn=9461268, NumelOut=9461268, Timeout(ms)=1800000) ran for 1800087 "
            "milliseconds before timing out.",
            _re(
                r"Watchdog caught collective operation timeout|WorkNCCL\(.*\) ran for \d+ "
                r"milliseconds before timing out|ProcessGroupNCCL's watchdog got stuck"
            ),
            ("atchdog", "before timing out"),
        ),
        Code(
            "nccl-error",
            ERROR,
            "an NCCL call failed (system, remote or internal error): a peer died, the network "
            "dropped, or NCCL could not set up its transport",
            "read the NCCL WARN lines just above it and the other pods' first error (a rank that "
            "died makes its peers fail); NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET says more",
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for "
            "details), NCCL version 2.21.5",
            _re(
                r"NCCL error in: |\bnccl(?:System|Internal|Remote|InvalidUsage)Error\b|"
                r"unhandled (?:system|cuda) error|NET/IB : Got completion from peer .* status="
            ),
            ("error", "completion"),
        ),
        Code(
            "shm",
            ERROR,
            "a DataLoader worker or NCCL ran out of shared memory (/dev/shm)",
            "give the pod a large /dev/shm (profile large_shm: true, --large-shm), or lower "
            "the trainer's --workers / --prefetch-factor",
            "ERROR: Unexpected bus error encountered in worker. This might be caused by "
            "insufficient shared memory (shm).",
            _re(
                r"Unexpected bus error encountered in worker|insufficient shared memory|"
                r"killed by signal: Bus error|failed to extend /dev/shm|"
                r"unable to write to file </torch_\d+"
            ),
            ("bus error", "shared memory", "/dev/shm", "</torch_"),
        ),
        Code(
            "cuda-oom",
            ERROR,
            "the GPU ran out of memory",
            "lower --batch-size (keep the global batch with --grad-accum), use --amp bf16, "
            "or a smaller --max-size",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has "
            "a total capacity of 79.25 GiB of which 1.02 GiB is free.",
            _re(
                r"OutOfMemoryError: CUDA out of memory|CUDA out of memory\. Tried to allocate|"
                r"CUDA error: out of memory"
            ),
            ("out of memory",),
        ),
        Code(
            "rendezvous",
            ERROR,
            "a pod could not reach the master (rendezvous / TCP store): the workers cannot "
            "join the job",
            "check the master pod is running and MASTER_ADDR/MASTER_PORT resolve and answer "
            "from the workers (`runai-tui preflight JOB`); a NetworkPolicy or a wrong "
            "NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME also blocks it",
            "torch.distributed.DistNetworkError: The client socket has timed out after 1800s "
            "while trying to connect to (10.0.0.1, 29500).",
            _re(
                r"DistNetworkError|The client socket has timed out after \d+\S* while trying "
                r"to connect|RendezvousTimeoutError|RendezvousConnectionError|DistStoreError"
            ),
            ("error", "client socket has timed out", "Rendezvous"),
        ),
        Code(
            "dataloader-killed",
            ERROR,
            "a DataLoader worker process died (often the kernel's OOM killer: the pod's "
            "memory limit)",
            "raise the pod's memory limit (memory.limit), or lower --workers / --prefetch-factor",
            "RuntimeError: DataLoader worker (pid(s) 1234) exited unexpectedly",
            _re(
                r"DataLoader worker \(pids?(?:\(s\))? ?[\d, ]+\) (?:exited unexpectedly|"
                r"is killed by signal: (?!Bus error)\w)"
            ),
            ("DataLoader worker",),
        ),
        Code(
            "nan-loss",
            ERROR,
            "the loss became NaN or infinite: training diverged",
            "lower --lr (or raise --warmup-steps), use --clip-grad, or --amp bf16 instead "
            "of fp16; resume from the last good checkpoint",
            "trainer: error: [rank 0] non-finite loss nan at step 1342 (epoch 2: "
            "classification=nan, bbox_regression=0.41); lower --lr, use --clip-grad, or try "
            "--amp bf16 instead of fp16",
            _re(r"non-finite loss -?(?:nan|inf)"),
            ("non-finite loss",),
        ),
        Code(
            "trainer-error",
            ERROR,
            "the trainer refused its input (a bad argument, a missing file or directory) and "
            "stopped",
            "fix the trainer arguments in the profile's args; `runai-tui lint` checks some of them",
            "trainer: error: --dataset openimages needs --data-root DIR (see trainer/README.md)",
            # trainer/__main__.py prints `trainer: error: [rank N] <message>` at the line's start.
            _re(r"^\s*trainer: error: \S"),
            ("trainer: error:",),
        ),
        Code(
            "process-failed",
            WARNING,
            "a training process exited with an error (torchrun's ChildFailedError) and no other "
            "finding explains why",
            "read the lines just above it in this pod's log (the process's own error), and the "
            "other pods' first error; exit code -9 is usually the kernel's OOM killer (raise "
            "memory.limit)",
            "E1123 12:28:41.297000 719 torch/distributed/elastic/multiprocessing/api.py:1002] "
            "failed (exitcode: 2) local_rank: 0 (pid: 738) of binary: /usr/bin/python",
            _re(r"\bfailed \(exitcode: -?\d+\) local_rank"),
            ("(exitcode",),
        ),
        Code(
            "data-starved",
            WARNING,
            "the GPUs wait for data: data wait is more than a third of the step time",
            "raise the trainer's --workers (and --prefetch-factor), keep the dataset on fast "
            "storage, or give the pod more CPU",
            '{"kind": "train", "step": 40, "epoch": 0, "loss": 1.1, "lr": 0.01, '
            '"images_per_sec": 12.0, "data_time": 0.61, "step_time": 1.02, "time": 1795000000.0}',
        ),
        Code(
            "stalled",
            ERROR,
            "the job is Running but the trainer stopped reporting: it is probably hung",
            "look for the first error on every pod (nccl-timeout, rendezvous...), check the "
            "pods' transport; delete and resubmit to resume from the last checkpoint",
            '{"kind": "train", "step": 880, "epoch": 1, "loss": 0.7, "time": 1795000000.0}',
        ),
        Code(
            "log-unavailable",
            INFO,
            "this pod's log could not be read",
            "wait for the pod to start, or check it with `runai-tui describe JOB`",
            "pod retinanet-tcp-worker-1 has not started yet",
        ),
        Code(
            "hang-rank",
            ERROR,
            "the Flight Recorder dumps name the rank that never entered a collective the others "
            "waited in (knowledge/flight_recorder.py)",
            "look at that rank's pod and node first: its log's last lines, preflight on it",
            "rank 0 group 0: entered 3, completed 2; rank 1 group 0: entered 2, completed 2",
        ),
        Code(
            "flight-recorder-unreadable",
            WARNING,
            "the job's Flight Recorder dumps could not be judged",
            "copy the dump directory and run `runai-tui diagnose --flight-recorder DIR`",
            "/data/runs/x/flight-recorder/rank-1: truncated or not a Flight Recorder dump",
        ),
    )
}

# Codes found line by line, in table order.
_LINE_CODES = [
    (c, tuple(n.lower() for n in c.needles)) for c in CODES.values() if c.pattern is not None
]
# Coarse needles, searched (C speed) over a whole lowered block of log: a line is examined only
# when it holds one, so they must be in every line a code's pattern finds.
_NEEDLES = (
    "error", " out", "shared memory", "ibv_reg_mr", "atchdog", "completion", "/dev/shm",
    "</torch_", "dataloader worker", "non-finite", "(exitcode",
)  # fmt: skip
# Every alternative of every pattern holds one of them: "error" (every *Error, "error in",
# "bus error", "trainer: error:"), " out" ("timing out", "timed out", "out of memory"), the rest
# literally. (A
# pattern's alternatives are checked by hand; the examples by this assertion.)
assert all(any(n in c.example.lower() for n in _NEEDLES) for c, _ in _LINE_CODES), "needles"
_B_NEEDLES = tuple(n.encode() for n in _NEEDLES)
RECORD_MARK = '"kind"'  # every trainer record line holds it (runai_tui.knowledge.progress)
_B_RECORD = RECORD_MARK.encode()
RECORDS_KEPT = 200  # the newest record lines kept per pod: data-starved and stalled read them
REPLAY_KEPT = 1024  # lines that changed the transport / NCCL_IB_* settings kept for `extend`
RECORD_LINE_MAX = 1 << 16  # a longer "record" line is not the trainer's and is not kept
SPLIT_BYTES = 64 << 20  # a saved log this big is read in ranges, one per core...
MAX_SPLITS = 8  # ...up to this many
BLOCK_BYTES = 8 << 20  # a saved log is read in blocks this big, cut at their last newline
LINE_BATCH_CHARS = 1 << 20  # streamed lines are examined in blocks of about this many characters


class _HyperscanScreen:
    """The block screen in C: one Hyperscan pass over a block finds the end of every line that
    holds a coarse needle (any case) or `NCCL_IB_` / `NaN` / `Infinity` (their case), and notes
    whether the block has a `Using ` line or a channel line naming each transport (first only:
    the Python network pass runs only on blocks where the transport may change)."""

    _LINES, _LINES_CASED, _USING, _VIA_IB, _VIA_SOCKET, _RECORD = range(6)

    def __init__(self, hyperscan: Any) -> None:
        def lines(needles: Iterable[str]) -> bytes:  # a needle, then the rest of its line
            return ("(?:" + "|".join(map(re.escape, needles)) + r")[^\n]*\n").encode()

        single = hyperscan.HS_FLAG_SINGLEMATCH
        expressions = {
            self._LINES: (lines(_NEEDLES), hyperscan.HS_FLAG_CASELESS),
            self._LINES_CASED: (lines(("NCCL_IB_", "NaN", "Infinity")), 0),
            self._USING: (b"Using ", single),
            self._VIA_IB: (b"via NET/IB", single),
            self._VIA_SOCKET: (b"via NET/Socket", single),
            self._RECORD: (_B_RECORD, single),
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
        self, block: bytes, lo: int, hi: int, final: _Net | None
    ) -> tuple[list[int], bool, bool]:
        """The end (newline) of every candidate line of block[lo:hi], in order; whether the
        network pass must run (a `Using ` line, or a channel line naming another transport than
        `final`'s); whether the block has a trainer record."""
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
        if final is None:
            network = bool(seen)
        else:
            other = self._VIA_SOCKET if final.transport == TRANSPORT_IB else self._VIA_IB
            network = self._USING in seen or other in seen
        if len(ends) > 1:  # Hyperscan promises no order; a line of both kinds comes twice
            ends = sorted(set(ends))
        return [lo + end - 1 for end in ends], network, has_record


_SCREEN: list[_HyperscanScreen | None] = []  # compiled once, when first needed


def _c_screen() -> _HyperscanScreen | None:
    """The Hyperscan block screen, or None without the `hyperscan` package (a platform it has
    no wheel for): the blocks are then screened by `bytes.find` passes, to the same result."""
    if not _SCREEN:
        try:
            import hyperscan
        except ImportError:
            _SCREEN.append(None)
        else:
            _SCREEN.append(_HyperscanScreen(hyperscan))
    return _SCREEN[0]


# What NCCL prints about the network it uses (NCCL_DEBUG=INFO).
_NET_INIT = re.compile(r"\bNET/(IB|Socket) : Using (.*?)(?:;|$)")
# The network NCCL settled on; plugins are named after their transport (`IBext_v8`).
_NET_FINAL = re.compile(r"\bUsing network (\w+)|\bvia NET/(\w+)/\d")
# Devices as NCCL lists them: `[0]mlx5_2:1/RoCE`, a merged `[0]={[0] mlx5_2:1/RoCE, ...}`,
# and sockets as `[0]net1:10.0.0.2<0>` (the interface is the part before the address).
_IB_DEVICE = re.compile(r"([A-Za-z][\w.-]*:\d+/(?:IB|RoCE))\b")
_SOCKET_DEVICE = re.compile(r"\[\d+\]([A-Za-z][\w.@-]*):")
# NCCL_IB_HCA / NCCL_IB_DISABLE as NCCL echoes them, or as `K=V` (the trainer's settings line).
_IB_SETTING = re.compile(r"\bNCCL_IB_(HCA|DISABLE)(?: set (?:by environment )?to |=)([^\s.,;]+)")


@dataclass
class Finding:
    code: str
    severity: str
    pod: str
    line: int
    evidence: str
    message: str
    fix: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "pod": self.pod,
            "line": self.line,
            "evidence": self.evidence,
            "message": self.message,
            "fix": self.fix,
        }


def make_finding(code: str, pod: str, line: int, evidence: str) -> Finding:
    spec = CODES[code]
    return Finding(code, spec.severity, pod, line, cut(evidence), spec.message, spec.fix)


def cut(text: str, limit: int = EVIDENCE_MAX) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= limit else text[:limit] + " …"


@dataclass
class PodHealth:
    pod: str
    transport: str = TRANSPORT_UNKNOWN
    device: str = ""
    lines: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"pod": self.pod, "transport": self.transport, "device": self.device}


@dataclass
class _Net:
    """Where the transport decision came from: (transport, device, line number, text)."""

    transport: str
    device: str
    line: int
    text: str


class PodDiagnoser:
    """Reads one pod's log; memory stays bounded whatever the log's length.

    The log is examined in blocks of bytes (`feed_bytes`; `feed` gathers streamed lines into
    blocks): C-speed searches for a few coarse needles find the candidate lines, and only those
    are decoded and matched (`_line`, the one per-line classification). Trainer records are not
    all decoded: the newest RECORDS_KEPT record lines are kept (raw) and read at the end."""

    def __init__(self, pod: str) -> None:
        self.pod = pod
        self.lines = 0
        self._batch: list[str] = []
        self._batch_chars = 0
        self._carry = b""  # feed_bytes: the start of a line the last piece cut
        self.findings: list[Finding] = []
        self.counts: dict[str, int] = {}
        self._full: set[str] = set()  # codes with all their FINDINGS_PER_CODE findings
        self._replay: list[tuple[int, str]] = []  # lines that changed the settings (`extend`)
        # A saved log (`_read_range`): per block (file offset, length, lines after it, has a
        # record, newline added); the newest records are read again at the end, not kept per block.
        self._index: list[tuple[int, int, int, bool, bool]] | None = None
        self._examined = 0  # file offset of the next byte to examine
        self._init: dict[str, _Net] = {}  # "IB"/"Socket" -> the first NET/<x> : Using line
        self._final: _Net | None = None  # the last "Using network X" / "via NET/X" line
        self.ib_wanted: bool | None = None  # True: NCCL_IB_HCA / NCCL_IB_DISABLE=0 seen
        # Trainer records: the newest record lines (line number, raw text), decoded at the end.
        self._records: deque[tuple[int, bytes]] = deque(maxlen=RECORDS_KEPT)
        self._records_dropped = False  # older record lines than those kept were seen
        self._summary: _Records | None = None
        self.screen = "python"  # what found the candidate lines: "hyperscan" or "python"

    # -- lines --------------------------------------------------------------------------------

    def feed(self, line: str) -> None:
        """Take one line (a streamed log). Lines are examined in blocks, so call `flush()` (or
        finish/health) before reading the results."""
        self._batch.append(line)
        self._batch_chars += len(line) + 1
        if self._batch_chars >= LINE_BATCH_CHARS:
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
        """Take the next piece of a saved log as bytes (any size, cut anywhere); `final` on the
        last piece (a last line without a newline is a line). Only whole lines are examined; a line
        still without its newline after MAX_LINE_READ bytes is taken in pieces of that size, each
        a line (as `read_log_lines` does), so memory stays flat."""
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
        if end == 0 and len(data) >= MAX_LINE_READ:  # a huge line: pieces, as read_log_lines
            end = len(data) - len(data) % MAX_LINE_READ
            for piece in range(0, end, MAX_LINE_READ):
                self._block(data[piece : piece + MAX_LINE_READ] + b"\n", added_newline=True)
        self._carry = data[end:]

    def _block(
        self, block: bytes, lo: int = 0, hi: int | None = None, added_newline: bool = False
    ) -> None:
        """Examine the whole lines of block[lo:hi] (it ends with a newline, `added_newline` when
        that newline is not the log's: a last line, a piece of a huge line), in place."""
        hi = len(block) if hi is None else hi
        ends, has_record = self._candidates(block, lo, hi)
        self._examine(block, lo, hi, ends)
        if self._index is None:
            if has_record:
                self._add_records(*_records_in(block, lo, hi, self.lines))
        else:  # a saved log: its newest records are read again at the end (reread_records)
            length = hi - lo - added_newline
            self._index.append((self._examined, length, self.lines, has_record, added_newline))
            self._examined += length

    def _candidates(self, block: bytes, lo: int, hi: int) -> tuple[list[int], bool]:
        """The end (newline) of every candidate line of block[lo:hi], in order; whether the block
        has a trainer record. Hyperscan when installed, else `bytes.find` passes: the same lines
        to the per-line checks (a line one lets through that the other would not is harmless)."""
        screen = _c_screen()
        if screen is not None:
            self.screen = "hyperscan"
            ends, network, has_record = screen.candidates(block, lo, hi, self._final)
            if network:  # add the lines where the transport may change
                more: set[int] = set()
                self._network_candidates(block, more, lo, hi)
                ends = sorted(set(ends).union(_ends(block, more, hi)))
        else:
            candidates: set[int] = set()  # offsets where a candidate line starts
            lowered = block.lower()
            for needle in _B_NEEDLES:
                _starts(lowered, needle, candidates, lo, hi)
            _starts(block, b"NCCL_IB_", candidates, lo, hi)
            has_record = block.find(_B_RECORD, lo, hi) >= 0
            if has_record:  # a non-finite loss: only on a record line
                _starts(block, b"NaN", candidates, lo, hi)
                _starts(block, b"Infinity", candidates, lo, hi)
            self._network_candidates(block, candidates, lo, hi)
            ends = _ends(block, candidates, hi)
        return ends, has_record

    def _examine(self, block: bytes, lo: int, hi: int, ends: list[int]) -> None:
        """Count, classify and number the candidate lines ending at `ends`; count block[lo:hi]'s
        lines."""
        # The candidate lines, cut out by C-level maps (block[lo - 1] is a newline when lo > 0),
        # then taken once per distinct text: a line whose codes all have their findings already
        # is only counted (an error storm repeats its lines); the others are examined in order,
        # numbered by counting newlines from the last numbered line.
        starts = list(
            map((1).__add__, map(block.rfind, repeat(b"\n"), repeat(lo and lo - 1), ends))
        )
        lines = list(map(block.__getitem__, map(slice, starts, ends)))
        counts, full, seen = self.counts, self._full, _SEEN
        slow = set()
        for raw, times in Counter(lines).items():
            codes, other = seen.get(raw) or _raw_codes(raw)
            if not other and full.issuperset(codes):
                for code in codes:
                    counts[code] += times
            else:
                slow.add(raw)
        number, counted = self.lines + 1, lo  # `number` is the line starting at `counted`
        for start, raw in zip(starts, lines, strict=True) if slow else ():
            if raw not in slow:
                continue
            codes, other = seen.get(raw) or _raw_codes(raw)
            if not other and full.issuperset(codes):  # its codes' findings filled up meanwhile
                for code in codes:
                    counts[code] += 1
                continue
            number += _newlines(block, counted, start)
            counted = start
            self._line(number, _text(raw), codes)
        self.lines = number - 1 + _newlines(block, counted, hi)

    def _network_candidates(
        self, block: bytes, out: set[int], lo: int, hi: int, using_lines: bool = True
    ) -> None:
        """The lines where the transport NCCL uses may change, found without looking at every
        `via NET/` channel line: every line with `Using ` (`NET/<x> : Using`, `Using network X`:
        a few per run), and only those channel lines naming another transport than the one in
        use (`_network` ignores the others). `using_lines` False: the block has no `Using `."""
        using: list[tuple[int, int, str | None]] = []  # (start, end, the final transport named)
        pos = block.find(b"Using ", lo, hi) if using_lines else -1
        while pos >= 0:
            start, end = block.rfind(b"\n", lo, pos) + 1 or lo, block.find(b"\n", pos, hi)
            out.add(start)
            using.append((start, end, _final_transport(_text(block[start:end]))))
            pos = block.find(b"Using ", end, hi)
        current = self._final.transport if self._final is not None else None
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
                    transport = _final_transport(_text(block[start:end]))
                    if transport is None or transport == current:
                        pos = end + 1
                        continue
                    event = (start, end, transport)
            if event is None:
                return
            out.add(event[0])
            current, pos = event[2], event[1] + 1

    def _add_records(self, found: list[tuple[int, bytes]], more: bool) -> None:
        """Keep a block's newest record lines (`_records_in`), after the older blocks'."""
        if found:
            if more or len(self._records) + len(found) > RECORDS_KEPT:
                self._records_dropped = True
            self._records.extend(reversed(found))
            self._summary = None

    def reread_records(self, f: BinaryIO) -> None:
        """A saved log, once examined: its newest records, read again from the blocks that hold
        them, newest first (`f` is the log). Numbering records in every block as it passes costs a
        third of the time on a log whose records are far apart."""
        index, self._index = self._index or [], None
        picked: list[tuple[list[tuple[int, bytes]], bool]] = []
        total = 0
        for start, length, lines, has_record, added_newline in reversed(index):
            if not has_record:
                continue
            f.seek(start)
            block = f.read(length) + (b"\n" if added_newline else b"")
            found, more = _records_in(block, 0, len(block), lines)
            if not found:
                continue
            if total >= RECORDS_KEPT:  # an older block with records: they were dropped
                self._records_dropped = True
                break
            picked.append((found, more))
            total += len(found)
        for found, more in reversed(picked):  # oldest first, as when streamed
            self._add_records(found, more)

    def _line(self, number: int, line: str, codes: tuple[str, ...] | None = None) -> None:
        """One candidate line: the line codes (`codes`, when already known), the network NCCL
        uses, the NCCL_IB_* settings, a trainer record with a non-finite loss."""
        for code in _line_codes(line) if codes is None else codes:
            self._add(code, number, line)
        if self._settings(number, line) and len(self._replay) < REPLAY_KEPT:
            self._replay.append((number, line))
        if RECORD_MARK in line and ("NaN" in line or "Infinity" in line):
            record = parse_metric_line(line)
            loss = record.get("loss") if record is not None else None
            train = record is not None and record.get("kind") == "train"
            if train and isinstance(loss, float) and not math.isfinite(loss):
                self._add("nan-loss", number, line)

    def _settings(self, number: int, line: str) -> bool:
        """The network NCCL uses and the NCCL_IB_* settings a line gives: True when it changed
        them (such lines are kept in `_replay`, for `extend`)."""
        changed = False
        if "NET/" in line or "Using network" in line:
            changed = self._network(number, line)
        if "NCCL_IB_" in line:
            for key, value in _IB_SETTING.findall(line):
                if key == "DISABLE":
                    self.ib_wanted = value.strip("'\"") in ("0", "false", "False")
                    changed = True
                elif value and self.ib_wanted is None:
                    self.ib_wanted = changed = True
        return changed

    def _add(self, code: str, number: int, line: str) -> None:
        count = self.counts.get(code, 0)
        self.counts[code] = count + 1
        if count < FINDINGS_PER_CODE:
            self.findings.append(make_finding(code, self.pod, number, line))
        if count + 1 >= FINDINGS_PER_CODE:
            self._full.add(code)

    def _network(self, number: int, line: str) -> bool:
        """Follow the transport (see `transport`); True when this line changed what is known."""
        transport = _final_transport(line)
        if transport is not None:
            if self._final is not None and self._final.transport == transport:
                return False
            init = self._init.get(transport)
            self._final = _Net(transport, init.device if init else "", number, line)
            return True
        match = _NET_INIT.search(line)
        if not match:
            return False
        transport = TRANSPORT_IB if match.group(1) == "IB" else TRANSPORT_SOCKET
        changed = transport not in self._init
        if changed:
            found = (_IB_DEVICE if transport == TRANSPORT_IB else _SOCKET_DEVICE).findall(
                match.group(2)
            )
            devices = ",".join(dict.fromkeys(found))  # unique, in NCCL's order
            self._init[transport] = _Net(transport, devices, number, line)
        final = self._final
        if final is not None and final.transport == transport and not final.device:
            final.device = self._init[transport].device
            changed = changed or bool(final.device)
        return changed

    def extend(self, later: PodDiagnoser) -> None:
        """Add what `later` found in the lines that follow this reader's (read on its own, from
        a line's start): the result is what one reader of all the lines would have found. The
        counts add up, the first findings per code are kept, the lines that changed `later`'s
        transport or NCCL_IB_* settings are replayed here, the newest records are kept."""
        self.flush()
        later.flush()
        shift = self.lines
        self.lines += later.lines
        kept: dict[str, int] = {}
        for finding in self.findings:
            kept[finding.code] = kept.get(finding.code, 0) + 1
        for finding in later.findings:
            if kept.get(finding.code, 0) < FINDINGS_PER_CODE:
                kept[finding.code] = kept.get(finding.code, 0) + 1
                self.findings.append(replace(finding, line=finding.line + shift))
        for code, count in later.counts.items():
            self.counts[code] = self.counts.get(code, 0) + count
            if self.counts[code] >= FINDINGS_PER_CODE:
                self._full.add(code)
        for number, line in later._replay:
            if self._settings(number + shift, line) and len(self._replay) < REPLAY_KEPT:
                self._replay.append((number + shift, line))
        if later._records_dropped or len(self._records) + len(later._records) > RECORDS_KEPT:
            self._records_dropped = True
        self._records.extend((number + shift, raw) for number, raw in later._records)
        self._summary = None

    # -- the trainer's records ----------------------------------------------------------------

    def records(self) -> _Records:
        """What the newest RECORDS_KEPT record lines say (decoded once, when asked)."""
        self.flush()
        if self._summary is None:
            self._summary = _Records.of(self._records, first_is_start=not self._records_dropped)
        return self._summary

    @property
    def finished(self) -> bool:
        """The trainer printed its "done"/"stopped" record (and no train record after it)."""
        return self.records().finished

    # -- the end of the log -------------------------------------------------------------------

    @property
    def transport(self) -> _Net | None:
        """The transport NCCL finally uses: a `Using network X` / `via NET/X` line decides; else
        IB when NET/IB initialised (a bootstrap or fallback NET/Socket line does not count),
        else Socket when only NET/Socket did."""
        self.flush()
        if self._final is not None:
            return self._final
        return self._init.get(TRANSPORT_IB) or self._init.get(TRANSPORT_SOCKET)

    def usual_interval(self) -> float | None:
        return self.records().usual_interval()

    def finish(self, running: bool = False, now: float | None = None) -> list[Finding]:
        """The derived findings (data-starved, stalled) plus the line findings, in log order."""
        self.flush()
        found = list(self.findings)
        rec = self.records()
        if rec.step_sum > 0 and rec.data_sum / rec.step_sum > DATA_STARVED_RATIO:
            assert rec.worst is not None
            found.append(make_finding("data-starved", self.pod, rec.worst[1], rec.worst[2]))
        usual = rec.usual_interval()
        if running and not rec.finished and usual and rec.last_time is not None:
            now = time.time() if now is None else now
            silent = now - rec.last_time
            if silent > max(STALL_FACTOR * usual, STALL_MIN_SECONDS):
                assert rec.last_record is not None
                finding = make_finding("stalled", self.pod, *rec.last_record)
                finding.message += (
                    f" (no record for {_duration(silent)}; usually one every {_duration(usual)})"
                )
                found.append(finding)
        return sorted(found, key=lambda f: f.line)

    def health(self) -> PodHealth:
        net = self.transport  # flushes
        if net is None:
            return PodHealth(self.pod, lines=self.lines)
        return PodHealth(self.pod, net.transport, net.device, self.lines)


@dataclass
class _Records:
    """The trainer's newest records, read in order (data-starved, stalled)."""

    data_sum: float = 0.0
    step_sum: float = 0.0
    worst: tuple[float, int, str] | None = None  # (ratio, line, text)
    last_time: float | None = None
    last_record: tuple[int, str] | None = None
    intervals: deque[float] = field(default_factory=lambda: deque(maxlen=INTERVALS_KEPT))
    finished: bool = False

    @classmethod
    def of(cls, lines: Iterable[tuple[int, bytes]], first_is_start: bool) -> _Records:
        """`first_is_start`: the lines begin at the log's start, so the first train record
        (the DataLoader's start-up) is left out of the step-time statistics."""
        out = cls()
        skip_first = first_is_start
        for number, raw in lines:
            line = _text(raw)
            record = parse_metric_line(line)
            if record is None:
                continue
            kind = record.get("kind")
            stamp = _number(record.get("time"))
            if stamp is not None:
                if out.last_time is not None and kind == "train" and stamp > out.last_time:
                    out.intervals.append(stamp - out.last_time)
                out.last_time = stamp
            out.last_record = (number, line)
            if kind in ("done", "stopped"):
                out.finished = True
                continue
            if kind != "train":
                continue
            out.finished = False  # a new run (a resume) after an earlier one
            if skip_first:
                skip_first = False
                continue
            data, step = _number(record.get("data_time")), _number(record.get("step_time"))
            if data is None or step is None or step <= 0:
                continue
            out.data_sum += data
            out.step_sum += step
            ratio = data / step
            if out.worst is None or ratio > out.worst[0]:
                out.worst = (ratio, number, line)
        return out

    def usual_interval(self) -> float | None:
        import statistics  # lazy: only the records need it

        return statistics.median(self.intervals) if self.intervals else None


def _records_in(block: bytes, lo: int, hi: int, lines: int) -> tuple[list[tuple[int, bytes]], bool]:
    """The newest RECORDS_KEPT record lines of block[lo:hi] (found from its end by rfind), newest
    first, numbered back from `lines` (its last line's number); and whether older record lines
    are left in it."""
    found: list[tuple[int, bytes]] = []
    end, number = hi, lines + 1
    newer = hi  # newlines from `newer` on are already counted
    while len(found) < RECORDS_KEPT:
        hit = block.rfind(_B_RECORD, lo, end)
        if hit < 0:
            break
        start = block.rfind(b"\n", lo, hit) + 1 or lo
        stop = block.find(b"\n", hit, hi)
        number -= block.count(b"\n", stop, newer)
        newer = stop
        if stop - start <= RECORD_LINE_MAX:
            found.append((number, block[start:stop]))
        end = start
    return found, len(found) == RECORDS_KEPT and block.rfind(_B_RECORD, lo, end) >= 0


def _newlines(block: bytes, lo: int, hi: int) -> int:
    """The newlines in block[lo:hi]. A big span is counted by `bytes.replace`, which finds them
    with memchr: about twice as fast as `bytes.count`'s byte loop (benchmarks/, issue 12)."""
    if hi - lo < 1 << 16:
        return block.count(b"\n", lo, hi)
    return (
        len(block)
        - len(block.replace(b"\n", b""))
        - block.count(b"\n", 0, lo)
        - block.count(b"\n", hi)
    )


def _ends(block: bytes, starts: Iterable[int], hi: int) -> list[int]:
    """The ends (newlines) of the lines starting at `starts`, in order."""
    return [block.find(b"\n", start, hi) for start in sorted(starts)]


def _starts(block: bytes, needle: bytes, out: set[int], lo: int, hi: int) -> None:
    """Add the start offset of every line of block[lo:hi] holding `needle` (one search a line)."""
    pos = block.find(needle, lo, hi)
    while pos >= 0:
        out.add(block.rfind(b"\n", lo, pos) + 1 or lo)
        end = block.find(b"\n", pos, hi)
        pos = block.find(needle, end, hi)


def _line_codes(line: str) -> tuple[str, ...]:
    """The codes whose pattern finds `line`, in table order."""
    lower = line.lower()
    codes = tuple(
        spec.code
        for spec, needles in _LINE_CODES
        if any(n in lower for n in needles) and spec.pattern and spec.pattern.search(line)
    )
    if len(codes) > 1 and "trainer-error" in codes:  # a more specific code explains it
        codes = tuple(c for c in codes if c != "trainer-error")
    return codes


_SEEN: dict[bytes, tuple[tuple[str, ...], bool]] = {}  # recent short lines -> _raw_codes
_SEEN_MAX, _SEEN_LINE = 4096, 512


def _raw_codes(raw: bytes) -> tuple[tuple[str, ...], bool]:
    """A candidate line's codes, and whether `_line` has more to do with it than count them
    (the network, NCCL_IB_* settings, a record's non-finite loss). Logs repeat their lines, so
    the answers for recent short lines are kept."""
    seen = _SEEN.get(raw)
    if seen is None:
        other = b"NET/" in raw or b"Using network" in raw or b"NCCL_IB_" in raw
        if _B_RECORD in raw and (b"NaN" in raw or b"Infinity" in raw):
            other = True
        seen = (_line_codes(_text(raw)), other)
        if len(raw) <= _SEEN_LINE:
            if len(_SEEN) >= _SEEN_MAX:
                _SEEN.clear()
            _SEEN[raw] = seen
    return seen


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


def _final_transport(line: str) -> str | None:
    final = _NET_FINAL.search(line)
    return _transport_of(final.group(1) or final.group(2)) if final else None


def _transport_of(network: str) -> str | None:
    """`IB`, `IBext_v8` (the IB plugin) -> IB; `Socket` -> Socket; anything else -> None."""
    if network.startswith("IB"):
        return TRANSPORT_IB
    if network.startswith("Socket"):
        return TRANSPORT_SOCKET
    return None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# -- a whole job ---------------------------------------------------------------------------------


@dataclass
class Diagnosis:
    pods: list[PodHealth] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    counts: dict[tuple[str, str], int] = field(default_factory=dict)  # (pod, code) -> lines

    @property
    def has_errors(self) -> bool:
        return any(f.severity == ERROR for f in self.findings)

    @property
    def exit_code(self) -> int:
        return 1 if self.has_errors else 0

    def codes(self, severity: str | None = None) -> list[str]:
        """Distinct codes, most severe first."""
        seen: list[str] = []
        for f in self.findings:
            if (severity is None or f.severity == severity) and f.code not in seen:
                seen.append(f.code)
        return seen

    def to_dict(self) -> dict[str, Any]:
        return {
            "pods": [p.to_dict() for p in self.pods],
            "findings": [f.to_dict() for f in self.findings],
        }


def combine(
    diagnosers: Iterable[PodDiagnoser],
    running: bool = False,
    now: float | None = None,
    ib_wanted: bool | None = None,
    extra: Iterable[Finding] = (),
) -> Diagnosis:
    """Per-pod results into one report. tcp-fallback is a job-level judgement: NCCL_IB_* settings
    are printed by rank 0 only, so IB asked for anywhere applies to every pod that uses sockets."""
    pods = list(diagnosers)
    if ib_wanted is None:
        said = [p.ib_wanted for p in pods if p.ib_wanted is not None]
        ib_wanted = bool(said) and all(said)
    report = Diagnosis()
    findings: list[Finding] = list(extra)
    for pod in pods:
        report.pods.append(pod.health())
        findings.extend(pod.finish(running=running, now=now))
        net = pod.transport
        wanted = ib_wanted or TRANSPORT_IB in pod._init or "memlock" in pod.counts
        if wanted and net is not None and net.transport == TRANSPORT_SOCKET:
            findings.append(make_finding("tcp-fallback", pod.pod, net.line, net.text))
        for code, count in pod.counts.items():
            report.counts[(pod.pod, code)] = count
    if any(f.severity == ERROR for f in findings):  # a more specific code explains the failure
        findings = [f for f in findings if f.code != "process-failed"]
    order = {p.pod: i for i, p in enumerate(report.pods)}
    findings.sort(key=lambda f: (SEVERITY_ORDER[f.severity], order.get(f.pod, 0), f.line))
    report.findings = findings
    return report


def diagnose_lines(
    logs: dict[str, Iterable[str]], running: bool = False, now: float | None = None
) -> Diagnosis:
    """Diagnose logs given as {pod: lines} (lines may be a lazy iterator)."""
    return combine((PodDiagnoser(pod).feed_all(lines) for pod, lines in logs.items()), running, now)


def read_log_lines(path: Path) -> Iterator[str]:
    """A saved log, a line at a time, never more than MAX_LINE_READ bytes held (a longer line
    comes in pieces). Raises OSError."""
    with path.open("rb") as f:
        while True:
            chunk = f.readline(MAX_LINE_READ)
            if not chunk:
                return
            yield chunk.decode("utf-8", errors="replace").rstrip("\r\n")


def read_log_file(path: Path, pod: str | None = None) -> PodDiagnoser:
    """A saved log, read in blocks of BLOCK_BYTES (never held whole). Raises OSError.

    A log of SPLIT_BYTES or more is cut at line starts into one range per core; the ranges are
    read at the same time (forked processes, `runner.forked_map`) and their diagnoses joined in
    order (`PodDiagnoser.extend`): the same result as one reader, in about 1/cores of the time."""
    name = path.stem if pod is None else pod
    ranges = _ranges(path)
    if len(ranges) > 1:
        _c_screen()  # compiled once, before the children are forked
        parts = forked_map(lambda span: _read_range(path, name, span), ranges)
        if parts is not None:
            for later in parts[1:]:
                parts[0].extend(later)
            return parts[0]
    return _read_range(path, name, (0, None))


def _read_range(path: Path, pod: str, span: tuple[int, int | None]) -> PodDiagnoser:
    """Bytes span[0]:span[1] of a saved log (to its end when span[1] is None)."""
    diagnoser = PodDiagnoser(pod)
    start, stop = span
    diagnoser._index, diagnoser._examined = [], start
    with path.open("rb", buffering=0) as f:
        f.seek(start)
        left = -1 if stop is None else stop - start
        while left and (block := f.read(BLOCK_BYTES if left < 0 else min(BLOCK_BYTES, left))):
            diagnoser.feed_bytes(block)
            left -= len(block) if left > 0 else 0
        diagnoser.feed_bytes(b"", final=True)
        diagnoser.reread_records(f)
    return diagnoser


def _ranges(path: Path) -> list[tuple[int, int | None]]:
    """Byte ranges of a saved log that start at line starts: one per core for a log of
    SPLIT_BYTES or more (a cut that finds no newline within MAX_LINE_READ is left out)."""
    size = path.stat().st_size
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    count = min(cores or 1, size // SPLIT_BYTES, MAX_SPLITS)
    cuts = [0]
    if count > 1:
        with path.open("rb", buffering=0) as f:
            for k in range(1, count):
                f.seek(size * k // count)
                window = f.read(MAX_LINE_READ)
                newline = window.find(b"\n")
                cut = size * k // count + newline + 1
                if newline >= 0 and cuts[-1] < cut < size:
                    cuts.append(cut)
    return [(a, b) for a, b in zip(cuts, [*cuts[1:], None], strict=True)]


def diagnose_files(paths: Iterable[Path], now: float | None = None) -> Diagnosis:
    """`--log FILE...`: each file is one pod, named after the file without its extension."""
    return combine((read_log_file(p) for p in paths), running=False, now=now)


class LogSource(Protocol):
    """What diagnose_job needs from RunaiClient (the TUI's tests pass a stand-in)."""

    async def adescribe(self, name: str) -> JobDetail: ...

    def stream_logs(
        self, name: str, pod: str | None = None, follow: bool = True, tail: int | None = None
    ) -> AsyncIterator[str]: ...


async def diagnose_job(
    client: LogSource,
    name: str,
    pod: str | None = None,
    tail: int | None = None,
    now: float | None = None,
    detail: JobDetail | None = None,
) -> Diagnosis:
    """Every pod's log (or one pod's), fetched concurrently, read as it streams in.

    `tail` limits each pod to its last lines (the TUI's background pass); None reads it all.
    """
    if detail is None:
        detail = await client.adescribe(name)
    pods = [p.name for p in detail.pods if pod is None or p.name == pod]
    if pod is not None and not pods:
        known = ", ".join(p.name for p in detail.pods) or "none"
        raise RunaiError(
            ErrorKind.NOT_FOUND, f"job {name!r} has no pod {pod!r}", f"its pods: {known}"
        )
    diagnosers = [PodDiagnoser(p) for p in pods]
    unavailable: list[Finding] = []
    dumps_at = flight_recorder.DumpLocator()  # where the trainer said its hang dumps went

    import asyncio  # lazy: `diagnose --log` needs no event loop

    slots = asyncio.Semaphore(MAX_CONCURRENT_PODS)

    async def read(diagnoser: PodDiagnoser) -> None:
        async with slots:
            stream = client.stream_logs(name, pod=diagnoser.pod, follow=False, tail=tail)
            try:
                async for line in stream:
                    diagnoser.feed(line)
                    dumps_at.feed(diagnoser.pod, line)
            except RunaiError as exc:
                unavailable.append(make_finding("log-unavailable", diagnoser.pod, 0, exc.message))
            finally:
                with contextlib.suppress(Exception):
                    await stream.aclose()  # type: ignore[attr-defined]

    await asyncio.gather(*(read(d) for d in diagnosers))
    for r in await flight_recorder.job_findings(client, detail, dumps_at):
        unavailable.append(Finding(r.code, CODES[r.code].severity, r.pod, 0, cut(r.evidence),
                                   r.message, r.fix))  # fmt: skip
    running = detail.job.phase is Phase.RUNNING
    return combine(diagnosers, running=running, now=now, extra=unavailable)


# -- text output -----------------------------------------------------------------------------


def render_text(report: Diagnosis) -> str:
    """The CLI's report. Every piece of log text goes through `literal`: inert on a terminal."""
    out: list[str] = []
    if report.pods:
        width = max(len("POD"), *(len(literal(p.pod)) for p in report.pods))
        out.append(f"{'POD':<{width}}  TRANSPORT  DEVICE")
        for p in report.pods:
            out.append(f"{literal(p.pod):<{width}}  {p.transport:<9}  {literal(p.device) or '-'}")
        out.append("")
    if not report.pods:
        return "no pod to read (the job has no pods yet)"
    if not report.findings:
        lines = sum(p.lines for p in report.pods)
        out.append(f"no problems found ({lines} log lines, {len(report.pods)} pod(s))")
        return "\n".join(out)
    shown: dict[tuple[str, str], int] = {}
    for f in report.findings:
        key = (f.pod, f.code)
        shown[key] = shown.get(key, 0) + 1
        where = f"{literal(f.pod)}:{f.line}" if f.line else literal(f.pod)
        out.append(f"{f.severity.upper()} {f.code}  {where}")
        out.append(f"  evidence: {literal(f.evidence)}")
        out.append(f"  what:     {literal(f.message)}")
        out.append(f"  fix:      {f.fix}")
        total = report.counts.get(key, 0)
        if shown[key] == FINDINGS_PER_CODE and total > FINDINGS_PER_CODE:
            out.append(f"  (and {total - FINDINGS_PER_CODE} more lines like these in this pod)")
    errors = sum(1 for f in report.findings if f.severity == ERROR)
    out.append("")
    out.append(f"{errors} error(s), {len(report.findings) - errors} other finding(s)")
    return "\n".join(out)
