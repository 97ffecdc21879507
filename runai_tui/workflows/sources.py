"""The slices of the client that the workflows' passes use, in one place. RunaiClient has them
all; a pass names the slice it needs, so a test can hand it a small stand-in.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Protocol, runtime_checkable

from runai_tui.shapes.models import JobDetail


class Describes(Protocol):
    """describe: a job's state, pods and events."""

    async def adescribe(self, name: str) -> JobDetail: ...


class StreamsLogs(Protocol):
    """A pod's log as it arrives (follow=False: read once to its end)."""

    def stream_logs(
        self, name: str, pod: str | None = None, follow: bool = True, tail: int | None = None
    ) -> AsyncGenerator[str, None]: ...


@runtime_checkable
class ExecsInPods(Protocol):
    """A command's stdout, run in a pod."""

    async def aexec_output(
        self, name: str, pod: str | None, command: Sequence[str], timeout: float | None = None
    ) -> str: ...


class RunsHere(Protocol):
    """Whether a backend's pods run on this machine (the local cluster's do)."""

    @property
    def is_local(self) -> bool: ...


class LogSource(Describes, StreamsLogs, Protocol):
    """describe and the pods' logs: diagnose's pass, the trainer's records."""


class ExecSource(Describes, ExecsInPods, Protocol):
    """describe and a command in each pod: the probes (preflight, top)."""


class JobSource(ExecSource, StreamsLogs, Protocol):
    """What compare's read of a job needs: describe, a command in the master, the master's log
    read once, and where the pods run."""

    @property
    def backend(self) -> RunsHere: ...
