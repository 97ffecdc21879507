"""The `pending` detector: why a waiting job (or pod) waits, from describe's events
(knowledge/diagnose/pending.py), one finding per reason."""

from __future__ import annotations

from collections.abc import Iterator

from runai_tui.knowledge.diagnose.codes import make_finding
from runai_tui.knowledge.diagnose.joblogs import JobLogs
from runai_tui.knowledge.diagnose.pending import why_pending
from runai_tui.knowledge.findings import Finding


def pending(job: JobLogs) -> Iterator[Finding]:
    """Each reason's summary is the finding's message, its fix the fix, the event the evidence."""
    for reason in why_pending(job.detail) if job.detail is not None else ():
        finding = make_finding("pending", reason.pod, 0, reason.evidence)
        finding.message, finding.fix = reason.summary, reason.fix
        yield finding
