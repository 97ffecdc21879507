"""The async pass over a running (or finished) job: every pod's log fetched concurrently and
read as it streams in. The client is a parameter (knowledge never imports runai/)."""

from __future__ import annotations

import contextlib

from runai_tui.knowledge.diagnose.codes import CODES, cut, make_finding
from runai_tui.knowledge.diagnose.pod import PodDiagnoser
from runai_tui.knowledge.diagnose.report import Diagnosis, combine
from runai_tui.knowledge.findings import Finding
from runai_tui.shapes.errors import ErrorKind, RunaiError
from runai_tui.shapes.models import JobDetail, Phase
from runai_tui.workflows.pod_probes import MAX_CONCURRENT_PODS
from runai_tui.workflows.sources import LogSource


async def diagnose_job(
    client: LogSource,
    name: str,
    pod: str | None = None,
    tail: int | None = None,
    now: float | None = None,
    detail: JobDetail | None = None,
) -> Diagnosis:
    """Every pod's log (or one pod's), fetched concurrently, read as it streams in.

    `tail` limits each pod to its last lines (the TUI's background pass); None reads it all.
    """
    if detail is None:
        detail = await client.adescribe(name)
    pods = [p.name for p in detail.pods if pod is None or p.name == pod]
    if pod is not None and not pods:
        known = ", ".join(p.name for p in detail.pods) or "none"
        raise RunaiError(
            ErrorKind.NOT_FOUND, f"job {name!r} has no pod {pod!r}", f"its pods: {known}"
        )
    diagnosers = [PodDiagnoser(p) for p in pods]
    unavailable: list[Finding] = []

    # off `diagnose --log`, a waited path: no event loop, no dump reader (docs/performance.md)
    from runai_tui.util.aio import gather_all
    from runai_tui.workflows import flight_recorder  # the same: off `diagnose --log`

    dumps_at = flight_recorder.DumpLocator()  # where the trainer said its hang dumps went

    async def read(diagnoser: PodDiagnoser) -> None:
        stream = client.stream_logs(name, pod=diagnoser.pod, follow=False, tail=tail)
        try:
            async for line in stream:
                diagnoser.feed(line)
                dumps_at.feed(diagnoser.pod, line)
        except RunaiError as exc:
            unavailable.append(make_finding("log-unavailable", diagnoser.pod, 0, exc.message))
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()

    await gather_all((read(d) for d in diagnosers), at_once=MAX_CONCURRENT_PODS)
    for r in await flight_recorder.job_findings(client, detail, dumps_at):  # the rank that hung
        severity = CODES[r.code].severity
        unavailable.append(Finding(r.code, severity, r.message, r.fix, pod=r.pod, evidence=cut(r.evidence)))  # fmt: skip
    running = detail.job.phase is Phase.RUNNING
    return combine(diagnosers, running=running, now=now, extra=unavailable, detail=detail)


async def diagnose_waiting(client: LogSource, name: str) -> Diagnosis:
    """A Pending job's report without reading logs (its pods have none yet): describe's
    reasons only, as `pending` findings."""
    return combine([], detail=await client.adescribe(name))
