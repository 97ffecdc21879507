"""An in-process stand-in for RunaiClient with the contract's async methods, for unit-level
Pilot tests of widgets and flows. The main flows run against the real local cluster instead."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from runai_tui.runai.backend import Backend
from runai_tui.runai.client import SubmitResult
from runai_tui.runai.installed import Capabilities
from runai_tui.shapes.cli_generations import CliVersion, classify
from runai_tui.shapes.errors import ErrorKind, RunaiError
from runai_tui.shapes.models import Event, Job, JobDetail, Phase, Pod

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=timezone.utc)


def make_job(name: str, phase: Phase = Phase.RUNNING, age_s: int = 300, pods: int = 3) -> Job:
    return Job(
        name=name,
        phase=phase,
        project="team-a",
        type="Training",
        framework="PyTorch",
        running_pods=pods if phase is Phase.RUNNING else 0,
        requested_pods=pods,
        gpus=2.0,
        created=NOW - timedelta(seconds=age_s),
    )


@dataclass
class FakeClient:
    jobs: list[Job] = field(default_factory=list)
    logs: dict[str, list[str]] = field(default_factory=dict)  # pod -> initial lines
    project: str = "team-a"
    backend: Backend = field(default_factory=lambda: Backend("local", ["runai-local"]))
    fail_list: RunaiError | None = None
    calls: list[tuple] = field(default_factory=list)
    queues: dict[str, asyncio.Queue] = field(default_factory=dict)
    log_failures: int = 0  # the next N log streams fail as if the pod had not started
    probes: dict[str, str] = field(default_factory=dict)  # pod -> what a non-TTY exec prints
    resources: dict[str, str] = field(default_factory=dict)  # pod -> what the `top` probe prints
    # What the runai CLI accepts: unknown (every verb offered) unless a test says otherwise.
    capabilities: Capabilities = field(default_factory=lambda: Capabilities(["runai-local"]))

    async def acapabilities(self, *keys: str) -> Capabilities:
        return self.capabilities

    def job(self, name: str) -> Job:
        for job in self.jobs:
            if job.name == name:
                return job
        raise RunaiError(ErrorKind.NOT_FOUND, f"workload '{name}' could not be found", "check it")

    def push(self, pod: str, *lines: str) -> None:
        """Lines a following stream of `pod` receives next."""
        queue = self.queues.setdefault(pod, asyncio.Queue())
        for line in lines:
            queue.put_nowait(line)

    async def alist_jobs(self) -> list[Job]:
        self.calls.append(("list",))
        if self.fail_list is not None:
            raise self.fail_list
        return list(self.jobs)

    async def adescribe(self, name: str) -> JobDetail:
        self.calls.append(("describe", name))
        job = self.job(name)
        pods = [Pod(f"{name}-master-0", job.phase, "local", role="master")]
        pods += [
            Pod(f"{name}-worker-{i}", job.phase, "local", role="worker")
            for i in range((job.requested_pods or 1) - 1)
        ]
        events = [Event("2026-11-22T11:55:00Z", "Normal", "Submitted", f"job {name} submitted")]
        return JobDetail(
            job=job,
            pods=pods,
            events=events,
            resources={"gpus": 2},
            notes=["--large-shm has no effect on the local cluster"],
            raw={"name": name, "phase": job.phase.value},
        )

    async def asubmit(self, argv: list[str]) -> SubmitResult:
        self.calls.append(("submit", argv))
        name = argv[4]
        self.jobs.append(make_job(name, Phase.PENDING, age_s=0))
        return SubmitResult(name=name, output=f"Creating pytorch training {name}...")

    async def adelete(self, name: str) -> str:
        self.calls.append(("delete", name))
        self.job(name)  # an unknown job fails as the CLI does
        self.jobs = [job for job in self.jobs if job.name != name]
        return f"deleted {name}"

    async def _set_phase(self, verb: str, name: str, phase: Phase) -> str:
        self.calls.append((verb, name))
        job = self.job(name)
        self.jobs = [make_job(name, phase) if j is job else j for j in self.jobs]
        return ""

    async def asuspend(self, name: str) -> str:
        return await self._set_phase("suspend", name, Phase.STOPPED)

    async def aresume(self, name: str) -> str:
        return await self._set_phase("resume", name, Phase.RUNNING)

    async def awhoami(self) -> str:
        return "alice"

    async def acli_version(self) -> CliVersion:
        return classify("Version: 2.20.0")

    async def aprojects(self) -> list[str]:
        self.calls.append(("projects",))
        return ["team-a", "team-b"]

    async def stream_logs(
        self,
        name: str,
        pod: str | None = None,
        follow: bool = True,
        tail: int | None = None,
        since: str | None = None,
        previous: bool = False,
    ) -> AsyncIterator[str]:
        self.calls.append(("logs", name, pod, follow))
        if self.log_failures > 0:
            self.log_failures -= 1
            raise RunaiError(ErrorKind.OTHER, f"pod {pod} has not started yet", "wait for it")
        key = pod or f"{name}-master-0"
        if previous:
            key += ".previous"
        lines = self.logs.get(key, [])
        for line in lines[-tail:] if tail else [] if tail == 0 else lines:
            yield line
        if previous:
            return
        if follow:
            queue = self.queues.setdefault(key, asyncio.Queue())
            while True:
                yield await queue.get()

    async def aexec_output(self, name, pod, command, timeout=None) -> str:
        from runai_tui.knowledge.probes.resources import COMMAND

        if list(command) == COMMAND:  # the resources probe (describe's panel, GPU UTIL)
            self.calls.append(("resources_output", name, pod))
            if pod not in self.resources:
                raise RunaiError(ErrorKind.OTHER, f"pod {pod} has no cgroup", "none")
            return self.resources[pod]
        self.calls.append(("exec_output", name, pod))
        if pod not in self.probes:
            raise RunaiError(ErrorKind.OTHER, f"pod {pod} is not running", "wait for it")
        return self.probes[pod]

    def exec_argv(self, name, pod=None, command=None, tty=True) -> list[str]:
        return ["runai-local", "training", "pytorch", "exec", name, "--", "sh"]


class RecordingRunner:
    """Replaces InteractiveRunner: records argv; `edits` are texts written by the fake editor."""

    def __init__(self, edits: list[str] | None = None, code: int = 0) -> None:
        self.runs: list[list[str]] = []
        self.edits = list(edits or [])
        self.edited: list[str] = []
        self.code = code

    def run(self, argv: list[str]) -> int:
        self.runs.append(list(argv))
        return self.code

    def edit(self, path) -> int:
        self.edited.append(path.read_text())
        if self.edits:
            path.write_text(self.edits.pop(0))
        return self.code
