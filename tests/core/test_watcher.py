"""The watcher's own behaviour on the model cluster (tests/core/test_watcher_model.py, where
Hypothesis explores it): the cases worth reading one by one. A `runai` that fails mid-watch is
tried again with a doubling backoff, one line each time; the flood a taken name once caused;
a stalled attempt deleted before the next; a job a person stopped, or one Pending too long; the
checkpoints said only where there are some. (The real faults, resubmits and restarts:
tests/local/test_unattended.py.)"""

from __future__ import annotations

import asyncio

import pytest

from runai_tui.profiles.submission_record import Record
from runai_tui.shapes.errors import RunaiError, UsageError
from runai_tui.shapes.models import Phase
from runai_tui.workflows.watcher import (
    ChainWatch,
    Policy,
    Report,
    Watcher,
    WatchState,
    read_chains_patiently,
)
from tests.core.test_watcher_model import Cluster


class Night:
    """A watcher of `root` on a model cluster, driven a pass at a time."""

    def __init__(self, cluster: Cluster, root: str, policy: Policy) -> None:
        self.cluster, self.said, self.shown = cluster, list[Report](), list[WatchState | None]()

        async def sleep(seconds: float) -> None:
            cluster.now += seconds

        watcher = Watcher(cluster, policy, self.said.append, sleep=sleep,
                          clock=lambda: cluster.now, publish=lambda root: self.shown.append)  # fmt: skip
        first = asyncio.run(watcher.first(root))
        assert isinstance(first, ChainWatch)
        self.watch = first
        self.waits: list[float] = []

    def passes(self, count: int) -> str | None:
        for _ in range(count):
            wait = asyncio.run(self.watch.step())
            if isinstance(wait, str):
                return wait
            self.waits.append(wait)
            self.cluster.now += wait
        return None

    def lines(self, kind: str) -> list[str]:
        return [r.text for r in self.said if r.kind == kind]


def test_a_failing_runai_is_tried_again_with_a_doubling_backoff() -> None:
    cluster = Cluster()
    cluster.add("wk", Phase.RUNNING, Record("p", name="wk"))
    night = Night(cluster, "wk", Policy(interval=10))
    cluster.failing = 3
    assert night.passes(4) is None
    assert night.lines("runai-error") == [
        f"runai timed out after 60 s; trying again in {s} s" for s in ("5", "10", "20")]  # fmt: skip
    assert night.waits == [5.0, 10.0, 20.0, 10.0]  # the backoff doubles, then the interval
    cluster.failing = 1
    night.passes(1)
    assert night.waits[-1] == 5.0  # and starts again at 5 s once a pass went through
    cluster.jobs["wk"].phase = Phase.COMPLETED
    assert night.passes(1) == "completed"
    assert night.shown[-1] is None  # the watch no longer shows


def test_a_taken_name_and_a_submit_that_said_it_failed_submit_attempt_2_once() -> None:
    """The flood: exp-7 failed (pod-lost), an unrelated exp-7-r2 runs, and the first submit's
    runai call times out though the job went through."""
    cluster = Cluster()
    cluster.add("exp-7", Phase.FAILED, Record("p", name="exp-7"), checkpoint=True)
    cluster.add("exp-7-r2", Phase.RUNNING, Record("q", name="exp-7-r2"))
    night = Night(cluster, "exp-7", Policy(max_attempts=3, backoff=0, interval=1))
    cluster.ghost = True
    assert night.passes(30) is None
    assert len(cluster.submits) == 1
    root, number, name = cluster.submits[0]
    assert (root, number) == ("exp-7", 2) and name.startswith("exp-7-r2-")
    assert night.lines("submitted") == [
        f"{name} is on the cluster: the submit went through though runai said it failed"]  # fmt: skip
    assert night.shown[-1] == WatchState(
        "exp-7", name, 2, 3, "Pending: the watch stops after 21600 s"
    )
    cluster.jobs[name].phase = Phase.RUNNING
    night.passes(1)
    assert night.shown[-1] == WatchState(
        "exp-7", name, 2, 3, "on failure or a stall: attempt 3, as the catalogue says"
    )
    cluster.jobs[name].phase = Phase.FAILED
    assert night.passes(3) is None
    cluster.jobs[cluster.submits[-1][2]].phase = Phase.FAILED
    assert night.passes(3) == "stopped"
    assert [s[1] for s in cluster.submits] == [2, 3]
    assert (
        night.said[-1]
        .line(3)
        .endswith("stopped: attempt 3 of 3 failed: none left (--max-attempts)")
    )


def test_checkpoints_are_said_only_where_the_failed_attempt_left_some() -> None:
    cluster = Cluster()
    cluster.add("a", Phase.FAILED, Record("p", name="a"), checkpoint=False)
    night = Night(cluster, "a", Policy(backoff=0))
    night.passes(2)
    assert night.lines("submitted") == [
        "submitted a-r2 (attempt 2 of 3), from the start: a left no checkpoint to resume from"]  # fmt: skip
    cluster.jobs["a-r2"].phase, cluster.jobs["a-r2"].checkpoint = Phase.FAILED, True
    night.passes(2)
    assert night.lines("submitted")[-1] == (
        "submitted a-r3 (attempt 3 of 3), resuming from a-r2's checkpoints"
    )


def test_a_stalled_attempt_is_deleted_and_gone_before_the_next_is_submitted() -> None:
    cluster = Cluster()
    cluster.add("st", Phase.RUNNING, Record("p", name="st"), checkpoint=True)
    night = Night(cluster, "st", Policy(backoff=0, interval=10, stall_every=60))
    night.passes(2)
    assert not night.lines("stalled")
    cluster.jobs["st"].stalled = True
    night.passes(10)  # a diagnosis once a minute; the delete takes two looks
    assert night.lines("stalled") == [
        "stalled: a fault of a node or the network, not of the job: the same submission, "
        "resumed from its checkpoints, can pass"
    ]
    assert night.lines("deleted") == [
        "st deleted (stalled): attempt 2 is submitted once it is gone"
    ]
    assert "st" not in cluster.jobs and not cluster.doubles
    assert [s[2] for s in cluster.submits] == ["st-r2"]


def test_a_job_a_person_stopped_ends_the_watch_and_nothing_is_submitted() -> None:
    cluster = Cluster()
    cluster.add("ps", Phase.RUNNING, Record("p", name="ps"))
    night = Night(cluster, "ps", Policy(backoff=0))
    cluster.jobs["ps"].phase = Phase.STOPPED
    assert night.passes(1) == "stopped"
    assert night.lines("stopped") == ["ps is Stopped: stopped by a person, not submitted again"]
    assert not cluster.submits


def test_a_job_pending_past_the_bound_ends_the_watch_and_is_never_submitted_again() -> None:
    cluster = Cluster()
    cluster.add("pq", Phase.PENDING, Record("p", name="pq"))
    night = Night(cluster, "pq", Policy(backoff=0, interval=100, max_pending=450))
    assert night.shown == []
    assert night.passes(10) == "stopped"
    assert night.lines("stopped") == [
        "pq has been Pending for 500 s (--max-pending 450): a queue, not a fault; not submitted "
        "again"
    ]
    assert not cluster.submits


def test_a_job_deleted_under_the_watcher_stops_its_chain_with_the_reason() -> None:
    cluster = Cluster()
    cluster.add("wk", Phase.FAILED, Record("p", name="wk"), fault="trainer-error")
    cluster.add(
        "wk-r2", Phase.RUNNING, Record("p", name="wk-r2", parent="wk", attempt=2, root="wk")
    )
    night = Night(cluster, "wk", Policy())
    night.passes(1)
    del cluster.jobs["wk-r2"]
    assert night.passes(1) == "stopped"
    assert (
        night.said[-1].line(3)
        == "wk-r2 [attempt 2/3] stopped: wk-r2 was deleted: nothing left to watch"
    )


def test_a_watch_that_starts_while_runai_fails_tries_again_and_then_watches() -> None:
    # `runai-tui watch` reads the chains before it takes their locks: a `runai` call failing then
    # (a timeout, a refused connection) is tried again, one line each time, not the end of the
    # watch; a job that does not exist fails at once (a chaos schedule found the first).
    cluster = Cluster()
    cluster.add("wk", Phase.RUNNING, Record("p", name="wk"))
    cluster.failing, said, slept = 2, list[str](), list[float]()

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    chains = asyncio.run(read_chains_patiently(cluster, ["wk"], said.append, sleep))
    assert [c.root for c in chains] == ["wk"]
    assert slept == [5.0, 10.0] and len(said) == 2
    assert said[0].endswith("trying again in 5 s (1 of 5 tries)")
    cluster.failing = 99
    with pytest.raises(RunaiError):  # bounded: the fifth failure is the answer
        asyncio.run(read_chains_patiently(cluster, ["wk"], said.append, sleep))
    assert len(said) == 2 + 4
    with pytest.raises(UsageError):  # a job that is not there: no retry
        cluster.failing = 0
        asyncio.run(read_chains_patiently(cluster, ["nope"], said.append, sleep))
    assert len(said) == 6
