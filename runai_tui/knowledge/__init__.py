"""The operator's knowledge: what a profile will do (checks, plan), what the trainer prints
(trainer_facts, progress) and what a running or failed job says about itself (diagnose,
preflight). Pure functions over profiles, records and log lines; no UI."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Protocol

from runai_tui.shapes.errors import ErrorKind, RunaiError

if TYPE_CHECKING:
    from runai_tui.shapes.models import JobDetail, Pod

MAX_CONCURRENT_PODS = 8  # per-pod commands (`runai logs`, `runai exec`) at once for one job


class ExecSource(Protocol):
    """What the passes that run a probe in a job's pods (preflight, top) need of the client."""

    async def adescribe(self, name: str) -> JobDetail: ...

    async def aexec_output(
        self, name: str, pod: str | None, command: Sequence[str], timeout: float | None = None
    ) -> str: ...


class RunsHere(Protocol):
    """Whether a backend's pods run on this machine (the local cluster's do)."""

    @property
    def is_local(self) -> bool: ...


class JobSource(ExecSource, Protocol):
    """What compare's read of a job needs of the client (workflows/run_sources.py): describe,
    a command in the master, the master's log read once, and where the pods run."""

    @property
    def backend(self) -> RunsHere: ...

    def stream_logs(
        self, name: str, pod: str | None = None, follow: bool = True, tail: int | None = None
    ) -> AsyncGenerator[str, None]: ...


def pods_to_probe(detail: JobDetail, pod: str | None) -> list[Pod]:
    """The job's pods, or only the one named: RunaiError (not found) listing its pods when the job
    has no pod of that name."""
    pods = [p for p in detail.pods if pod is None or p.name == pod]
    if pod is not None and not pods:
        known = ", ".join(p.name for p in detail.pods) or "none"
        raise RunaiError(
            ErrorKind.NOT_FOUND, f"job {detail.job.name!r} has no pod {pod!r}", f"its pods: {known}"
        )
    return pods
