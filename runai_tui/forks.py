"""Forked copies of this process for CPU-bound work over the cores (`diagnose --log` over a big
file). The only other place that starts processes is runai_tui/runai/runner.py (commands); this module
imports no asyncio, so a headless command that uses it starts fast."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

_T = TypeVar("_T")
_R = TypeVar("_R")


def forked_map(fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R] | None:
    """[fn(item) for item in items], the first in this process and each other in a forked child
    at the same time (CPU-bound work over the cores: `diagnose --log` over a big file). Results
    and exceptions come back pickled through a pipe; a child that dies without one has its item
    run here. None where forking is unsafe: not Linux, or this process runs other threads (a
    forked child gets only the calling thread, and locks held by the others stay held)."""
    if sys.platform != "linux" or threading.active_count() > 1 or len(items) < 2:
        return None
    children: list[tuple[int, int]] = []  # (pid, read end of its pipe)
    try:
        for item in items[1:]:
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: compute, send, and leave without running any cleanup
                status = 1
                try:
                    os.close(read_end)
                    try:
                        outcome: tuple[bool, Any] = (True, fn(item))
                    except Exception as exc:  # sent to the parent, raised there
                        outcome = (False, exc)
                    with os.fdopen(write_end, "wb") as pipe:
                        pickle.dump(outcome, pipe, protocol=pickle.HIGHEST_PROTOCOL)
                    status = 0
                finally:
                    os._exit(status)
            os.close(write_end)
            children.append((pid, read_end))
        results = [fn(items[0])]
        for (pid, read_end), item in zip(children, items[1:], strict=True):
            with os.fdopen(read_end, "rb") as pipe:
                data = pipe.read()
            os.waitpid(pid, 0)
            children = [c for c in children if c[0] != pid]
            if not data:  # the child died (killed, out of memory): do its part here
                results.append(fn(item))
                continue
            ok, value = pickle.loads(data)
            if not ok:
                raise value
            results.append(value)
        return results
    finally:
        for pid, read_end in children:  # an error or Ctrl-C here: end the children
            with contextlib.suppress(OSError):
                os.close(read_end)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
