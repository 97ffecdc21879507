"""How fast `runai-tui diagnose` reads a streamed log (`diagnose JOB`: lines as `runai logs`
prints them), through each line prefilter, and that its memory stays flat. Prints figures.

    python benchmarks/diagnose_throughput.py [MEGABYTES]   (default 1024)

Two generated logs, made line by line as they are read (never held): a clean NCCL_DEBUG=INFO-like
training log (channel lines, trainer records every 20 lines, long progress lines), and the same
with a watchdog timeout every 50 lines (many candidate lines to decode and match).
"""

from __future__ import annotations

import itertools
import resource
import sys
import time
from collections.abc import Iterator

from runai_tui.knowledge.diagnose import PodDiagnoser, combine

CLEAN = [
    "host:312:340 [0] NCCL INFO Channel 00/0 : 2[0] -> 0[0] [receive] via NET/IB/0/GDRDMA",
    "epoch 3 step 1000 " + "y" * 400,
]
RECORD = (
    '{"kind": "train", "step": 40, "epoch": 0, "loss": 1.3, "lr": 0.01, "data_time": 0.02, '
    '"step_time": 0.5, "time": 1795000010.0}'
)
TIMEOUT = (
    "[rank1]:[E1123 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=2144, OpType=ALLREDUCE) ran for 1800087 milliseconds before timing out."
)


def lines(megabytes: int, noisy: bool) -> Iterator[str]:
    size, target = 0, megabytes * 2**20
    for i in itertools.count():
        if noisy and i % 50 == 0:
            line = TIMEOUT
        elif i % 20 == 0:
            line = RECORD
        else:
            line = CLEAN[i % 2]
        size += len(line) + 1
        if size > target:
            return
        yield line


def main() -> None:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    for hyperscan in (True, False):
        for noisy in (False, True):
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            started = time.perf_counter()
            pod = PodDiagnoser("bench", hyperscan=hyperscan).feed_all(lines(megabytes, noisy))
            report = combine([pod])
            elapsed = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print(
                f"{pod.prefilter.name} prefilter, {'noisy' if noisy else 'clean'} log: {megabytes} MB, "
                f"{pod.lines} lines in {elapsed:.2f} s = {megabytes / elapsed:.0f} MB/s; peak RSS "
                f"{before / 1024:.1f} -> {after / 1024:.1f} MB; findings kept "
                f"{len(report.findings)}"
            )


if __name__ == "__main__":
    main()
