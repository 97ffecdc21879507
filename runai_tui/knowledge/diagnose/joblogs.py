"""What a detector looks at: every pod's log of one job, read to its end, and the job."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from runai_tui.knowledge.diagnose.pod import PodDiagnoser
from runai_tui.knowledge.findings import Finding
from runai_tui.shapes.models import JobDetail


@dataclass(frozen=True)
class JobLogs:
    """One job's pods as read (`pods`, in the job's order), and what is known of the job."""

    pods: Sequence[PodDiagnoser]
    running: bool = False  # the job is Running (a saved log: False)
    now: float | None = None  # the time to judge silences by (None: time.time())
    ib_wanted: bool = False  # InfiniBand/RoCE asked for (NCCL_IB_* settings on every pod)
    detail: JobDetail | None = None  # the job as `runai describe` says (a saved log: None)


# A detector finds the codes that no single line shows. It gets the whole job and returns its
# findings (made with codes.make_finding); report.DETECTORS lists them all.
Detector = Callable[[JobLogs], Iterable[Finding]]
