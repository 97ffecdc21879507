"""The jobs table's GPU UTIL column: a bounded background pass reading running jobs' GPUs.

Each pass (a worker of the jobs screen, after a refresh has painted) reads at most
`JOBS_PER_PASS` running jobs that hold GPUs, those read longest ago first, none more often than
every `REREAD_SECONDS`, through the core's resources probe (`knowledge/probes/resources.py`, one exec per
pod). The cell is the mean utilisation over the job's GPUs, or `no GPU tool`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from runai_tui.knowledge.probes.resources import TopReport, mean_gpu_util
from runai_tui.shapes.errors import RunaiError
from runai_tui.shapes.models import Job, Phase
from runai_tui.workflows.pod_probes import top_job
from runai_tui.workflows.sources import ExecSource

JOBS_PER_PASS = 2
REREAD_SECONDS = 30.0


def util_text(report: TopReport) -> str | None:
    """`87%` (the mean over every GPU of every pod), `no GPU tool`, or None (nothing read)."""
    mean = mean_gpu_util(report)
    if mean is not None:
        return f"{mean:.0f}%"
    read = [p for p in report.pods if p.running and not p.error]
    if read and all(not p.gpu_tool for p in read):
        return "no GPU tool"
    return None


class GpuUtilReader:
    """When each running job's GPUs were last read, and the pass that reads the next few."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._read_at: dict[tuple[str, datetime | None], float] = {}

    def due(self, jobs: list[Job]) -> list[Job]:
        """The running jobs with GPUs to read now, longest unread first, at most JOBS_PER_PASS."""
        now = self._clock()
        keys = {(j.name, j.created) for j in jobs}
        self._read_at = {k: t for k, t in self._read_at.items() if k in keys}
        candidates = [
            j
            for j in jobs
            if j.phase is Phase.RUNNING
            and (j.gpus or 0) > 0
            and now - self._read_at.get((j.name, j.created), -REREAD_SECONDS) >= REREAD_SECONDS
        ]
        candidates.sort(key=lambda j: self._read_at.get((j.name, j.created), float("-inf")))
        return candidates[:JOBS_PER_PASS]

    async def read(
        self, client: ExecSource, jobs: list[Job], show: Callable[[str, str | None], None]
    ) -> None:
        """Read the jobs `due` now, one at a time, and `show(name, text)` each one's cell (None:
        the job has no running pod any more)."""
        for job in self.due(jobs):
            self._read_at[(job.name, job.created)] = self._clock()
            try:
                report = await top_job(client, job.name)
            except RunaiError:
                show(job.name, None)  # ended, or no pod runs: nothing to show
                continue
            text = util_text(report)
            if text is not None:  # no pod could be read this time: the last figure stays
                show(job.name, text)
