"""What lint, diagnose and preflight report: one `Finding` shape and one severity vocabulary.

A finding says what is wrong (`message`), how bad it is (`severity`: error, warning or info)
and what to change (`fix`), under a stable `code`. Where it was found depends on who found it:
lint names the profile `field`, diagnose the `pod`, the log `line` and its text (`evidence`),
preflight the `pod` (and marks a check that passed `ok`). A finding may carry a `remedy`: the
profile overrides that fix it (knowledge/remedies.py computes and validates them). Its JSON is
one shape everywhere (`to_dict`); each of them prints its own text (checks.py,
diagnose/render.py, preflight.py).

One finding per fault: the same code with the same fix, on several pods or several times on one
(a worker group or a pod restarted into the same error), is one finding that names its pods
(`pods`), with the first one's evidence and how often it was seen (`one_per_fault`; diagnose,
preflight, the TUI's health panel and its HEALTH column all show what it returns), so a 16-pod
job with one fault shows one block, and its remedy is computed once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

Severity = Literal["error", "warning", "info"]

ERROR: Severity = "error"
WARNING: Severity = "warning"
INFO: Severity = "info"
SEVERITIES: tuple[Severity, ...] = (ERROR, WARNING, INFO)  # most severe first
SEVERITY_ORDER: dict[str, int] = {s: i for i, s in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class Remedy:
    """Profile overrides that fix a finding, in the form `--set` takes (`large_shm=true`), and
    in words what they change (with the arithmetic where there is one)."""

    sets: tuple[str, ...]
    why: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"set": list(self.sets), "why": self.why}


@dataclass
class Finding:
    """One thing found: `code`, `severity`, `message`, `fix`, and where (the fields that apply)."""

    code: str
    severity: Severity
    message: str
    fix: str = ""
    field: str = ""  # lint: the profile field
    pod: str = ""  # diagnose, preflight: the pod
    line: int = 0  # diagnose: the log line (1 is the first; 0: not from a line)
    evidence: str = ""  # diagnose: that line's text, cut to EVIDENCE_MAX
    ok: bool = False  # preflight: the check passed (severity info)
    remedy: Remedy | None = None  # the overrides that fix it, once validated against a profile
    pods: tuple[str, ...] = ()  # one_per_fault: every pod with this fault, `pod` first
    seen: int = 0  # diagnose: the log lines with this fault, over its pods (0: not counted)
    restarts: int = 0  # diagnose: its pods' restarts (the fault's lines span them)

    @property
    def all_pods(self) -> list[str]:
        """Every pod the finding is about: `pods` when grouped, else `pod` (none: a job's)."""
        return list(self.pods) if self.pods else [self.pod] if self.pod else []

    def to_dict(self) -> dict[str, object]:
        """The one JSON shape of a finding, in `lint`, `diagnose` and `preflight --json`
        (docs/health.md, "A finding in JSON"): every key always there, `remedy` an object or
        null."""
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "fix": self.fix,
            "field": self.field,
            "pod": self.pod,
            "pods": self.all_pods,
            "seen": self.seen,
            "restarts": self.restarts,
            "line": self.line,
            "evidence": self.evidence,
            "ok": self.ok,
            "remedy": self.remedy.to_dict() if self.remedy is not None else None,
        }


# `fix` texts that more than one of lint, diagnose and preflight give: each is written here once,
# and a caller adds only what is its own (`; check with ...`).
FIX_MEMLOCK = (
    'set memlock unlimited on the nodes (CRI-O default_ulimits "memlock=-1:-1") and give '
    "the pod IPC_LOCK (capabilities: [IPC_LOCK])"
)
FIX_SHM = "profile large_shm: true (--large-shm), or fewer DataLoader --workers"


def worst_first(findings: list[Finding]) -> list[Finding]:
    """`findings` sorted errors first, then warnings, then infos (stable within each)."""
    return sorted(findings, key=lambda f: SEVERITY_ORDER[f.severity])


PODS_NAMED = 3  # a grouped finding names this many pods, then "and N more"


def pods_named(finding: Finding, shown: int = PODS_NAMED) -> str:
    """The finding's pods for a reader: `a, b, c and 2 more`."""
    pods = finding.all_pods
    named = ", ".join(pods[:shown])
    return f"{named} and {len(pods) - shown} more" if len(pods) > shown else named


def one_per_fault(findings: Iterable[Finding]) -> list[Finding]:
    """Findings with the same code, severity and fix about pods as one finding: the first one
    (its pod, line and evidence) in the place of the first, with `pods` naming them all (when
    more than one) and `seen` counting the findings it stands for (at least those; diagnose
    counts every line). A finding about no pod (the job's) is left as it is."""
    listed = list(findings)
    faults: dict[tuple[str, str, str], list[Finding]] = {}
    for f in listed:
        if f.pod:
            faults.setdefault((f.code, f.severity, f.fix), []).append(f)
    out: list[Finding] = []
    for f in listed:
        group = faults.get((f.code, f.severity, f.fix), []) if f.pod else []
        if not group:
            out.append(f)
        elif f is group[0]:
            pods = list(dict.fromkeys(p for g in group for p in g.all_pods))
            seen = max(sum(max(g.seen, 1) for g in group), f.seen)
            out.append(replace(f, pods=tuple(pods) if len(pods) > 1 else (), seen=seen))
    return out
