"""Job health in the jobs table: what was diagnosed (a cache the table reads) and its HEALTH cell.
How whole diagnoses and preflight checklists are drawn is in tui/health_render.py, which the
screens that show them load: the diagnosis code stays off the TUI's first paint (the tui-paint
figure) until the background pass starts. Every log or pod value goes through `literal`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from rich.text import Text

from runai_tui.knowledge.findings import ERROR, WARNING
from runai_tui.shapes.models import Job, Phase

if TYPE_CHECKING:
    from runai_tui.knowledge.diagnose import Diagnosis

# The jobs screen's background pass: Failed jobs (the ones whose logs explain something) and
# Pending ones (their events say why they wait), one job at a time, the last lines of each pod
# only. Running jobs are diagnosed when described.
BACKGROUND_TAIL = 2000
BACKGROUND_PHASES = (Phase.FAILED, Phase.PENDING)

SEVERITY_STYLE = {ERROR: "bold red", WARNING: "bold yellow"}
SEVERITY_MARK = {ERROR: "✗", WARNING: "!"}
REMEDY_MARK = "✚ remedy"  # a finding with profile overrides that fix it


@dataclass
class _Entry:
    created: datetime | None
    diagnosis: Diagnosis
    phase: Phase = Phase.UNKNOWN


class HealthCache:
    """The latest diagnosis per job name, forgotten when a job of that name is resubmitted."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._skipped: set[tuple[str, datetime | None]] = set()  # could not be diagnosed

    def put(self, job: Job, diagnosis: Diagnosis) -> None:
        self._entries[job.name] = _Entry(job.created, diagnosis, job.phase)

    def get(self, job: Job) -> Diagnosis | None:
        entry = self._entries.get(job.name)
        if entry is None or entry.created != job.created:
            return None
        if entry.phase != job.phase and Phase.PENDING in (entry.phase, job.phase):
            return None  # why it waited (or that it ran) no longer holds
        return entry.diagnosis

    def give_up(self, job: Job) -> None:
        """The background pass could not read this job (gone, no pods): not tried again."""
        self._skipped.add((job.name, job.created))

    def next_to_diagnose(self, jobs: list[Job]) -> Job | None:
        """The first job the background pass should read, if any."""
        for job in jobs:
            if (
                job.phase in BACKGROUND_PHASES
                and self.get(job) is None
                and (job.name, job.created) not in self._skipped
            ):
                return job
        return None


_NOT_DIAGNOSED = Text("")  # shared, never mutated: most rows of a big table


def health_cell(diagnosis: Diagnosis | None) -> Text:
    """The jobs table's HEALTH cell: the worst finding's code, `ok`, or empty (not diagnosed)."""
    if diagnosis is None:
        return _NOT_DIAGNOSED
    waits = [f.message for f in diagnosis.findings if f.code == "pending"]
    if waits and not diagnosis.has_errors:
        return Text("⏸ pending: " + "; ".join(waits), style="bold yellow")
    for severity in (ERROR, WARNING):
        codes = diagnosis.codes(severity)
        if codes:
            more = f" +{len(codes) - 1}" if len(codes) > 1 else ""
            return Text(
                f"{SEVERITY_MARK[severity]} {codes[0]}{more}", style=SEVERITY_STYLE[severity]
            )
    if not any(p.lines for p in diagnosis.pods):
        return Text("? no logs", style="dim")
    return Text("ok", style="green")
