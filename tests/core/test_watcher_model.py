"""The watcher's bounds, explored: Hypothesis drives the real watcher (runai_tui/workflows/watcher.py, one
pass at a time) against a model of the cluster in pure Python, whose rules do what a cluster and
its people do: jobs fail (a node lost, a trainer error), stall, stay Pending, get Stopped or
deleted, other jobs take the names the watcher would pick (and names sit at the length limit),
`runai` calls time out, a submit goes through but reports a failure, a listing lags behind, and
the watcher is killed and started again (a fresh one, knowing only the records). After every
step the invariants of docs/health.md ("The watcher's bounds") are checked.

The model is the cluster as the watcher sees it: `alist_jobs`, `adescribe` (the submission
record in the annotation, as on the local cluster), `adelete`, and the recovery steps the
watcher calls (`findings`, `checkpoints`, `plan`, `submit`); its clock is the watcher's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from runai_tui.knowledge.diagnose.codes import make_finding
from runai_tui.knowledge.findings import Finding
from runai_tui.profiles.submission_record import ANNOTATION, Record
from runai_tui.shapes.errors import ErrorKind, RunaiError
from runai_tui.shapes.models import Job, JobDetail, Phase
from runai_tui.workflows.watcher import (
    ENDED,
    NAME_MAX,
    WAITING,
    ChainWatch,
    Planned,
    Policy,
    Report,
    Watcher,
    WatchState,
    attempt_name,
)

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
LIVE = "live"
ROOTS = ["exp-7", "e" * 58, "f" * 60, "g" * 63, "run-r2"]


@dataclass
class FakeJob:
    name: str
    phase: Phase
    created: datetime
    record: Record | None
    fault: str = "pod-lost"  # what diagnose finds once it fails ("" for nothing)
    stalled: bool = False
    checkpoint: bool = False
    hidden: int = 0  # listings that do not show it yet (a lagging list)
    deleting: int = 0  # looks left in Deleting before it is gone


@dataclass
class Cluster:
    """The model cluster: its jobs, its clock, the faults waiting to happen to its calls."""

    jobs: dict[str, FakeJob] = field(default_factory=dict)
    now: float = 0.0
    created: int = 0
    failing: int = 0  # the next runai calls that time out
    ghost: bool = False  # the next submit goes through, and says it failed
    lag: int = 0  # the next submitted job is listed only after this many listings
    slow: float = 0.0  # the next runai call takes this long (the clock moves on meanwhile)
    wrong: list[str] = field(default_factory=list)  # submits the catalogue does not allow
    submits: list[tuple[str, int, str]] = field(default_factory=list)  # (root, attempt, name)
    doubles: list[str] = field(default_factory=list)  # attempts submitted beside a live one
    deleted: dict[str, int] = field(default_factory=dict)  # root -> its attempts deleted

    def tick(self) -> None:
        self.now, self.slow = self.now + self.slow, 0.0
        if self.failing:
            self.failing -= 1
            raise RunaiError(ErrorKind.TIMEOUT, "runai timed out after 60 s")

    def add(self, name: str, phase: Phase, record: Record | None, **more: object) -> FakeJob:
        self.created += 1
        job = FakeJob(name, phase, T0 + timedelta(seconds=self.created), record, **more)  # type: ignore[arg-type]
        self.jobs[name] = job
        return job

    def root_of(self, job: FakeJob) -> str | None:
        if job.record is not None and job.record.root:
            return job.record.root
        return job.name if job.record is None or job.record.parent is None else None

    def chain(self, root: str) -> list[FakeJob]:
        return [j for j in self.jobs.values() if self.root_of(j) == root]

    def remove(self, name: str) -> None:
        job = self.jobs.pop(name)
        root = self.root_of(job)
        if root is not None:
            self.deleted[root] = self.deleted.get(root, 0) + 1

    # -- what the watcher calls --------------------------------------------------------------

    async def alist_jobs(self) -> list[Job]:
        self.tick()
        shown = []
        for job in list(self.jobs.values()):
            if job.deleting:
                job.deleting -= 1
                if not job.deleting:
                    del self.jobs[job.name]
                    continue
            if job.hidden:
                job.hidden -= 1
                continue
            shown.append(Job(job.name, job.phase, "p1", created=job.created))
        return shown

    async def adescribe(self, name: str) -> JobDetail:
        self.tick()
        job = self.jobs.get(name)
        if job is None:
            raise RunaiError(ErrorKind.NOT_FOUND, f"workload '{name}' could not be found")
        notes = {ANNOTATION: job.record.encode()} if job.record is not None else {}
        raw = {"spec": {"annotations": notes}}
        return JobDetail(Job(name, job.phase, "p1", created=job.created), raw=raw)

    async def adelete(self, name: str) -> str:
        self.tick()
        if name not in self.jobs:
            raise RunaiError(ErrorKind.NOT_FOUND, f"workload '{name}' could not be found")
        job = self.jobs[name]
        job.phase, job.deleting = Phase.DELETING, 2
        root = self.root_of(job)
        if root is not None:
            self.deleted[root] = self.deleted.get(root, 0) + 1
        return "deleted"

    async def findings(self, name: str, detail: JobDetail) -> list[Finding]:
        self.tick()
        job = self.jobs.get(name)
        if job is None:
            raise RunaiError(ErrorKind.NOT_FOUND, f"workload '{name}' could not be found")
        if job.phase is Phase.FAILED and job.fault:
            return [make_finding(job.fault, f"{name}-master-0", 1, "evidence")]
        if job.phase is Phase.RUNNING and job.stalled:
            return [make_finding("stalled", f"{name}-master-0", 1, "{}")]
        return []

    async def checkpoints(self, name: str, detail: JobDetail) -> bool:
        self.tick()
        job = self.jobs.get(name)
        return job is not None and job.checkpoint

    async def plan(
        self, name: str, detail: JobDetail, findings: list[Finding], remedies: bool
    ) -> Planned:
        self.tick()
        job = self.jobs[name]
        number = job.record.attempt_number if job.record is not None else 1
        return Planned((name, number + 1))

    async def submit(self, planned: Planned, name: str, root: str) -> str:
        self.tick()
        parent, number = planned.plan  # type: ignore[misc]
        if name in self.jobs:
            raise RunaiError(ErrorKind.OTHER, f"workload {name} already exists")
        if len(name) > NAME_MAX:
            raise RunaiError(ErrorKind.OTHER, f"name {name} is longer than 63 characters")
        if [j for j in self.chain(root) if j.phase not in ENDED]:
            self.doubles.append(name)
        was = self.jobs.get(parent)
        if was is not None and was.phase is Phase.FAILED and was.fault not in ("pod-lost",):
            self.wrong.append(f"{name} after {parent} failed with {was.fault or 'no cause'}")
        record = Record("p", name=name, parent=parent, attempt=number, root=root)
        self.add(name, Phase.PENDING, record, hidden=self.lag)
        self.lag = 0
        self.submits.append((root, number, name))
        if self.ghost:
            self.ghost = False
            raise RunaiError(ErrorKind.TIMEOUT, "runai timed out after 60 s")
        return name


class WatcherMachine(RuleBasedStateMachine):
    """The watcher of one chain against the model cluster."""

    def __init__(self) -> None:
        super().__init__()
        self.cluster = Cluster()
        self.said: list[Report] = []
        self.shown: list[WatchState | None] = []
        self.watch: ChainWatch | None = None
        self.outcome: str | None = None

    @initialize(
        root=st.sampled_from(ROOTS),
        phase=st.sampled_from([Phase.RUNNING, Phase.FAILED, Phase.PENDING]),
        max_attempts=st.integers(1, 4),
        backoff=st.sampled_from([0.0, 30.0]),
        taken=st.integers(0, 3),
    )
    def start(self, root: str, phase: Phase, max_attempts: int, backoff: float, taken: int) -> None:
        self.root = root
        self.policy = Policy(max_attempts=max_attempts, backoff=backoff, interval=10.0,
                             max_pending=600.0, stall_every=60.0)  # fmt: skip
        self.cluster.add(root, phase, Record("p", name=root), checkpoint=True)
        for number in range(2, 2 + taken):  # the names the watcher would pick, taken
            self.take(number)
        self.restart()

    def take(self, number: int) -> None:
        name = attempt_name(self.root, number, set(self.cluster.jobs))
        self.cluster.add(name, Phase.RUNNING, Record("q", name=name))

    def say(self, report: Report) -> None:
        self.said.append(report)
        if report.kind == "submitted" and "resuming from" in report.text:
            parent = report.text.split("resuming from ")[1].split("'s checkpoints")[0]
            job = self.cluster.jobs.get(parent)
            assert job is None or job.checkpoint, f"{parent} has no checkpoint: {report.text}"

    def publish(self, root: str) -> object:
        return self.shown.append

    def latest(self) -> FakeJob | None:
        chain = self.cluster.chain(self.root)
        if not chain:
            return None
        return max(chain, key=lambda j: (j.record.attempt_number if j.record else 1, j.created))

    # -- the watcher -------------------------------------------------------------------------

    @rule()
    def restart(self) -> None:
        """The watcher killed and started again: it knows only what the cluster says."""

        async def sleep(seconds: float) -> None:
            self.cluster.now += seconds

        watcher = Watcher(self.cluster, self.policy, self.say, sleep=sleep,
                          clock=lambda: self.cluster.now, publish=self.publish)  # fmt: skip
        first = asyncio.run(watcher.first(self.root))
        self.watch, self.outcome = (None, first) if isinstance(first, str) else (first, None)

    @precondition(lambda self: self.watch is not None)
    @rule(passes=st.integers(1, 4))
    def step(self, passes: int) -> None:
        for _ in range(passes):
            self.one_pass()

    def one_pass(self) -> None:
        """One pass of the watcher, when it runs, with the checks that hold after it."""
        if self.watch is not None:
            latest = self.latest()
            clean = not (self.cluster.failing or self.cluster.ghost)
            pending, before = self.watch.pending, self.cluster.now
            wait = asyncio.run(self.watch.step())
            if isinstance(wait, str):
                self.outcome, self.watch = wait, None
                return
            assert wait >= 0
            self.cluster.now += wait
            if clean and latest is not None and not latest.hidden and self.watch.next is None:
                # Every end state answered: a job Stopped by a person, or Pending past the
                # bound, ends the watch on the first clean pass that sees it.
                assert latest.phase not in (Phase.STOPPED, Phase.COMPLETED), latest
                if pending is not None and pending[0] == latest.name and latest.phase in WAITING:
                    assert before - pending[1] < self.policy.max_pending

    # -- the cluster and its people ----------------------------------------------------------

    @rule(fault=st.sampled_from(["pod-lost", "pod-lost", "trainer-error", ""]),
          checkpoint=st.booleans())  # fmt: skip
    def fail_latest(self, fault: str, checkpoint: bool) -> None:
        job = self.latest()
        if job is not None and job.phase not in ENDED and not job.deleting:
            # A checkpoint once saved stays: a job fails with or without one more.
            job.phase, job.fault = Phase.FAILED, fault
            job.checkpoint = job.checkpoint or checkpoint
        self.one_pass()

    @rule()
    def run_latest(self) -> None:
        job = self.latest()
        if job is not None and job.phase is Phase.PENDING:
            job.phase = Phase.RUNNING
        self.one_pass()

    @rule()
    def stall_latest(self) -> None:
        job = self.latest()
        if job is not None and job.phase is Phase.RUNNING and not job.deleting:
            job.stalled = True
        self.one_pass()

    @rule(to=st.sampled_from([Phase.STOPPED, Phase.COMPLETED]))
    def end_latest(self, to: Phase) -> None:
        job = self.latest()
        if job is not None and job.phase not in ENDED and not job.deleting:
            job.phase = to
        self.one_pass()

    @rule(which=st.integers(0, 40))
    def delete_a_job(self, which: int) -> None:
        names = sorted(self.cluster.jobs)
        if names and which % 4 == 0:  # a person deletes a job now and then
            self.cluster.remove(names[which % len(names)])
        self.one_pass()

    @rule(number=st.integers(2, 5))
    def take_a_name(self, number: int) -> None:
        self.take(number)
        self.one_pass()

    @rule(calls=st.integers(1, 3))
    def calls_time_out(self, calls: int) -> None:
        self.cluster.failing += calls
        self.one_pass()

    @rule()
    def submit_says_it_failed(self) -> None:
        self.cluster.ghost = True
        self.one_pass()

    @rule(seconds=st.sampled_from([30.0, 400.0]))
    def a_call_is_slow(self, seconds: float) -> None:
        self.cluster.slow = seconds
        self.one_pass()

    @rule(listings=st.integers(1, 3))
    def listing_lags(self, listings: int) -> None:
        self.cluster.lag = listings
        self.one_pass()

    @rule(seconds=st.sampled_from([5.0, 60.0, 700.0]))
    def time_passes(self, seconds: float) -> None:
        self.cluster.now += seconds
        self.one_pass()

    # -- the bounds --------------------------------------------------------------------------

    @invariant()
    def at_most_max_attempts(self) -> None:
        mine = [s for s in self.cluster.submits if s[0] == self.root]
        assert all(number <= self.policy.max_attempts for _, number, _ in mine), mine
        # Submitted again beyond the bound only where an attempt was deleted (a person's, or a
        # stalled one the watcher deleted), which the cluster then forgets.
        assert len(mine) <= self.policy.max_attempts - 1 + self.cluster.deleted.get(self.root, 0)

    @invariant()
    def as_the_catalogue_says(self) -> None:
        assert not self.cluster.wrong

    @invariant()
    def never_two_live_attempts(self) -> None:
        assert not self.cluster.doubles
        live = [j for j in self.cluster.chain(self.root) if j.phase not in ENDED]
        assert len(live) <= 1, live

    @invariant()
    def an_attempt_is_submitted_once(self) -> None:
        alive = [
            (j.record.attempt_number if j.record else 1) for j in self.cluster.chain(self.root)
        ]
        assert len(alive) == len(set(alive)), alive

    @invariant()
    def what_is_watched_is_shown(self) -> None:
        if self.watch is None or not self.shown or self.shown[-1] is None:
            return
        state = self.shown[-1]
        assert state.root == self.root and 1 <= state.attempt <= self.policy.max_attempts
        assert state.next


WatcherMachine.TestCase.settings = settings(
    max_examples=300, stateful_step_count=40, deadline=None, derandomize=True
)
TestWatcherBounds = WatcherMachine.TestCase
