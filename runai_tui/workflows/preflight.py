"""Preflight's pass: its probe in every running pod of a job (or one), read into a checklist."""

from __future__ import annotations

from runai_tui.knowledge.probes import preflight
from runai_tui.knowledge.probes.preflight import PodChecklist, Preflight
from runai_tui.shapes.errors import RunaiError
from runai_tui.shapes.models import JobDetail, Pod
from runai_tui.workflows.pod_probes import pods_to_probe, probe_pods
from runai_tui.workflows.sources import ExecSource


async def preflight_job(
    client: ExecSource,
    name: str,
    pod: str | None = None,
    timeout: float = preflight.EXEC_TIMEOUT,
    detail: JobDetail | None = None,
) -> Preflight:
    """The preflight probe in every running pod (or one pod), concurrently. A pod that is not
    running is one skipped item; a probe that fails or times out is one failed item."""
    if detail is None:
        detail = await client.adescribe(name)

    def row(p: Pod, output: str | RunaiError | None) -> PodChecklist:
        if output is None:
            why = f"the pod is {p.phase.value}: nothing runs there yet"
            return PodChecklist(p.name, [preflight.check_skipped("pod", why)])
        if isinstance(output, RunaiError):
            return PodChecklist(
                p.name, [preflight.check_failed("probe", output.message, output.hint)]
            )
        return preflight.checklist(p.name, output, p.node)

    pods = pods_to_probe(detail, pod)
    return Preflight(await probe_pods(client, name, pods, preflight.COMMAND, timeout, row))
