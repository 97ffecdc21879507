"""The Flight Recorder's dumps read through a running pod of the job (they are on the PVC every
pod mounts), then judged by knowledge/records/flight_recorder.py: `diagnose JOB`'s rank that hung.
"""

from __future__ import annotations

import base64

from runai_tui.knowledge.records.flight_recorder import (
    DumpLocator,
    DumpProblem,
    RankDump,
    Reported,
    findings,
    judge,
    load_dump,
    rank_files,
    ranks_text,
    unreadable,
)
from runai_tui.shapes.models import JobDetail, Phase
from runai_tui.workflows.sources import ExecsInPods


async def read_through_pod(
    client: ExecsInPods, job: str, pod: str, directory: str
) -> list[RankDump]:
    """The dumps on the PVC, read through `pod` (ls, then base64 of each file: binary-safe over
    the exec path); none when no rank has dumped. Raises DumpProblem for a dump that cannot be
    read; a failed exec raises the client's error."""
    listing = await client.aexec_output(job, pod, ["ls", "-1", directory])
    files = rank_files(line.strip() for line in listing.splitlines())
    dumps: list[RankDump] = []
    for rank, name in sorted(files.items()):
        path = f"{directory}/{name}"
        text = await client.aexec_output(job, pod, ["base64", path])
        try:
            data = base64.b64decode("".join(text.split()), validate=True)
        except ValueError:
            raise DumpProblem(f"{pod}:{path}: unreadable through the pod", "copy it and use "
                              "--flight-recorder DIR") from None  # fmt: skip
        dumps.append(load_dump(data, f"{pod}:{path}", rank))
    return dumps


async def job_findings(client: object, detail: JobDetail, locator: DumpLocator) -> list[Reported]:
    """`diagnose JOB`: the dumps of the job's ranks, read through a running pod of the job (they
    are on the PVC every pod mounts). Only a dump that exists is a finding: every distributed run
    announces the directory, and a healthy one never writes it, so a directory that is missing,
    empty or out of reach says nothing unless a rank logged that it dumped."""
    if locator.directory is None or not isinstance(client, ExecsInPods):
        return []
    dumped = bool(locator.pod_of_rank)
    running = [p.name for p in detail.pods if p.phase is Phase.RUNNING]
    first = detail.pods[0].name if detail.pods else detail.job.name
    if not running:
        if not dumped:
            return []
        return [unreadable(DumpProblem(
            f"the dumps are in {locator.directory} on the PVC, but no pod of the job is running "
            "to read them through",
            f"copy {locator.directory} from the PVC and run "
            "`runai-tui diagnose --flight-recorder DIR`"), first)]  # fmt: skip
    try:
        dumps = await read_through_pod(client, detail.job.name, running[0], locator.directory)
    except DumpProblem as problem:
        return [unreadable(problem, running[0])]
    except Exception as exc:  # noqa: BLE001 - the client's error (exec refused, pod gone)
        if not dumped:  # the directory was announced and never written: nothing to judge
            return []
        message = getattr(exc, "message", str(exc))
        return [unreadable(DumpProblem(f"{locator.directory}: {message}", "copy the directory "
                "and run `runai-tui diagnose --flight-recorder DIR`"), running[0])]  # fmt: skip
    if not dumps:
        if not dumped:
            return []
        return [unreadable(DumpProblem(
            f"{running[0]}:{locator.directory}: no rank-N dump files, though "
            f"{ranks_text(sorted(locator.pod_of_rank))} logged a dump",
            "the PVC the pods mount may differ: copy the dumps and run "
            "`runai-tui diagnose --flight-recorder DIR`"), running[0])]  # fmt: skip
    return findings(judge(dumps), locator.pod_of_rank)
