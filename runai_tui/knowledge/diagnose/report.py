"""A job's diagnosis: every pod's line findings plus what the detectors find, in one report."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from runai_tui.knowledge.diagnose import detectors, lost, waiting, wire_check
from runai_tui.knowledge.diagnose.joblogs import Detector, JobLogs
from runai_tui.knowledge.diagnose.pod import PodDiagnoser, PodHealth
from runai_tui.knowledge.findings import ERROR, SEVERITY_ORDER, Finding, one_per_fault
from runai_tui.shapes.models import JobDetail

# Every detector, run in this order on every diagnosis (a new derived code: add its function).
DETECTORS: tuple[Detector, ...] = (
    detectors.tcp_fallback,
    detectors.data_starved,
    detectors.straggler,
    wire_check.wire_slow,
    wire_check.wire_slow_pair,
    detectors.stalled,
    waiting.pending,
    lost.pod_lost,
)


@dataclass
class Diagnosis:
    pods: list[PodHealth] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    counts: dict[tuple[str, str], int] = field(default_factory=dict)  # (pod, code) -> lines

    @property
    def has_errors(self) -> bool:
        return any(f.severity == ERROR for f in self.findings)

    @property
    def exit_code(self) -> int:
        return 1 if self.has_errors else 0

    def codes(self, severity: str | None = None) -> list[str]:
        """Distinct codes, most severe first."""
        seen: list[str] = []
        for f in self.findings:
            if (severity is None or f.severity == severity) and f.code not in seen:
                seen.append(f.code)
        return seen

    def to_dict(self) -> dict[str, object]:
        """`diagnose --json`: {"pods": [...], "findings": [...]}."""
        return {
            "pods": [p.to_dict() for p in self.pods],
            "findings": [f.to_dict() for f in self.findings],
        }


def combine(
    diagnosers: Iterable[PodDiagnoser],
    running: bool = False,
    now: float | None = None,
    ib_wanted: bool | None = None,
    extra: Iterable[Finding] = (),
    detail: JobDetail | None = None,
) -> Diagnosis:
    """Per-pod results into one report: the pods' line findings, `extra` (a log that could not
    be read), then every detector's findings; most severe first, then by pod and line, one per
    fault (the same code and fix on several pods: one finding naming them). `ib_wanted` None: IB is wanted when every pod that says says so."""
    pods = list(diagnosers)
    if ib_wanted is None:
        said = [p.ib_wanted for p in pods if p.ib_wanted is not None]
        ib_wanted = bool(said) and all(said)
    report = Diagnosis()
    findings: list[Finding] = list(extra)
    for pod in pods:
        pod.flush()
        report.pods.append(pod.health())
        findings.extend(sorted(pod.findings, key=lambda f: f.line))
        for code, count in pod.counts.items():
            report.counts[(pod.pod, code)] = count
    job = JobLogs(pods, running=running, now=now, ib_wanted=ib_wanted, detail=detail)
    for detect in DETECTORS:
        findings.extend(detect(job))
    if any(f.severity == ERROR for f in findings):  # a more specific code explains the failure
        findings = [f for f in findings if f.code != "process-failed"]
    order = {p.pod: i for i, p in enumerate(report.pods)}
    findings.sort(key=lambda f: (SEVERITY_ORDER[f.severity], order.get(f.pod, 0), f.line))
    report.findings = [_counted(f, report.counts, detail) for f in one_per_fault(findings)]
    return report


def pod_restarts(detail: JobDetail | None) -> dict[str, int]:
    """Each pod's restarts, from describe's own pod entries (none known: empty)."""
    pods = detail.raw.get("pods") if detail is not None and detail.raw else None
    out: dict[str, int] = {}
    for p in pods if isinstance(pods, list) else []:
        count = p.get("restartCount", p.get("restarts")) if isinstance(p, dict) else None
        if (
            isinstance(count, int)
            and not isinstance(count, bool)
            and isinstance(p.get("name"), str)
        ):
            out[p["name"]] = count
    return out


def _counted(f: Finding, counts: dict[tuple[str, str], int], detail: JobDetail | None) -> Finding:
    """A fault's finding with every line of it counted (`seen`, over its pods) and its pods'
    restarts (the runs it may have been seen in)."""
    if not f.pod:
        return f
    lines = sum(counts.get((pod, f.code), 0) for pod in f.all_pods)
    restarts = pod_restarts(detail)
    f.seen = max(f.seen, lines)
    f.restarts = sum(restarts.get(pod, 0) for pod in f.all_pods)
    return f


def diagnose_lines(
    logs: dict[str, Iterable[str]], running: bool = False, now: float | None = None
) -> Diagnosis:
    """Diagnose logs given as {pod: lines} (lines may be a lazy iterator)."""
    return combine((PodDiagnoser(pod).feed_all(lines) for pod, lines in logs.items()), running, now)
