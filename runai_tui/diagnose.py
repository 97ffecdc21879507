"""Job diagnosis from pod logs: what went wrong (NCCL, PyTorch, the trainer) and what to change.

Core (no Textual, no Rich). A `PodDiagnoser` takes one pod's log a line at a time and keeps only
counters, the first few findings per code and the transport NCCL chose, so a multi-gigabyte log
is streamed with flat memory. `CODES` is the one table of what each finding means and how to fix
it; the CLI (`runai-tui diagnose`), the TUI's health panel and the README all read it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import queue
import re
import shutil
import statistics
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from runai_tui.errors import ErrorKind, RunaiError
from runai_tui.models import JobDetail, Phase
from runai_tui.progress import parse_metric_line
from runai_tui.runner import ChunkStream
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
# The same screen as one `LC_ALL=C grep -i -F` (ASCII case folding, as bytes.lower()): the coarse
# needles, `NCCL_IB_`, and a non-finite JSON number (a `NaN` token is followed by `,` `}` `]` or
# white space; a bare `nan` would take every `retinanet` line). Lines it lets through that the
# block screen would not are harmless: `_line` checks `NCCL_IB_`, `NaN`, `Infinity` in their case.
# `using `: a block whose grep lines hold no `Using ` skips that search. Channel lines and
# trainer records are found by the Python pass (it reads every block to count lines anyway).
_GREP_NEEDLES = (
    *_NEEDLES, "nccl_ib_", "using ", "infinity", "nan,", "nan}", "nan]", "nan ", "nan\t", "nan\r",
)  # fmt: skip
RECORD_MARK = '"kind"'  # every trainer record line holds it (runai_tui.progress)
_B_RECORD = RECORD_MARK.encode()
RECORDS_KEPT = 200  # the newest record lines kept per pod: data-starved and stalled read them
RECORD_LINE_MAX = 1 << 16  # a longer "record" line is not the trainer's and is not kept
GREP_CHUNKS_AHEAD = 8  # chunks of grep's output (up to 1 MiB each) read ahead of the blocks
BLOCK_BYTES = 8 << 20  # a saved log is read in blocks this big, cut at their last newline
LINE_BATCH_CHARS = 1 << 20  # streamed lines are examined in blocks of about this many characters

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
        self._init: dict[str, _Net] = {}  # "IB"/"Socket" -> the first NET/<x> : Using line
        self._final: _Net | None = None  # the last "Using network X" / "via NET/X" line
        self.ib_wanted: bool | None = None  # True: NCCL_IB_HCA / NCCL_IB_DISABLE=0 seen
        # Trainer records: the newest record lines (line number, raw text), decoded at the end.
        self._records: deque[tuple[int, bytes]] = deque(maxlen=RECORDS_KEPT)
        self._records_dropped = False  # older record lines than those kept were seen
        self._summary: _Records | None = None
        self._grep: _GrepLines | None = None  # read_log_file: grep's candidate lines
        self.screen = "python"  # what found the candidate lines: "python" or "grep"

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
                self._block(data[end:] + b"\n")
            return
        if end == 0 and len(data) >= MAX_LINE_READ:  # a huge line: pieces, as read_log_lines
            if self._grep is not None:  # grep numbers real lines, not pieces
                raise _GrepUnusable("a line longer than MAX_LINE_READ")
            end = len(data) - len(data) % MAX_LINE_READ
            for piece in range(0, end, MAX_LINE_READ):
                self._block(data[piece : piece + MAX_LINE_READ] + b"\n")
        self._carry = data[end:]

    def _block(self, block: bytes, lo: int = 0, hi: int | None = None) -> None:
        """Examine the whole lines of block[lo:hi] (it ends with a newline), in place."""
        hi = len(block) if hi is None else hi
        first = self.lines + 1  # the number of the first line
        candidates: set[int] = set()  # offsets where a candidate line starts
        if self._grep is None:
            lowered = block.lower()
            for needle in _B_NEEDLES:
                _starts(lowered, needle, candidates, lo, hi)
            _starts(block, b"NCCL_IB_", candidates, lo, hi)
            if block.find(_B_RECORD, lo, hi) >= 0:  # a non-finite loss: only on a record line
                _starts(block, b"NaN", candidates, lo, hi)
                _starts(block, b"Infinity", candidates, lo, hi)
            self._network_candidates(block, candidates, lo, hi)
        else:  # grep's lines say whether the block has a `Using ` line (grep looks for them)
            total = block.count(b"\n", lo, hi)
            grepped = self._grep.upto(first - 1 + total)
            using = any("Using " in line for _, line in grepped)
            self._network_candidates(block, candidates, lo, hi, using)
        # Line numbers: counted (C speed) from one candidate to the next.
        number, counted = first, lo
        lines: dict[int, str] = {}
        for start in sorted(candidates):
            number += block.count(b"\n", counted, start)
            counted = start
            end = block.find(b"\n", start, hi)
            lines[number] = _text(block[start:end])
        if self._grep is None:
            self.lines = number - 1 + block.count(b"\n", counted, hi)
            found = list(lines.items())
        else:  # grep's candidates in this block, merged in line order
            self.lines = first - 1 + total
            found = sorted({**lines, **dict(grepped)}.items()) if lines else grepped
        for number, line in found:
            self._line(number, line)
        self._keep_records(block, lo, hi)

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

    def _keep_records(self, block: bytes, lo: int, hi: int) -> None:
        """The newest RECORDS_KEPT record lines of block[lo:hi] (found from its end, by rfind)."""
        found: list[tuple[int, bytes]] = []
        end, number = hi, self.lines + 1
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
        if found:
            if len(found) == RECORDS_KEPT and block.rfind(_B_RECORD, lo, end) >= 0:
                self._records_dropped = True
            if len(self._records) + len(found) > RECORDS_KEPT:
                self._records_dropped = True
            self._records.extend(reversed(found))
            self._summary = None

    def _line(self, number: int, line: str) -> None:
        """One candidate line: the line codes, the network NCCL uses, the NCCL_IB_* settings, a
        trainer record with a non-finite loss."""
        for code in _line_codes(line):
            self._add(code, number, line)
        if "NET/" in line or "Using network" in line:
            self._network(number, line)
        if "NCCL_IB_" in line:
            for key, value in _IB_SETTING.findall(line):
                if key == "DISABLE":
                    self.ib_wanted = value.strip("'\"") in ("0", "false", "False")
                elif value and self.ib_wanted is None:
                    self.ib_wanted = True
        if RECORD_MARK in line and ("NaN" in line or "Infinity" in line):
            record = parse_metric_line(line)
            loss = record.get("loss") if record is not None else None
            train = record is not None and record.get("kind") == "train"
            if train and isinstance(loss, float) and not math.isfinite(loss):
                self._add("nan-loss", number, line)

    def _add(self, code: str, number: int, line: str) -> None:
        count = self.counts.get(code, 0)
        self.counts[code] = count + 1
        if count < FINDINGS_PER_CODE:
            self.findings.append(make_finding(code, self.pod, number, line))

    def _network(self, number: int, line: str) -> None:
        transport = _final_transport(line)
        if transport is not None:
            if self._final is None or self._final.transport != transport:
                init = self._init.get(transport)
                self._final = _Net(transport, init.device if init else "", number, line)
            return
        match = _NET_INIT.search(line)
        if match:
            transport = TRANSPORT_IB if match.group(1) == "IB" else TRANSPORT_SOCKET
            if transport not in self._init:
                found = (_IB_DEVICE if transport == TRANSPORT_IB else _SOCKET_DEVICE).findall(
                    match.group(2)
                )
                devices = ",".join(dict.fromkeys(found))  # unique, in NCCL's order
                self._init[transport] = _Net(transport, devices, number, line)
            if self._final is not None and self._final.transport == transport:
                self._final.device = self._final.device or self._init[transport].device

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
        return statistics.median(self.intervals) if self.intervals else None


def _starts(block: bytes, needle: bytes, out: set[int], lo: int, hi: int) -> None:
    """Add the start offset of every line of block[lo:hi] holding `needle` (one search a line)."""
    pos = block.find(needle, lo, hi)
    while pos >= 0:
        out.add(block.rfind(b"\n", lo, pos) + 1 or lo)
        end = block.find(b"\n", pos, hi)
        pos = block.find(needle, end, hi)


_CODES_SEEN: dict[str, tuple[str, ...]] = {}  # recent short lines -> their codes (logs repeat)
_CODES_SEEN_MAX, _CODES_SEEN_LINE = 4096, 512


def _line_codes(line: str) -> tuple[str, ...]:
    """The codes whose pattern finds `line`, in table order."""
    codes = _CODES_SEEN.get(line)
    if codes is None:
        lower = line.lower()
        codes = tuple(
            spec.code
            for spec, needles in _LINE_CODES
            if any(n in lower for n in needles) and spec.pattern and spec.pattern.search(line)
        )
        if len(codes) > 1 and "trainer-error" in codes:  # a more specific code explains it
            codes = tuple(c for c in codes if c != "trainer-error")
        if len(line) <= _CODES_SEEN_LINE:
            if len(_CODES_SEEN) >= _CODES_SEEN_MAX:
                _CODES_SEEN.clear()
            _CODES_SEEN[line] = codes
    return codes


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


class _GrepUnusable(Exception):
    """grep failed or its lines do not fit the file: read it in Python instead."""


class _GrepLines:
    """The candidate lines of one `grep -n` over a saved log, handed out by line number."""

    def __init__(self, grep: str, path: Path) -> None:
        argv = [grep, "-n", "-a", "-F", "-i"]
        for needle in _GREP_NEEDLES:
            argv += ["-e", needle]
        argv += ["--", str(path)]
        self.stream = ChunkStream(argv, env={**os.environ, "LC_ALL": "C"})
        self._chunks = self.stream.chunks()
        self._pending: deque[tuple[int, str]] = deque()
        self._carry = b""
        self._done = False
        # A thread reads grep's output ahead (bounded), so grep never waits on a full pipe while
        # Python reads its block: the two run side by side.
        self._queue: queue.Queue[bytes | None] = queue.Queue(GREP_CHUNKS_AHEAD)
        self._stop = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._pump, name="diagnose-grep", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            for chunk in self._chunks:
                if self._stop:
                    break
                self._queue.put(chunk)
        except BaseException as exc:  # OSError: grep could not start; re-raised by the reader
            self._error = exc
        finally:
            self._chunks.close()  # kills grep if it still runs
            self._queue.put(None)

    def stop(self) -> None:
        """End the reading thread (and grep with it); safe to call more than once."""
        self._stop = True
        if self._thread.is_alive():
            self.stream.kill()  # the thread may wait on grep's output: end it now
        while self._thread.is_alive():
            with contextlib.suppress(queue.Empty):
                while True:
                    self._queue.get_nowait()
            self._thread.join(0.01)

    def upto(self, last: int) -> list[tuple[int, str]]:
        """The candidate lines numbered `last` or less (in order)."""
        while not self._done and (not self._pending or self._pending[-1][0] <= last):
            self._read()
        out: list[tuple[int, str]] = []
        while self._pending and self._pending[0][0] <= last:
            out.append(self._pending.popleft())
        return out

    def _read(self) -> None:
        chunk = self._queue.get()
        if chunk is None:
            self._done = True
            if self._error is not None:
                raise _GrepUnusable(f"grep: {self._error}")
            if self._carry:
                raise _GrepUnusable("grep's output ended inside a line")
            return
        data = self._carry + chunk
        end = data.rfind(b"\n") + 1
        if not end and len(data) > MAX_LINE_READ + 32:  # the fallback takes huge lines in pieces
            raise _GrepUnusable("a line longer than MAX_LINE_READ")
        self._carry = data[end:]
        # Decoded at once: an invalid UTF-8 sequence never swallows a newline, so each line
        # decodes as it would alone.
        for raw in data[:end].decode("utf-8", errors="replace").split("\n")[:-1]:
            number, sep, text = raw.partition(":")
            if not sep or not (number.isascii() and number.isdigit()):
                raise _GrepUnusable("not grep -n output")
            self._pending.append((int(number), text.rstrip("\r\n")))

    def close(self) -> None:
        """Check that grep ended well (0: lines found, 1: none) and that every line was used."""
        if self.upto(1 << 62):  # lines past the file's last: not this file's lines
            raise _GrepUnusable("grep's line numbers do not fit the file")
        self.stop()
        if self.stream.returncode not in (0, 1):
            raise _GrepUnusable(f"grep exited {self.stream.returncode}")


def _read_blocks(diagnoser: PodDiagnoser, path: Path) -> PodDiagnoser:
    with path.open("rb") as f:
        while block := f.read(BLOCK_BYTES):
            diagnoser.feed_bytes(block)
    diagnoser.feed_bytes(b"", final=True)
    return diagnoser


def read_log_file(path: Path, pod: str | None = None, use_grep: bool = True) -> PodDiagnoser:
    """A saved log, read in blocks of BLOCK_BYTES (never held whole). Raises OSError.

    With a `grep` on PATH (and `use_grep`), one `grep -n -F -i` process screens the file for the
    codes' needles while Python reads the blocks only to count lines, follow the transport and
    keep the newest records; the candidate lines grep prints are merged in by their number. If
    grep cannot run, fails (exit 2) or its output does not fit, the file is read again by the
    Python screen alone: both give the same result."""
    name = path.stem if pod is None else pod
    grep = shutil.which("grep") if use_grep else None
    if grep is not None:
        diagnoser = PodDiagnoser(name)
        try:
            diagnoser._grep = lines = _GrepLines(grep, path)
            try:
                _read_blocks(diagnoser, path)
                lines.close()
            finally:
                lines.stop()
            diagnoser._grep, diagnoser.screen = None, "grep"
            return diagnoser
        except (_GrepUnusable, OSError):
            pass  # the Python screen below (an unreadable file raises its OSError there)
    return _read_blocks(PodDiagnoser(name), path)


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

    slots = asyncio.Semaphore(MAX_CONCURRENT_PODS)

    async def read(diagnoser: PodDiagnoser) -> None:
        async with slots:
            stream = client.stream_logs(name, pod=diagnoser.pod, follow=False, tail=tail)
            try:
                async for line in stream:
                    diagnoser.feed(line)
            except RunaiError as exc:
                unavailable.append(make_finding("log-unavailable", diagnoser.pod, 0, exc.message))
            finally:
                with contextlib.suppress(Exception):
                    await stream.aclose()  # type: ignore[attr-defined]

    await asyncio.gather(*(read(d) for d in diagnosers))
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
