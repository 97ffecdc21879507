"""The probes run in a job's pods through the client (`top`, `preflight`): every running pod, or
the one named, a few at a time (`probe_pods`), and `top`'s pass. What a probe prints and what it
means is knowledge/probes/; preflight's pass is workflows/preflight.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from runai_tui.knowledge.probes import resources
from runai_tui.knowledge.probes.resources import PodResources, TopReport
from runai_tui.shapes.errors import ErrorKind, RunaiError
from runai_tui.shapes.models import JobDetail, Phase, Pod
from runai_tui.util.aio import gather_all
from runai_tui.workflows.sources import ExecSource

MAX_CONCURRENT_PODS = 8  # per-pod commands (`runai logs`, `runai exec`) at once for one job

Row = TypeVar("Row")


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


async def probe_pods(
    client: ExecSource,
    name: str,
    pods: list[Pod],
    command: list[str],
    timeout: float,
    row: Callable[[Pod, str | RunaiError | None], Row],
) -> list[Row]:
    """`row(pod, output)` for each pod: output None for a pod that is not running, the client's
    error for a probe that failed, else the probe's stdout."""
    slots = asyncio.Semaphore(MAX_CONCURRENT_PODS)

    async def run(p: Pod) -> Row:
        if p.phase is not Phase.RUNNING:
            return row(p, None)
        async with slots:
            try:
                return row(p, await client.aexec_output(name, p.name, command, timeout=timeout))
            except RunaiError as exc:
                return row(p, exc)

    return list(await gather_all(run(p) for p in pods))


async def top_job(
    client: ExecSource,
    name: str,
    pod: str | None = None,
    timeout: float = resources.EXEC_TIMEOUT,
    detail: JobDetail | None = None,
) -> TopReport:
    """The resources probe in every running pod (or one pod), concurrently. A pod that is not
    running is a row with its phase; asking for one such pod by name, or a job with no running
    pod, raises."""
    if detail is None:
        detail = await client.adescribe(name)
    pods = pods_to_probe(detail, pod)
    if not any(p.phase is Phase.RUNNING for p in pods):
        which = f"pod {pod!r} is {pods[0].phase.value}" if pod else "no pod of it is running"
        raise RunaiError(
            ErrorKind.OTHER,
            f"job {name!r} ({detail.job.phase.value}): {which}; resources are read in running pods",
            "see `runai-tui describe JOB`; wait until it is Running",
        )

    def row(p: Pod, output: str | RunaiError | None) -> PodResources:
        if output is None:
            return PodResources(p.name, phase=p.phase.value)
        if isinstance(output, RunaiError):
            return PodResources(p.name, error=output.message, hint=output.hint)
        return resources.parse_probe(p.name, output)

    return TopReport(name, await probe_pods(client, name, pods, resources.COMMAND, timeout, row))
