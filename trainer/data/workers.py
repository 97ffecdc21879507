"""DataLoader worker processes that always end.

A worker is forked from a process with threads, so once in a while the child blocks for good
inside the fork, before any worker code runs: CPython 3.11.7 (gh-112275) takes the interpreter's
thread-state lock in the child before resetting it, and gloo's threads hold that lock whenever
they enter Python (a future's ``.then`` callback, as DDP's communication hook uses). DataLoader's
shutdown cannot end such a worker: it joins, then sends SIGTERM, and a process blocked in C with
the trainer's Python SIGTERM handler (inherited) only sets a flag. At exit multiprocessing joins
every child without a timeout, so the rank would never exit.

``LoaderWorkers`` notes the processes a loader's iterator starts (the children that appear while
it is created) and, once that iterator is gone, kills (SIGKILL) and reaps any of them still alive
after a short join, saying so in one line on stderr. Processes started before (another loader's
workers) are never touched.
"""

from __future__ import annotations

import multiprocessing
import sys
import weakref
from collections.abc import Iterator
from multiprocessing.process import BaseProcess
from typing import Any

from torch.utils.data import DataLoader

JOIN_SECONDS = 2.0  # after DataLoader's own shutdown has joined its workers: a last wait


class LoaderWorkers:
    """The worker processes started by the loader iterators of one use ("evaluation",
    "training") on one rank."""

    def __init__(self, use: str, rank: int) -> None:
        self.use = use
        self.rank = rank
        self._started: list[tuple[weakref.ref[Iterator[Any]], list[BaseProcess]]] = []

    def start(self, loader: DataLoader) -> Iterator[Any]:
        """``iter(loader)``, noting the worker processes it starts."""
        before = {p.pid for p in multiprocessing.active_children()}
        iterator = iter(loader)
        new = [p for p in multiprocessing.active_children() if p.pid not in before]
        if new:
            self._started.append((weakref.ref(iterator), new))
        return iterator

    def reap(self, join_seconds: float = JOIN_SECONDS) -> list[int]:
        """Drop your reference to the iterator first: DataLoader shuts its workers down when its
        iterator is exhausted or goes. Then, for every noted iterator that is gone, kill and reap
        its workers still alive after ``join_seconds``; returns their pids. An iterator still
        held elsewhere (by an exception's traceback) stays noted: it still owns its workers, and
        killing one would make DataLoader report a worker killed by a signal."""
        killed: list[int] = []
        kept = []
        for ref, procs in self._started:
            if ref() is not None:
                kept.append((ref, procs))
                continue
            for proc in procs:
                proc.join(join_seconds)
                if proc.is_alive() and proc.pid is not None:
                    proc.kill()
                    proc.join()
                    killed.append(proc.pid)
                    print(
                        f"trainer: [rank {self.rank}] {self.use}: a DataLoader worker "
                        f"(pid {proc.pid}) did not exit; killed it",
                        file=sys.stderr,
                        flush=True,
                    )
        self._started = kept
        return killed
