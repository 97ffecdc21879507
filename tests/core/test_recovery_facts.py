"""What recovery cost a job, from the master's log, the events and describe's pods."""

from __future__ import annotations

from runai_tui.knowledge.records.recovery import Recovery, recovery
from runai_tui.shapes.models import Event

LOG = [
    "trainer: resumed from /data/runs/x/checkpoints/step-000000004.pt: step 4, epoch 0",
    '{"kind": "resume", "step": 4, "lost": 2, "resumes": 1, "lost_total": 2, "time": 1.0}',
    '[rank0]: {"kind": "train", "step": 5, "loss": 1.0}',
    '{"kind": "resume", "step": 8, "lost": 1, "resumes": 2, "lost_total": 3, "time": 2.0}',
]


def test_the_newest_resume_record_carries_the_totals() -> None:
    events = [
        Event("t", "Warning", "Preempted", "workload preempted by urgent"),
        Event("t", "Normal", "Reserving", "preempting workload other for its slots"),
    ]
    found = recovery(LOG, events, [{"restartCount": 1}, {"restartCount": 0}, {"restarts": 2}])
    assert found == Recovery(resumes=2, steps_lost=3, preemptions=1, pod_restarts=3)
    assert found.line() == "2 resumes, 1 preemption, 3 steps lost (3 pod restarts)"


def test_a_job_that_never_stopped_has_nothing_to_say() -> None:
    found = recovery(['{"kind": "train", "step": 1}'], [], [{"restartCount": 0}])
    assert not found.any and found == Recovery()


def test_a_preempted_job_says_so_in_its_status_where_the_list_counts_it() -> None:
    from runai_tui.runai.parse import parse_job
    from runai_tui.tui.job_cells import status_text

    job = parse_job({"name": "a", "phase": "Pending", "preemptions": 2})
    assert job is not None and job.status_shown == "Pending (preempted 2x)"
    assert status_text(job.phase, job.preemptions).plain == "Pending (preempted 2x)"
    plain = parse_job({"name": "b", "phase": "Running"})  # runai's own list: no such field
    assert plain is not None and plain.status_shown == "Running" and plain.preemptions == 0


def test_describe_and_report_count_steps_lost_the_same_way() -> None:
    """Describe's recovery line and the report read one count (knowledge/records/redone.py): a log
    whose resume record is missing (the step sequence went back) gives both the same figure."""
    from runai_tui.knowledge.records.redone import redone

    lines = [f'{{"kind": "train", "step": {s}, "time": {s}.0}}' for s in (1, 2, 3, 4, 2, 3, 4, 5)]
    found = recovery(lines, [], [])
    assert (found.resumes, found.steps_lost) == (1, 3)
    report = redone(lines)
    assert (report.resumes, report.steps) == (found.resumes, found.steps_lost)


def test_a_resume_record_without_its_count_counts_from_the_furthest_step() -> None:
    """An older trainer's resume record names the checkpoint only: the steps past it up to the
    furthest step recorded are lost; a step sequence that goes on past it is not a resume."""
    train = [f'{{"kind": "train", "step": {s}, "time": {s}.0}}' for s in (1, 2, 3, 4, 5)]
    again = [f'{{"kind": "train", "step": {s}, "time": {s + 10}.0}}' for s in (4, 5, 6)]
    found = recovery([*train, '{"kind": "resume", "step": 3}', *again], [], [])
    assert (found.resumes, found.steps_lost) == (1, 2)
