"""A slow node's CPU quota: its pods run for their share of each period and are stopped for the rest.

`slow_nodes` in local.yaml marks nodes whose pods get a fraction of the CPU, as a container
throttled by its CPU limit does. The kernel enforces a limit in periods of 100 ms (CFS
bandwidth control); this does the same with SIGSTOP and SIGCONT from a thread of the job's
supervisor. The period has to be as short as the kernel's: a step of a small job takes tens of
milliseconds, and a coarser cycle lets whole forward passes run unthrottled between two stops.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

from runai_local import state

PERIOD_SECONDS = 0.1  # as the kernel's CFS period
REFRESH_SECONDS = 1.0  # a pod's processes (DataLoader workers come and go) are looked up this often


class Throttle:
    """Duty-cycles the processes of each pod in SHARES (pod name -> CPU share, 0 to 1)."""

    def __init__(self, jobdir: Path, shares: dict[str, float]) -> None:
        self.jobdir = jobdir
        # The pods stopped first come first: each is stopped at its share of the period.
        self.shares = sorted(shares.items(), key=lambda item: item[1])
        # pid -> its start time: a pid that ends and is reused by another process before the
        # next lookup must not be stopped (a stretched period can make that a long while).
        self._pids: dict[str, dict[int, int]] = {}
        self._lock = threading.Lock()  # the pid lists, between the cycle and stop()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._cycle, name="throttle", daemon=True)

    def start(self) -> None:
        if self.shares:
            self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """End the cycle and let every process run (a stopped process would hold its TERM)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()
        with self._lock:
            for pids in self._pids.values():
                state.signal_pids(list(pids), signal.SIGCONT)

    def _cycle(self) -> None:
        looked_up = float("-inf")
        while not self._stopping.is_set():
            if time.monotonic() - looked_up >= REFRESH_SECONDS:
                looked_up = time.monotonic()
                found = {
                    pod: _started(state.processes_of_job(self.jobdir, pod))
                    for pod, _ in self.shares
                }
                with self._lock:
                    # A pid stopped last period and not found now (gone, or its number taken
                    # by another process) is continued once, or it would stay stopped for good.
                    for pod, pids in self._pids.items():
                        kept = found.get(pod, {})
                        state.signal_pids([p for p in pids if p not in kept], signal.SIGCONT)
                    self._pids = found
            with self._lock:
                for pids in self._pids.values():
                    state.signal_pids(list(pids), signal.SIGCONT)
            started = time.monotonic()
            end = started + PERIOD_SECONDS
            for pod, share in self.shares:
                if self._stopping.wait(started + share * PERIOD_SECONDS - time.monotonic()):
                    return
                with self._lock:
                    pids = self._pids.get(pod, {})
                    state.signal_pids(
                        [p for p, t in pids.items() if state.proc_start_ticks(p) == t],
                        signal.SIGSTOP,
                    )
                # On a busy host this thread wakes late and the pod runs past its share; the
                # period is stretched so that the pod's share of it stays what the node allows.
                end = max(end, started + (time.monotonic() - started) / share)
            if self._stopping.wait(end - time.monotonic()):
                return


def _started(pids: list[int]) -> dict[int, int]:
    """pid -> start time, for the pids still alive."""
    found = {pid: state.proc_start_ticks(pid) for pid in pids}
    return {pid: start for pid, start in found.items() if start is not None}
