"""The diagnose code table: every kind of finding, what it means and how to fix it.

`CODES` is the one table the diagnoser, the CLI (`runai-tui diagnose`), the TUI's health panel
and docs/health.md read. A row with a `pattern` is found line by line: the line prefilter
(prefilter.py) lets through every line holding one of the row's `needles`, and the pattern decides.
A row without a pattern is found by a detector (detectors.py) from what the pods' logs said as
a whole (the transport, the trainer's records, the job, describe's events).

Every row also says what a retry can do about its fault (`retry`, the retry catalogue that
`runai-tui watch --recover` follows and docs/health.md lists): RUN_AGAIN (the node or the network
failed, not the job: the same submission, resumed from its checkpoints, can pass), REMEDY (the
same submission fails the same way; a remedy, applied with --apply-remedies, changes the cause)
or NEVER (no retry helps: the input, the code or the data must change, or a person must look).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from runai_tui.knowledge.findings import (
    ERROR,
    FIX_MEMLOCK,
    FIX_SHM,
    INFO,
    WARNING,
    Finding,
    Severity,
)
from runai_tui.knowledge.records.stragglers import FIX as STRAGGLER_FIX

EVIDENCE_MAX = 300  # characters of an evidence line that are kept

Retry = Literal["run again", "needs a remedy", "never"]
RUN_AGAIN: Retry = "run again"
REMEDY: Retry = "needs a remedy"
NEVER: Retry = "never"
# What each kind means, as the watcher says it when it acts on it or stops.
RETRY_MEANS: dict[Retry, str] = {
    RUN_AGAIN: "a fault of a node or the network, not of the job: the same submission, resumed "
    "from its checkpoints, can pass",
    REMEDY: "the same submission fails the same way: a remedy (--apply-remedies) changes the cause",
    NEVER: "no retry helps: the job's input, code or data must change, or a person must look",
}


@dataclass(frozen=True)
class Code:
    """One kind of finding. `pattern` finds it in a line; `needles` (any case) are in every line
    the pattern finds, so a line without one of them is never matched against it."""

    code: str
    severity: Severity
    retry: Retry  # what a retry can do about it (the retry catalogue)
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
            REMEDY,
            "NCCL could not register memory for RDMA (ibv_reg_mr failed): the locked-memory "
            "limit (memlock) is too low, so IB fails or falls back to TCP",
            FIX_MEMLOCK + "; check with `runai-tui preflight JOB`",
            "host-1:312:340 [0] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_reg_mr failed "
            "with error Cannot allocate memory",
            _re(r"\bibv_reg_mr\w*(?:\(\))? failed|Call to ibv_reg_mr\w* failed"),
            ("ibv_reg_mr",),
        ),
        Code(
            "tcp-fallback",
            WARNING,
            REMEDY,
            "InfiniBand/RoCE was asked for but NCCL uses sockets (TCP): all-reduce is far slower",
            "check NCCL_IB_HCA matches a device in /sys/class/infiniband, the RDMA resource "
            "(openshift.io/mlxrdma) and IPC_LOCK are granted, memlock is unlimited; "
            "`runai-tui preflight JOB` checks the pod",
            "host-1:312:312 [0] NCCL INFO NET/Socket : Using [0]net1:10.0.0.2<0>",
        ),
        Code(
            "nccl-timeout",
            ERROR,
            RUN_AGAIN,
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
            RUN_AGAIN,
            "an NCCL call failed (system, remote or internal error): a peer died, the network "
            "dropped, or NCCL could not set up its transport",
            "read the NCCL WARN lines just above it and the other pods' first error (a rank that "
            "died makes its peers fail); NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET says more",
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for "
            "details), NCCL version 2.21.5",
            _re(
                r"NCCL error in: |\bnccl(?:System|Internal|Remote|InvalidUsage)Error\b|"
                r"unhandled (?:system|cuda) error|"
                # every format of NCCL's IB completion error (src/transport/net_ib.cc; from
                # 2.29 net_ib/p2p.cc and gin.cc): `NET/IB : ... with error 12, opcode` (to
                # 2.19), `NET/IB : ... with status=12 opcode=` (2.20-2.27), `NET/IB: ... with
                # status=IBV_WC_RETRY_EXC_ERR(12)` (2.28 on), `NET/IB/GIN: ...`
                r"NET/IB\w*(?:/GIN)? ?: ?Got completion from peer .* with (?:error \d|status=)"
            ),
            ("error", "completion"),
        ),
        Code(
            "shm",
            ERROR,
            REMEDY,
            "a DataLoader worker or NCCL ran out of shared memory (/dev/shm)",
            FIX_SHM + " (the trainer's --workers), or a lower --prefetch-factor",
            "ERROR: Unexpected bus error encountered in worker. This might be caused by "
            "insufficient shared memory (shm).",
            _re(
                r"Unexpected bus error encountered in worker|insufficient shared memory|"
                r"killed by signal: Bus error|failed to extend /dev/shm|"
                r"unable to (?:write to|allocate shared memory\(shm\) for) file </torch_\d+"
            ),
            ("bus error", "shared memory", "/dev/shm", "</torch_"),
        ),
        Code(
            "cuda-oom",
            ERROR,
            REMEDY,
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
            RUN_AGAIN,
            "a pod could not reach the master (rendezvous / TCP store): the workers cannot "
            "join the job",
            "check the master pod is running and MASTER_ADDR/MASTER_PORT resolve and answer "
            "from the workers (`runai-tui preflight JOB`); a NetworkPolicy or a wrong "
            "NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME also blocks it",
            "torch.distributed.DistNetworkError: The client socket has timed out after 1800s "
            "while trying to connect to (10.0.0.1, 29500).",
            # A C++ frame line ("frame #2: c10::DistNetworkError::DistNetworkError(...)") names
            # the exception's constructor, not a failure; the exception's own line follows it.
            # A c10d rendezvous the master hosts is gone once the master's agent has ended: a
            # worker's agent then fails to *shut down* the rendezvous, or to send it a keep-alive
            # heartbeat, after its workers finished: warnings of a completed run, not a pod that
            # could not join (an agent that really loses the store ends in an error line).
            _re(
                r"^(?!\s*frame #\d+:)"
                r"(?!.*has failed to (?:shutdown the rendezvous|send a keep-alive heartbeat))"
                r".*?(?:DistNetworkError|The client socket has timed out "
                r"after \d+\S* while trying to connect|RendezvousTimeoutError|"
                r"RendezvousConnectionError|DistStoreError)"
            ),
            ("error", "client socket has timed out", "Rendezvous"),
        ),
        Code(
            "exit-barrier",
            INFO,
            RUN_AGAIN,
            "torchrun's agent on this pod found the master's store closed in its exit barrier: "
            "the master pod ended first. Harmless: this pod's workers had finished; the error "
            "lines after it are that barrier's",
            "nothing to do when the job completed; if it failed, look for the first error on "
            "every pod",
            "E1126 13:24:46.301000 14196 torch/distributed/elastic/agent/server/api.py:1008] "
            "Error waiting on exit barrier. Elapsed: 0.028904199600219727 seconds",
            _re(r"Error waiting on exit barrier"),
            ("exit barrier",),
        ),
        Code(
            "socket-ifname",
            ERROR,
            REMEDY,
            "the network interface that GLOO_SOCKET_IFNAME or NCCL_SOCKET_IFNAME names does not "
            "exist in the pod: the process group cannot start",
            "set the variable to an interface the pod has (`runai-tui preflight JOB` lists them; "
            "eth0 is the pod network), or delete it to let Gloo/NCCL choose",
            "RuntimeError: [enforce fail at third_party/gloo/gloo/transport/tcp/device.cc:84] "
            "ifa != nullptr. Unable to find address for: net1",
            _re(
                r"Unable to find address for: \S|NCCL WARN Bootstrap : no socket interface found|"
                r"no socket interface found"
            ),
            ("unable to find address for", "no socket interface found"),
        ),
        Code(
            "dataloader-killed",
            ERROR,
            REMEDY,
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
            NEVER,
            "the loss or the gradients became NaN or infinite: training diverged, or a "
            "precision's kernels failed (the trainer's line names the precision and the step)",
            "lower --lr (or raise --warmup-steps), use --clip-grad, or --amp bf16 instead "
            "of fp16; resume from the last good checkpoint",
            "trainer: error: [rank 0] non-finite loss nan at step 1342 (epoch 2, fp16 on cuda: "
            "classification=nan, bbox_regression=0.41); the step was not applied to the weights; "
            "try --amp bf16 (fp16's narrow range overflows), lower --lr or use --clip-grad",
            _re(r"non-finite (?:loss -?(?:nan|inf)|gradient at step)"),
            # One needle for both lines: the Hyperscan pass is a tenth faster than with the two
            # (docs/performance.md, diagnose).
            ("non-finite",),
        ),
        Code(
            "trainer-error",
            ERROR,
            NEVER,
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
            NEVER,
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
            NEVER,
            "the GPUs wait for data: data wait is more than a third of the step time",
            "raise the trainer's --workers (and --prefetch-factor), keep the dataset on fast "
            "storage, or give the pod more CPU",
            '{"kind": "train", "step": 40, "epoch": 0, "loss": 1.1, "lr": 0.01, '
            '"images_per_sec": 12.0, "data_time": 0.61, "step_time": 1.02, "time": 1795000000.0}',
        ),
        Code(
            "straggler",
            WARNING,
            REMEDY,
            "one rank is slower than the others (its median step or forward time at least 1.5x "
            "theirs), or its data wait dominates its step: the whole job runs at its pace",
            STRAGGLER_FIX,
            "rank 1: median step 2.224 s against 1.955 s for the other ranks (1.14x); data wait "
            "0.001 s a step (0% of its step); forward 0.408 s against 0.159 s (2.56x), over the "
            "newest 6 records",
        ),
        Code(
            "wire-slow",
            WARNING,
            NEVER,
            "the wire check's all-reduce moved less than half of what the link the pods read "
            "should carry (busbw against /sys/class/net/IF/speed, or the RDMA port's rate): "
            "every step's gradient all-reduce pays for it",
            "on TCP raise NCCL_SOCKET_NTHREADS / NCCL_NSOCKS_PERTHREAD (a `runai-tui burnin "
            "--set env.NCCL_SOCKET_NTHREADS=4` run shows what moves more) and check "
            "NCCL_SOCKET_IFNAME names the fast NIC; on RDMA check NET/IB is in use, "
            "NCCL_IB_GID_INDEX, and PFC/ECN on the switch; the slowest pair names the link",
            "all-reduce busbw 0.8 GB/s (6.4 Gb/s) at 138.8 MiB is 26% of the 25 Gb/s tcp link "
            "the pods read (under 50%); slowest pair ranks 1-2 (pods j-worker-0 / j-worker-1, "
            "nodes node-b / node-c): 0.9 GB/s",
        ),
        Code(
            "wire-slow-pair",
            WARNING,
            REMEDY,
            "one pair of neighbouring ranks moved data at least 3x slower than the other pairs "
            "of its kind (their upper median; pairs between pods and pairs inside a pod are "
            "compared apart) in the wire check: a slow link, NIC or node",
            "check the named node's NIC and cable (link speed, errors: `runai-tui preflight JOB`) "
            "and its switch port; resubmit off that node (exclude_node) until it is fixed",
            "pair ranks 1-2 (pods j-worker-0 / j-worker-1, nodes node-b / node-c): 0.05 GB/s, "
            "16.0x slower than the upper median 0.8 GB/s of the other pairs between pods; rank "
            "2 (node node-c) has the slower pairs: 0.07 GB/s on average",
        ),
        Code(
            "pod-lost",
            ERROR,
            RUN_AGAIN,
            "a pod was killed from outside while the job ran (its node lost or rebooted, an "
            "eviction, a SIGKILL): nothing in the logs says the training itself failed",
            "submit it again: it resumes from the newest checkpoint (`runai-tui watch JOB "
            "--recover` does it unattended); if it keeps happening on one node, exclude it "
            "(exclude_node)",
            "PodFailed: pod retinanet-tcp-worker-1 killed by SIGKILL",
        ),
        Code(
            "stalled",
            ERROR,
            RUN_AGAIN,
            "the job is Running but the trainer stopped reporting: it is probably hung",
            "look for the first error on every pod (nccl-timeout, rendezvous...), check the "
            "pods' transport; delete and resubmit to resume from the last checkpoint",
            '{"kind": "train", "step": 880, "epoch": 1, "loss": 0.7, "time": 1795000000.0}',
        ),
        Code(
            "pending",
            WARNING,
            REMEDY,
            "the job waits: the cluster cannot schedule or start a pod (the evidence says why)",
            "follow the fix given with the reason",
            "FailedScheduling: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
        ),
        Code(
            "log-unavailable",
            INFO,
            RUN_AGAIN,
            "this pod's log could not be read",
            "wait for the pod to start, or check it with `runai-tui describe JOB`",
            "pod retinanet-tcp-worker-1 has not started yet",
        ),
        Code(
            "hang-rank",
            ERROR,
            REMEDY,
            "the Flight Recorder dumps name the rank that never entered a collective the others "
            "waited in (knowledge/records/flight_recorder.py)",
            "look at that rank's pod and node first: its log's last lines, preflight on it",
            "rank 0 group 0: entered 3, completed 2; rank 1 group 0: entered 2, completed 2",
        ),
        Code(
            "flight-recorder-unreadable",
            WARNING,
            NEVER,
            "the job's Flight Recorder dumps could not be judged",
            "copy the dump directory and run `runai-tui diagnose --flight-recorder DIR`",
            "/data/runs/x/flight-recorder/rank-1: truncated or not a Flight Recorder dump",
        ),
    )
}


# The codes found line by line, in table order, with their needles in lower case.
LINE_CODES: tuple[tuple[Code, tuple[str, ...]], ...] = tuple(
    (c, tuple(n.lower() for n in c.needles)) for c in CODES.values() if c.pattern is not None
)


def prefilter_needles() -> tuple[str, ...]:
    """What the line prefilter looks for (any case): every line code's needles, less those that
    hold a shorter one (`bus error` holds `error`): the fewer, the faster the prefilter."""
    every = sorted({n for _, needles in LINE_CODES for n in needles}, key=len)
    kept: list[str] = []
    for needle in every:
        if not any(k in needle for k in kept):
            kept.append(needle)
    return tuple(kept)


def line_codes(line: str) -> tuple[str, ...]:
    """The codes whose pattern finds `line`, in table order."""
    lower = line.lower()
    codes = tuple(
        spec.code
        for spec, needles in LINE_CODES
        if any(n in lower for n in needles) and spec.pattern and spec.pattern.search(line)
    )
    if len(codes) > 1 and "trainer-error" in codes:  # a more specific code explains it
        codes = tuple(c for c in codes if c != "trainer-error")
    return codes


def make_finding(code: str, pod: str, line: int, evidence: str) -> Finding:
    """A finding of `code` (its table row's severity, message and fix) in `pod`'s log."""
    spec = CODES[code]
    return Finding(
        code, spec.severity, spec.message, spec.fix, pod=pod, line=line, evidence=cut(evidence)
    )


def cut(text: str, limit: int = EVIDENCE_MAX) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= limit else text[:limit] + " …"
