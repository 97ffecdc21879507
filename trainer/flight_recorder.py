"""PyTorch's Flight Recorder, kept on for every distributed run, and its dumps next to the run.

torch records each collective (process group, sequence number, operation, sizes, state) in a ring
buffer of TORCH_FR_BUFFER_SIZE entries (older name TORCH_NCCL_TRACE_BUFFER_SIZE; 2000 when unset,
0 turns it off). With TORCH_FR_DUMP_ON_TIMEOUT=1 (older TORCH_NCCL_DUMP_ON_TIMEOUT) the NCCL
watchdog writes every rank's buffer to ``<TORCH_FR_DUMP_TEMP_FILE><rank>`` when a collective times
out. The trainer points that prefix at ``<output-dir>/flight-recorder/rank-`` and also writes the
file itself when a collective fails in Python (gloo has no watchdog dump) or SIGTERM arrives while
a collective is in flight. `runai-tui diagnose` reads the files and names the rank that hung.

Only this module touches torch's dump function, which is underscored (torch documents the Flight
Recorder and its variables, but the in-process dump has no public name yet): `_trace_bytes`.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import time
from dataclasses import dataclass

from trainer.files import atomic_open

DIR_NAME = "flight-recorder"
FILE_PREFIX = "rank-"
PREFIX_ENV = "TORCH_FR_DUMP_TEMP_FILE"


@dataclass
class _Recorder:
    rank: int
    backend: str
    path: str


_active: _Recorder | None = None


def dump_prefix(output_dir: str) -> str:
    return os.path.join(output_dir, DIR_NAME, FILE_PREFIX)


def prepare(output_dir: str) -> None:
    """Before the process group exists (torch reads the prefix when it builds it): aim the dumps
    at the run's directory unless the environment names another place, and remove this rank's
    dump of an earlier attempt so the directory only ever describes the latest one."""
    prefix = os.environ.setdefault(PREFIX_ENV, dump_prefix(output_dir))
    rank = os.environ.get("RANK", "")
    if rank.isdigit():
        # None yet, or not ours to remove: diagnose tells an older dump by its times.
        with contextlib.suppress(OSError):
            os.remove(prefix + rank)


def start(rank: int, backend: str) -> None:
    """After the process group is up: what `dump` needs to know."""
    global _active
    prefix = os.environ.get(PREFIX_ENV)
    _active = _Recorder(rank, backend, prefix + str(rank)) if prefix else None
    if prefix and rank == 0:  # `runai-tui diagnose JOB` learns from this line where to look
        print(
            f"trainer: flight recorder: a hang dumps each rank's collectives to {prefix}N",
            flush=True,
        )


def stop() -> None:
    global _active
    _active = None


def _trace_bytes(backend: str) -> bytes:
    """The recorder's buffer as torch pickles it (plain dicts, lists, strings and numbers).
    torch 2.15 has no public name for this: `_dump_nccl_trace` for NCCL (the one torch's Flight
    Recorder guide uses), `_dump_fr_trace` for the recorder gloo writes into."""
    from torch._C import _distributed_c10d as c10d

    if backend == "nccl":
        return c10d._dump_nccl_trace(includeStackTraces=False)  # type: ignore[attr-defined]  # built only with NCCL
    return c10d._dump_fr_trace(includeStackTraces=False, backend=backend)


def in_collective() -> bool:
    """True while some collective this rank entered has not completed."""
    if _active is None:
        return False
    try:
        status = pickle.loads(_trace_bytes(_active.backend)).get("pg_status", {})
    except Exception:  # noqa: BLE001 - a recorder that cannot answer is treated as idle
        return False
    return any(
        int(s.get("last_enqueued_collective", -1)) > int(s.get("last_completed_collective", -1))
        for s in status.values()
    )


def dump(reason: str) -> str | None:
    """Write this rank's buffer to its file (atomically); the path, or None if nothing was
    written. Never raises: it runs on the way out of a failure."""
    if _active is None:
        return None
    try:
        data = _trace_bytes(_active.backend)
        with atomic_open(_active.path) as f:
            f.write(data)
    except Exception as exc:  # noqa: BLE001
        print(f"trainer: [rank {_active.rank}] flight recorder dump failed: {exc}", flush=True)
        return None
    print(
        f"trainer: [rank {_active.rank}] flight recorder dump ({reason}): {_active.path}",
        flush=True,
    )
    return _active.path


SETTLE_SECONDS = 2.0


def dump_if_in_collective(reason: str, settle: float = SETTLE_SECONDS) -> str | None:
    """Dump if a collective is still in flight after `settle` seconds. On a preemption every
    rank gets SIGTERM and what is in flight completes within milliseconds (and gloo marks a
    finished collective completed a moment late): only a collective that stays open, one a rank
    never joined, is worth a dump."""
    deadline = time.monotonic() + settle
    while in_collective():
        if time.monotonic() >= deadline:
            return dump(reason)
        time.sleep(0.02)
    return None
