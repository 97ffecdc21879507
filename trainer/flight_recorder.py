"""PyTorch's Flight Recorder, kept on for every distributed run, and its dumps next to the run.

torch records each collective (process group, sequence number, operation, sizes, state) in a ring
buffer of TORCH_FR_BUFFER_SIZE entries (older name TORCH_NCCL_TRACE_BUFFER_SIZE; 2000 when unset,
0 turns it off). With TORCH_FR_DUMP_ON_TIMEOUT=1 (older TORCH_NCCL_DUMP_ON_TIMEOUT) the NCCL
watchdog writes every rank's buffer to ``<TORCH_FR_DUMP_TEMP_FILE><rank>`` when a collective times
out. The trainer points that prefix at ``<output-dir>/flight-recorder/rank-`` and also writes the
file itself when a collective fails in Python (gloo has no watchdog dump) or SIGTERM arrives while
a collective is in flight. `runai-tui diagnose` reads the files and names the rank that hung.

torch documents the Flight Recorder and its variables, but the in-process dump has no public
name yet, and its private entry points differ between builds: trainer/torch_private.py finds the
one this torch has. Where none works, the run says so in one line and torch's own watchdog dump
(NCCL) is all there is; a file torch itself wrote is never replaced.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist

from trainer import records, torch_private
from trainer.files import atomic_open_binary

DIR_NAME = records.DUMP_DIR
FILE_PREFIX = records.DUMP_FILE_PREFIX
PREFIX_ENV = "TORCH_FR_DUMP_TEMP_FILE"


@dataclass
class _Recorder:
    rank: int
    path: str
    dumper: torch_private.TraceDumper | None  # None: this torch has no in-process dump
    started: float  # time.time() when the group came up: a newer file at `path` is torch's own
    wrote: bool = False  # this process wrote `path` itself (a later dump may replace its own)


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
    """After the process group is up: find this torch's dump entry point, and what `dump` needs
    to know. Rank 0 says where the dumps go, or in one line why this torch has none."""
    global _active
    _active = None
    prefix = os.environ.get(PREFIX_ENV)
    if not prefix:
        return
    dumper = torch_private.find_trace_dumper(backend)
    _active = _Recorder(rank, prefix + str(rank), dumper, time.time())
    if rank != 0:
        return
    # `runai-tui diagnose JOB` learns from this line where to look (torch's own dumps go there too)
    if dumper is None:
        line = torch_private.unavailable_line(torch.__version__)
        print(f"trainer: {line}, to {prefix}N", flush=True)
    else:
        print(
            f"trainer: flight recorder: a hang dumps each rank's collectives to {prefix}N",
            flush=True,
        )


def stop() -> None:
    global _active
    _active = None


def in_collective() -> bool:
    """True while some collective this rank entered has not completed."""
    if _active is None or _active.dumper is None:
        return False
    try:
        status = pickle.loads(_active.dumper.read()).get("pg_status", {})
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
    if _written_by_torch(_active):
        print(
            f"trainer: [rank {_active.rank}] flight recorder dump (torch's watchdog): "
            f"{_active.path}",
            flush=True,
        )
        return _active.path
    if _active.dumper is None:
        return None
    try:
        data = _with_world_size(_active.dumper.read())
        with atomic_open_binary(_active.path) as f:
            f.write(data)
        _active.wrote = True
    except Exception as exc:  # noqa: BLE001
        print(f"trainer: [rank {_active.rank}] flight recorder dump failed: {exc}", flush=True)
        return None
    print(
        f"trainer: [rank {_active.rank}] flight recorder dump ({reason}): {_active.path}",
        flush=True,
    )
    return _active.path


def _with_world_size(data: bytes) -> bytes:
    """The dump with the job's world size added: some builds leave a group's `ranks` empty in
    `pg_config`, and then one dump alone cannot say which ranks are missing."""
    if not dist.is_available() or not dist.is_initialized():
        return data
    trace = pickle.loads(data)
    trace.setdefault("world_size", dist.get_world_size())
    return pickle.dumps(trace)


def _written_by_torch(recorder: _Recorder) -> bool:
    """torch's watchdog (NCCL, TORCH_FR_DUMP_ON_TIMEOUT) already wrote this rank's file during
    this run: it saw the timeout from inside, so it is kept rather than written over."""
    if recorder.wrote:
        return False
    try:
        return os.stat(recorder.path).st_mtime >= recorder.started
    except OSError:
        return False


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
