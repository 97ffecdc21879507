"""DataLoader worker processes that always end.

A worker is forked from a process with threads, so once in a while the child blocks for good
inside the fork, before any worker code runs: CPython 3.11.7 (gh-112275) takes the interpreter's
thread-state lock in the child before resetting it, and gloo's threads hold that lock whenever
they enter Python (a future's ``.then`` callback, as DDP's communication hook uses). DataLoader's
shutdown cannot end such a worker: it joins, then sends SIGTERM, and a process blocked in C with
the trainer's Python SIGTERM handler (inherited) only sets a flag. At exit multiprocessing joins
every child without a timeout, so the rank would never exit.

``LoaderWorkers`` starts a loader's iterator and makes sure its workers got out of the fork:
each new worker checks in (a few bytes on a pipe, from its ``worker_init_fn``, the first thing a
worker runs); one that has not within ``CHECK_IN_SECONDS`` is stuck, and waiting on it would hang
the rank (its batches never come, the other ranks wait in the next collective). The stuck workers
are killed, the iterator dropped and started again, saying so in one line on stderr.

It notes the processes each iterator starts and, once that iterator is gone, kills (SIGKILL) and
reaps any of them still alive after a short join, saying so in one line on stderr. Processes
started before (another loader's workers) are never touched.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import select
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from multiprocessing.process import BaseProcess
from typing import Any

from torch.utils.data import DataLoader

from trainer.errors import TrainerError

JOIN_SECONDS = 2.0  # after DataLoader's own shutdown has joined its workers: a last wait
CHECK_IN_SECONDS = 30.0  # a fork takes milliseconds; a loaded host may delay a worker seconds
START_ATTEMPTS = 3


class _CheckIn:
    """A worker's ``worker_init_fn``: writes the worker's pid on the pipe, then runs the
    loader's own ``worker_init_fn``, if any."""

    def __init__(self, fd: int, inner: Callable[[int], None] | None) -> None:
        self.fd = fd
        self.inner = inner

    def __call__(self, worker_id: int) -> None:
        with contextlib.suppress(OSError):  # the parent stopped waiting: it kills this one
            os.write(self.fd, os.getpid().to_bytes(4, "little"))
        if self.inner is not None:
            self.inner(worker_id)


class LoaderWorkers:
    """The worker processes started by the loader iterators of one use ("evaluation",
    "training") on one rank."""

    def __init__(self, use: str, rank: int) -> None:
        self.use = use
        self.rank = rank
        self._started: list[tuple[weakref.ref[Iterator[Any]], list[BaseProcess]]] = []

    def start(self, loader: DataLoader) -> Iterator[Any]:
        """``iter(loader)`` once every worker it forks has checked in; a worker stuck in the
        fork is killed and the iterator started again (at most START_ATTEMPTS times). Not for
        ``persistent_workers``: the loader keeps such an iterator, and its workers, itself."""
        if loader.persistent_workers:
            raise ValueError("LoaderWorkers starts a loader's workers per iterator")
        for attempt in range(1, START_ATTEMPTS + 1):
            iterator, stuck = self._start_once(loader)
            if not stuck:
                return iterator
            pids = ", ".join(str(p.pid) for p in stuck)
            print(
                f"trainer: [rank {self.rank}] {self.use}: DataLoader worker(s) (pid {pids}) did "
                f"not start within {CHECK_IN_SECONDS:g} s (stuck in the fork); starting the "
                f"workers again ({attempt} of {START_ATTEMPTS})",
                file=sys.stderr,
                flush=True,
            )
            # The iterator goes first: DataLoader reports a worker killed while it is alive.
            # Its shutdown cannot end a worker stuck in the fork; reap() kills it.
            del iterator
            self.reap()
        raise TrainerError(
            f"{self.use}: the DataLoader's workers did not start in {START_ATTEMPTS} attempts; "
            "use fewer loader workers (0 starts none)"
        )

    def _start_once(self, loader: DataLoader) -> tuple[Iterator[Any], list[BaseProcess]]:
        """(the iterator, its workers that did not check in)."""
        if loader.num_workers == 0:
            return iter(loader), []
        before = {p.pid for p in multiprocessing.active_children()}
        read_fd, write_fd = os.pipe()
        own_init = loader.worker_init_fn
        loader.worker_init_fn = _CheckIn(write_fd, own_init)
        try:
            iterator = iter(loader)
        finally:
            loader.worker_init_fn = own_init
            os.close(write_fd)
        try:
            new = [p for p in multiprocessing.active_children() if p.pid not in before]
            self._started.append((weakref.ref(iterator), new))
            started = _checked_in(read_fd, len(new), CHECK_IN_SECONDS)
        finally:
            os.close(read_fd)
        return iterator, [p for p in new if p.pid not in started]

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


def _checked_in(fd: int, count: int, seconds: float) -> set[int]:
    """The pids read from FD until COUNT have come or SECONDS have passed."""
    deadline = time.monotonic() + seconds
    data = b""
    while len(data) < 4 * count:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 4 * count - len(data))
        if not chunk:  # every write end closed: a worker died before checking in
            break
        data += chunk
    return {int.from_bytes(data[i : i + 4], "little") for i in range(0, len(data) - 3, 4)}
