"""Job health in the TUI: what was diagnosed (a cache the jobs table reads) and how findings,
transports and preflight checklists are drawn. The knowledge itself is in the core
(runai_tui/knowledge/diagnose/, runai_tui/knowledge/preflight.py); every log or pod value goes through `literal`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rich.console import Group
from rich.table import Table
from rich.text import Text

from runai_tui.knowledge.diagnose import TRANSPORT_IB, TRANSPORT_SOCKET, Diagnosis
from runai_tui.knowledge.findings import ERROR, WARNING
from runai_tui.knowledge.preflight import FAIL, PASS, Preflight, status
from runai_tui.knowledge.remedies import remedy_line
from runai_tui.models import Job, Phase
from runai_tui.text import literal

# The jobs screen's background pass: Failed jobs (the ones whose logs explain something) and
# Pending ones (their events say why they wait), one job at a time, the last lines of each pod
# only. Running jobs are diagnosed when described.
BACKGROUND_TAIL = 2000
BACKGROUND_PHASES = (Phase.FAILED, Phase.PENDING)

SEVERITY_STYLE = {ERROR: "bold red", WARNING: "bold yellow"}
SEVERITY_MARK = {ERROR: "✗", WARNING: "!"}
TRANSPORT_STYLE = {TRANSPORT_IB: "bold black on green", TRANSPORT_SOCKET: "bold black on yellow"}
STATUS_STYLE = {PASS: "green", FAIL: "bold red"}
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


def transport_badge(transport: str, device: str) -> Text:
    label = f" {transport} {literal(device)} " if device else f" {transport} "
    return Text(label, style=TRANSPORT_STYLE.get(transport, "black on grey70"))


def diagnosis_renderable(diagnosis: Diagnosis) -> Group:
    parts: list[object] = []
    badges = Text()
    for pod in diagnosis.pods:
        badges.append(literal(pod.pod) + " ")
        badges.append_text(transport_badge(pod.transport, pod.device))
        badges.append("  ")
    if diagnosis.pods:
        parts.append(badges)
    if not diagnosis.findings:
        lines = sum(p.lines for p in diagnosis.pods)
        parts.append(Text(f"no problems found in {lines} log lines", style="green"))
    if diagnosis.findings:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1)
        for f in diagnosis.findings:
            mark = Text(f"{SEVERITY_MARK.get(f.severity, '·')} {f.code}")
            mark.stylize(SEVERITY_STYLE.get(f.severity, "dim"))
            where = f"{literal(f.pod)}:{f.line}" if f.line else literal(f.pod)
            detail = Text(f"{where}  {literal(f.message)}")
            if f.evidence:
                detail.append(f"\n{literal(f.evidence)}", style="dim")
            detail.append(f"\nfix: {f.fix}", style="cyan")
            if f.remedy is not None:  # marked: `f` shows the overrides, `R` resubmits with them
                mark.append(f"\n{REMEDY_MARK}", style="bold green")
                detail.append(f"\n{remedy_line(f.remedy)}", style="green")
            grid.add_row(mark, detail)
        parts.append(grid)
    return Group(*parts)  # type: ignore[arg-type]


def checklist_renderable(report: Preflight) -> Group:
    parts: list[object] = []
    for pod in report.pods:
        table = Table(title=literal(pod.pod), title_justify="left", expand=True, show_edge=False)
        table.add_column("CHECK", no_wrap=True)
        table.add_column("STATUS", no_wrap=True)
        table.add_column("REASON / FIX", ratio=1)
        for item in pod.items:
            state = status(item)
            detail = Text(literal(item.message))
            if state == FAIL and item.fix:
                detail.append(f"\nfix: {item.fix}", style="cyan")
            table.add_row(item.code, Text(state, style=STATUS_STYLE.get(state, "dim")), detail)
        parts += [table, Text("")]
    failed = sum(1 for p in report.pods for i in p.items if status(i) == FAIL)
    style = "bold red" if failed else "green"
    parts.append(Text(f"{failed} failed check(s) in {len(report.pods)} pod(s)", style=style))
    return Group(*parts)  # type: ignore[arg-type]
