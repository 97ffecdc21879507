"""What lint, diagnose and preflight report: one `Finding` shape and one severity vocabulary.

A finding says what is wrong (`message`), how bad it is (`severity`: error, warning or info)
and what to change (`fix`), under a stable `code`. Where it was found depends on who found it:
lint names the profile `field`, diagnose the `pod`, the log `line` and its text (`evidence`),
preflight the `pod` (and marks a check that passed `ok`). A finding may carry a `remedy`: the
profile overrides that fix it (knowledge/remedies.py computes and validates them). Each of them turns findings into its
own JSON and text (checks.py, diagnose/render.py, preflight.py): those formats are pinned by
tests and do not change with this shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

Severity = Literal["error", "warning", "info"]

ERROR: Severity = "error"
WARNING: Severity = "warning"
INFO: Severity = "info"
SEVERITIES: tuple[Severity, ...] = (ERROR, WARNING, INFO)  # most severe first
SEVERITY_ORDER: dict[str, int] = {s: i for i, s in enumerate(SEVERITIES)}


class Remedy(NamedTuple):
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


def worst_first(findings: list[Finding]) -> list[Finding]:
    """`findings` sorted errors first, then warnings, then infos (stable within each)."""
    return sorted(findings, key=lambda f: SEVERITY_ORDER[f.severity])
