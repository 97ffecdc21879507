"""The passes that gather a job's facts for knowledge/ through the client: describe, a pod's log,
a command in a pod. knowledge/ reads facts and calls no client; what fetches them lives here.
"""

from __future__ import annotations

from runai_tui.knowledge.plan import MEASURE_TAIL, Plan, apply_measure
from runai_tui.knowledge.records.wire import WireCheck, find_check
from runai_tui.shapes.errors import RunaiError
from runai_tui.shapes.models import master_pod
from runai_tui.workflows.job_records import feed_pod_log, read_progress
from runai_tui.workflows.sources import LogSource, StreamsLogs


async def read_job_check(client: LogSource, name: str) -> tuple[WireCheck | None, list[str]]:
    """The newest comm record in the master pod's whole log, the pairs' unknown nodes filled
    from describe; and the log's last lines (why there is none)."""
    detail = await client.adescribe(name)
    pod = master_pod(detail.pods)
    if pod is None:
        return None, []
    lines: list[str] = []
    await feed_pod_log(client, name, pod.name, lines.append)
    check = find_check(lines)
    if check is not None:
        check = check.with_nodes({p.name: p.node for p in detail.pods if p.node})
    return check, lines[-8:]


async def measure(plan: Plan, client: StreamsLogs, job: str, tail: int = MEASURE_TAIL) -> Plan:
    """Fill plan.measured from job's log (its last `tail` lines), or say why not."""
    try:
        progress = await read_progress(client, job, tail=tail)
    except RunaiError as error:
        return apply_measure(plan, job, None, error)
    return apply_measure(plan, job, progress)
