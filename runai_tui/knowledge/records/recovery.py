"""What recovery cost a job: its resumes (a worker group restarted in place, a pod restarted, a
preemption), the steps trained again after them, its preemptions and its pods' restarts.

The resumes and the steps trained again are counted from the master's log by the count the
report uses too (knowledge/records/redone.py): the trainer's `resume` records, the newest carrying the
run's totals so far, whichever container wrote it. Preemptions are the job's `Preempted` events
(the local cluster's, and the Kubernetes scheduler's reason on a pod it preempts). Core: facts
in, a line out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from runai_tui.knowledge.records.redone import redone
from runai_tui.shapes.models import Event


@dataclass(frozen=True)
class Recovery:
    resumes: int = 0
    steps_lost: int = 0
    preemptions: int = 0
    pod_restarts: int = 0

    @property
    def any(self) -> bool:
        return bool(self.resumes or self.preemptions or self.pod_restarts)

    def line(self) -> str:
        """`3 resumes, 1 preemption, 4 steps lost (1 pod restart)`."""

        def n(count: int, what: str) -> str:
            return f"{count} {what}{'' if count == 1 else 's'}"

        return (
            f"{n(self.resumes, 'resume')}, {n(self.preemptions, 'preemption')}, "
            f"{self.steps_lost} steps lost ({n(self.pod_restarts, 'pod restart')})"
        )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def recovery(
    lines: Iterable[str], events: Iterable[Event], pods: Iterable[Mapping[str, object]] = ()
) -> Recovery:
    """The figures from the master's log LINES, the job's EVENTS and describe's raw PODS."""
    lost = redone(lines)
    return Recovery(
        resumes=lost.resumes,
        steps_lost=lost.steps,
        preemptions=sum(1 for e in events if e.reason == "Preempted"),
        pod_restarts=sum(_count(p.get("restartCount", p.get("restarts"))) for p in pods),
    )
