"""The retry decision: what the retry catalogue (each code's `retry`, codes.py) says to do with a
failed job's findings. `runai-tui watch --recover` and the TUI's armed watch follow it.

The findings that decide are the errors, else (no error) the warnings; info never decides.

- none: stop, diagnose names no cause (a person looks);
- one of them NEVER: stop, naming it (the input, the code or the data must change);
- one of them REMEDY: with --apply-remedies and a remedy computed for every such finding, submit
  again with the remedies; else stop, naming the remedy and the flag it needs;
- all RUN_AGAIN (a node lost, an eviction, an NCCL timeout with no configuration finding beside
  it): submit the same submission again, which resumes from the checkpoints.

The watcher asks on a Failed job, and on a Running one whose findings say `stalled` (that attempt
is deleted, and gone, before the next is submitted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from runai_tui.knowledge.diagnose.codes import CODES, NEVER, REMEDY, RETRY_MEANS, RUN_AGAIN
from runai_tui.knowledge.findings import ERROR, WARNING, Finding

Action = Literal["run again", "remedy", "stop"]


@dataclass(frozen=True)
class Verdict:
    """What to do (`action`), why in one line (`reason`), the deciding findings' codes, and the
    findings whose remedies a resubmit applies (action "remedy")."""

    action: Action
    reason: str
    codes: tuple[str, ...] = ()
    remedies: tuple[Finding, ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return {
            "action": self.action,
            "reason": self.reason,
            "codes": list(self.codes),
            "remedies": [list(f.remedy.sets) for f in self.remedies if f.remedy is not None],
        }


def retry_of(code: str) -> str:
    """The code's retry kind; a code the table lacks (a newer runai-tui's) is never retried."""
    spec = CODES.get(code)
    return spec.retry if spec is not None else NEVER


def deciding(findings: Sequence[Finding]) -> list[Finding]:
    """The findings that decide: the errors, else the warnings."""
    errors = [f for f in findings if f.severity == ERROR]
    return errors or [f for f in findings if f.severity == WARNING]


def _sets(finding: Finding) -> str:
    return " ".join(f"--set {item}" for item in finding.remedy.sets) if finding.remedy else ""


def decide(findings: Sequence[Finding], apply_remedies: bool) -> Verdict:
    """The verdict on a failed job's findings (remedies attached: remedies.attach_for_job)."""
    chosen = deciding(findings)
    codes = tuple(dict.fromkeys(f.code for f in chosen))
    if not chosen:
        return Verdict("stop", "diagnose names no cause of the failure: a person must look")
    never = [f for f in chosen if retry_of(f.code) == NEVER]
    if never:
        f = never[0]
        return Verdict("stop", f"{f.code} ({RETRY_MEANS[NEVER]}): {f.message}", codes)
    needs = [f for f in chosen if retry_of(f.code) == REMEDY]
    if not needs:
        said = ", ".join(codes)
        return Verdict("run again", f"{said}: {RETRY_MEANS[RUN_AGAIN]}", codes)
    bare = [f for f in needs if f.remedy is None]
    if bare:
        f = bare[0]
        return Verdict("stop", f"{f.code} needs a remedy and none was found: {f.fix}", codes)
    if not apply_remedies:
        shown = "; ".join(f"{f.code}: {_sets(f)}" for f in needs)
        return Verdict(
            "stop", f"remedies not applied without --apply-remedies ({shown})", codes, tuple(needs)
        )
    shown = "; ".join(f"{f.code}: {_sets(f)}" for f in needs)
    return Verdict("remedy", f"applying remedies ({shown})", codes, tuple(needs))


__all__ = ["NEVER", "REMEDY", "RUN_AGAIN", "Verdict", "decide", "deciding", "retry_of"]
