"""report's GPU-hours: over every container run where describe lists them, else an honest
fallback that says what it counted."""

from __future__ import annotations

from datetime import datetime, timezone

from runai_tui.shapes.models import Event, Job, JobDetail, Phase
from runai_tui.workflows.chain_report import BASIS_JOB, BASIS_PODS, BASIS_RUNS, gpu_seconds, wall

T0 = datetime(2026, 12, 6, 1, 0, 0, tzinfo=timezone.utc)


def at(seconds: float) -> str:
    return datetime.fromtimestamp(T0.timestamp() + seconds, timezone.utc).isoformat()


def detail(pods: list[dict[str, object]], events: tuple[Event, ...] = ()) -> JobDetail:
    job = Job("j", phase=Phase.COMPLETED, created=T0)
    return JobDetail(job, events=list(events), raw={"pods": pods})


def test_runs_are_summed_pod_by_pod_and_the_gaps_left_out() -> None:
    master = {"gpus": 1, "runs": [{"startedAt": at(10), "finishedAt": at(20)},  # restarted
                                  {"startedAt": at(21), "finishedAt": at(30)},  # preempted
                                  {"startedAt": at(100), "finishedAt": at(160)}]}  # fmt: skip
    worker = {"gpus": 2, "runs": [{"startedAt": at(10), "finishedAt": at(30)},
                                  {"startedAt": at(100), "finishedAt": at(160)}]}  # fmt: skip
    used, basis = gpu_seconds(detail([master, worker]), now=T0.timestamp() + 1000)
    assert basis == BASIS_RUNS
    assert used == 1 * (10 + 9 + 60) + 2 * (20 + 60)
    assert wall(detail([master, worker]), T0.timestamp() + 1000) == (
        T0.timestamp() + 10, T0.timestamp() + 160)  # fmt: skip


def test_an_open_run_counts_until_now() -> None:
    pod = {"gpus": 1, "runs": [{"startedAt": at(10)}]}
    used, _ = gpu_seconds(detail([pod]), now=T0.timestamp() + 70)
    assert used == 60


def test_without_runs_the_fallback_says_what_it_counted() -> None:
    with_times = detail([{"gpus": 1, "startedAt": at(5), "finishedAt": at(50)}])
    assert gpu_seconds(with_times, now=0.0) == (None, BASIS_PODS)
    bare = detail([{"gpus": 1}], (Event(at(90), "Normal", "Completed", "done"),))
    assert gpu_seconds(bare, now=0.0) == (None, BASIS_JOB)
    assert wall(bare, 0.0) == (T0.timestamp(), T0.timestamp() + 90)  # queue time in it
