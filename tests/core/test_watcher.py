"""The watcher's own behaviour without a cluster: a `runai` that fails mid-watch is tried again
with a doubling backoff, one line each time, never a traceback; a job deleted under it, or one
that cannot be read, stops its chain with the reason. (The real faults, resubmits and restarts:
tests/local/test_unattended.py.)"""

from __future__ import annotations

import asyncio

from runai_tui.shapes.errors import ErrorKind, RunaiError
from runai_tui.shapes.models import Job, JobDetail, Phase
from runai_tui.workflows.watcher import Policy, Report, Watcher


class FlakyRunai:
    """describe answers `phases` in turn, failing with a timeout where the phase is None;
    a job past the phases is gone."""

    def __init__(self, phases: list[Phase | None]) -> None:
        self.phases = phases

    async def adescribe(self, name: str) -> JobDetail:
        if not self.phases:
            raise RunaiError(ErrorKind.NOT_FOUND, f"workload '{name}' could not be found")
        phase = self.phases.pop(0)
        if phase is None:
            raise RunaiError(ErrorKind.TIMEOUT, "runai timed out after 60 s")
        return JobDetail(Job(name, phase))

    async def alist_jobs(self) -> list[Job]:
        return [Job("wk", Phase.RUNNING)]


def watch(phases: list[Phase | None]) -> tuple[str, list[Report], list[float]]:
    said: list[Report] = []
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    watcher = Watcher(FlakyRunai(phases), Policy(interval=10), said.append,  # type: ignore[arg-type]
                      sleep=sleep)  # fmt: skip
    return asyncio.run(watcher.watch("wk")), said, slept


def test_a_failing_runai_is_tried_again_with_a_doubling_backoff() -> None:
    # read_chain's describe, then the looks: two timeouts, Running, a timeout, Completed.
    outcome, said, slept = watch([Phase.RUNNING, None, None, Phase.RUNNING, None, Phase.COMPLETED])
    assert outcome == "completed"
    assert [r.kind for r in said] == [
        "watching", "runai-error", "runai-error", "runai-error", "completed"]  # fmt: skip
    assert said[1].text == "runai timed out after 60 s; trying again in 5 s"
    assert slept == [5.0, 10.0, 10.0, 5.0]  # the backoff doubles, and starts again per call


def test_a_job_deleted_under_the_watcher_stops_its_chain_with_the_reason() -> None:
    outcome, said, _ = watch([Phase.RUNNING, Phase.RUNNING])
    assert outcome == "stopped"
    assert said[-1].line(3) == (
        "wk [attempt 1/3] stopped: workload 'wk' could not be found: nothing left to watch"
    )
    outcome, said, _ = watch([])
    assert (outcome, said[-1].kind) == ("stopped", "stopped")
