"""The watcher that recovers jobs: `runai-tui watch JOB… --recover` and the TUI's armed watch.

A job and the jobs submitted again from it make a chain of attempts. Each attempt's submission
record names the chain's first job (`root`), its parent and its number
(runai_tui/profiles/submission_record.py), so the chain is read from the records on the cluster alone,
never from names (attempt_chain.py): a watcher started again carries on from there, and a
submit that went through though its `runai` call said it failed is found on the next look, not
submitted again. Each job's record is read once: a pass costs one list, and a describe per job
the watcher has not seen yet. One watcher per chain (watch_lock.py, keyed by the project the
cluster resolved), and what it does next is shown (watch_state.py).

The watcher is a loop of passes (`ChainWatch.step`): each reads the chain, answers the latest
attempt's state, and says how long to wait before the next pass; its clock and sleep are
injected, so a pass can be driven alone. What it answers (docs/health.md, "The watcher's
bounds"):

- Failed: diagnosed, its remedies computed, and the retry catalogue decides
  (knowledge/diagnose/retry.py): run again (the same submission, which resumes from the failed
  job's checkpoints: the same output directory, the trainer's `--resume auto`), apply the
  remedies (only with --apply-remedies), or stop and say why;
- Running and `stalled` (diagnosed every `stall_every` seconds): as Failed, the stalled attempt
  deleted (and gone) before the next is submitted;
- Stopped or Suspended (a person did it): said, and the watch stops;
- Pending for longer than `max_pending`: said, never submitted again, and the watch stops.

Attempts are bounded (`max_attempts`, the first submission counted); never two attempts of a
chain are live at once; each waits a backoff that doubles per attempt. A failing `runai` call
ends its pass with one line, and the next pass comes after its own doubling backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from runai_tui.knowledge.diagnose.retry import Verdict, decide, deciding
from runai_tui.knowledge.findings import Finding
from runai_tui.knowledge.remedies import attach_for_job
from runai_tui.runai import submission
from runai_tui.shapes.errors import ErrorKind, Failure, RunaiError
from runai_tui.shapes.models import Job, JobDetail, Phase
from runai_tui.workflows import resubmit
from runai_tui.workflows.attempt_chain import (
    NAME_MAX,
    Attempt,
    Chain,
    Lister,
    Records,
    attempt_name,
    attempt_of,
    candidate_names,
    chain_of,
    members,
    read_chain,
    read_chains,
)
from runai_tui.workflows.diagnose_job import diagnose_job

if TYPE_CHECKING:
    from runai_tui.knowledge.findings import Finding
    from runai_tui.runai.client import RunaiClient

BACKOFF = 60.0  # seconds before attempt 2; doubled for each attempt after it
BACKOFF_CAP = 1800.0
RUNAI_BACKOFF = 5.0  # a failing runai call: the next pass after this, doubled up to the cap
RUNAI_BACKOFF_CAP = 300.0
SUBMIT_TRIES = 5  # a submit that runai refuses this often is not a passing failure: stop
UNSEEN_LOOKS = 5  # looks after a submit without its job listed: deleted since, stop
INTERVAL = 10.0  # seconds between two looks at a running attempt
MAX_PENDING = 6 * 3600.0  # Pending this long: a queue, not a fault; said, and the watch stops
STALL_EVERY = 300.0  # seconds between two diagnoses of a running attempt (the `stalled` check)
# Phases whose pods hold nothing: a new attempt may start beside an attempt in one of them.
ENDED = frozenset({Phase.COMPLETED, Phase.FAILED, Phase.STOPPED})
# A person's doing: the watcher never suspends, and deletes only a stalled attempt.
BY_A_PERSON = frozenset({Phase.STOPPED, Phase.STOPPING, Phase.SUSPENDING})
WAITING = frozenset({Phase.PENDING, Phase.CREATING})
# What a trainer prints when there is a checkpoint to resume from (trainer/train.py).
CHECKPOINT_LINES = ("trainer: saved checkpoint ", "trainer: resumed from ")


@dataclass(frozen=True)
class Policy:
    """What the watcher does on Failed (`recover`: submit again; else say and stop), with how
    many attempts in all, whether remedies are applied, its pauses in seconds, how long an
    attempt may stay Pending and how often a running one is checked for a stall."""

    recover: bool = True
    max_attempts: int = 3
    apply_remedies: bool = False
    backoff: float = BACKOFF
    interval: float = INTERVAL
    max_pending: float = MAX_PENDING
    stall_every: float = STALL_EVERY

    def delay(self, number: int) -> float:
        """The pause before submitting attempt `number` + 1."""
        return float(min(self.backoff * 2.0 ** max(number - 1, 0), BACKOFF_CAP))


@dataclass(frozen=True)
class Report:
    """One thing the watcher did or saw: the chain (`root`), the attempt's job and number,
    what (`kind`: watching, completed, failed, stalled, waiting, deleted, submitted, following,
    stopped, runai-error) and the line that says it; `data` for --json."""

    root: str
    job: str
    number: int
    kind: str
    text: str
    data: dict[str, object] = field(default_factory=dict)

    def line(self, max_attempts: int) -> str:
        return f"{self.job} [attempt {self.number}/{max_attempts}] {self.kind}: {self.text}"

    def to_dict(self) -> dict[str, object]:
        return {"root": self.root, "job": self.job, "attempt": self.number, "event": self.kind,
                "text": self.text, **self.data}  # fmt: skip


@dataclass(frozen=True)
class WatchState:
    """What a watcher shows of its chain (the jobs table, describe): the latest attempt, its
    number of how many, and what the watcher does next."""

    root: str
    job: str
    attempt: int
    max_attempts: int
    next: str

    def to_dict(self) -> dict[str, object]:
        return {"root": self.root, "job": self.job, "attempt": self.attempt,
                "max_attempts": self.max_attempts, "next": self.next}  # fmt: skip


@dataclass(frozen=True)
class Planned:
    """A next attempt prepared from its parent (`plan`: the cluster's own object) and the
    overrides it applies, FIELD=VALUE."""

    plan: object
    overrides: list[str] = field(default_factory=list)


class Cluster(Lister, Protocol):
    """What the watcher calls: the listing and describe, and the steps of a recovery."""

    async def adelete(self, name: str) -> str: ...

    async def findings(self, name: str, detail: JobDetail) -> list[Finding]:
        """The job's diagnosis, remedies attached."""
        ...

    async def checkpoints(self, name: str, detail: JobDetail) -> bool:
        """Whether the job left a checkpoint to resume from (its trainer said it saved one, or
        resumed from one)."""
        ...

    async def plan(
        self, name: str, detail: JobDetail, findings: list[Finding], remedies: bool
    ) -> Planned:
        """The next attempt after `name` (Failure: it cannot be rebuilt)."""
        ...

    async def submit(self, planned: Planned, name: str, root: str) -> str:
        """Submit `planned` as `name`, its record naming `root`; the name submitted."""
        ...


Say = Callable[[Report], None]
Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]
Publish = Callable[[WatchState | None], None]


def _no_publish(_: WatchState | None) -> None:
    return None


class ClientCluster:
    """The Cluster of a real client: runai (or the local cluster) through RunaiClient, the
    resubmit sequence, diagnose."""

    def __init__(self, client: RunaiClient, project: str | None = None,
                 project_explicit: bool = False) -> None:  # fmt: skip
        self.client, self.project, self.project_explicit = client, project, project_explicit

    async def alist_jobs(self) -> list[Job]:
        return await self.client.alist_jobs()

    async def adescribe(self, name: str) -> JobDetail:
        return await self.client.adescribe(name)

    async def adelete(self, name: str) -> str:
        return await self.client.adelete(name)

    async def findings(self, name: str, detail: JobDetail) -> list[Finding]:
        diagnosis = await diagnose_job(self.client, name, detail=detail)
        attach_for_job(diagnosis.findings, detail, local=self.client.backend.is_local)
        return diagnosis.findings

    async def checkpoints(self, name: str, detail: JobDetail) -> bool:
        pods: list[str | None] = [p.name for p in detail.pods]
        for pod in pods or [None]:
            try:
                stream = self.client.stream_logs(name, pod=pod, follow=False)
                async with contextlib.aclosing(stream) as lines:
                    async for line in lines:
                        if any(mark in line for mark in CHECKPOINT_LINES):
                            return True
            except RunaiError:
                continue  # unreadable logs say nothing of checkpoints
        return False

    async def plan(
        self, name: str, detail: JobDetail, findings: list[Finding], remedies: bool
    ) -> Planned:
        planned = await resubmit.plan(
            self.client, name, apply_remedies=remedies, project=self.project,
            project_explicit=self.project_explicit, detail=detail, findings=findings,
        )  # fmt: skip
        return Planned(planned, [o.item for o in planned.overrides])

    async def submit(self, planned: Planned, name: str, root: str) -> str:
        plan = planned.plan
        assert isinstance(plan, resubmit.Plan)
        prepared = resubmit.renamed(plan.prepared, name, self.client.backend, root=root)
        # No attempt of the chain is live (the watcher waits for that): nothing to suspend.
        return (await submission.asubmit(self.client, prepared)).name


class Stop(Exception):
    """The chain ends here (`outcome`: completed, failed, stopped); the report is said."""

    def __init__(self, outcome: str) -> None:
        super().__init__(outcome)
        self.outcome = outcome


@dataclass
class Next:
    """The next attempt, decided and not yet seen on the cluster: its number, its parent, the
    plan, when it may go, whether there are checkpoints to resume from, the stalled attempt
    deleted first (`deleting`, `deleted` once runai took the delete), the name last submitted
    under, the submits tried, and the looks since a submit went through."""

    number: int
    parent: str
    planned: Planned
    not_before: float
    resume: bool
    deleting: str | None = None
    deleted: bool = False
    name: str | None = None
    tries: int = 0
    submitted: bool = False
    unseen: int = 0
    said_live: bool = False


class ChainWatch:
    """One chain's watch, a pass at a time (`step`); everything it knows between passes is what
    it decided and has not seen on the cluster yet (`next`), the attempt it saw last, and since
    when it has seen it Pending. A ChainWatch made afresh reads the rest from the records."""

    def __init__(self, cluster: Cluster, policy: Policy, say: Say, chain: Chain, *,
                 clock: Clock = time.monotonic, publish: Publish = _no_publish,
                 records: Records | None = None) -> None:  # fmt: skip
        self.cluster, self.policy, self.say, self.chain = cluster, policy, say, chain
        self.root, self.since = chain.root, chain.since
        self.clock, self.publish = clock, publish
        self.records = records if records is not None else Records()
        self.seen: Attempt | None = None
        self.next: Next | None = None
        self.pending: tuple[str, float] | None = None
        self.stall_checked = clock()
        self.runai_delay = RUNAI_BACKOFF

    def _report(self, kind: str, text: str, attempt: Attempt | None = None, **data: object) -> None:
        if attempt is None and self.chain.attempts:
            attempt = self.chain.latest
        job, number = (attempt.name, attempt.number) if attempt else (self.root, 1)
        self.say(Report(self.root, job, number, kind, text, data))

    def _stop(self, outcome: str, text: str, attempt: Attempt | None = None) -> Stop:
        self._report("stopped" if outcome == "stopped" else outcome, text, attempt)
        return Stop(outcome)

    def _show(self, text: str) -> None:
        latest = self.chain.latest if self.chain.attempts else None
        job, number = (latest.name, latest.number) if latest else (self.root, 1)
        self.publish(WatchState(self.root, job, number, self.policy.max_attempts, text))

    async def step(self) -> float | str:
        """One pass: read the chain, answer its latest attempt; the seconds to wait before the
        next pass, or the chain's outcome ("completed", "failed" without recover, "stopped")."""
        try:
            self.chain = await chain_of(self.cluster, self.root, self.records, since=self.since)
            self.since = self.since or self.chain.since
            wait = await self._answer(self.chain)
        except Stop as stop:
            self.publish(None)
            return stop.outcome
        except RunaiError as exc:
            delay, self.runai_delay = self.runai_delay, min(self.runai_delay * 2, RUNAI_BACKOFF_CAP)
            self._report("runai-error", f"{exc.message}; trying again in {delay:g} s")
            return delay
        except Failure as exc:  # what cannot be read or submitted: said, never a traceback
            self._report("stopped", exc.message)
            self.publish(None)
            return "stopped"
        self.runai_delay = RUNAI_BACKOFF
        return wait

    async def _answer(self, chain: Chain) -> float:
        if self.next is not None:
            return await self._carry_on(chain)
        if not chain.attempts:
            raise self._stop("stopped", f"no attempt of {self.root} is left: nothing to watch")
        await self._check_deleted(chain)
        latest = self.seen = chain.latest
        phase = latest.phase
        if phase is Phase.COMPLETED:
            raise self._stop("completed", f"{latest.name} completed")
        if phase is Phase.FAILED:
            return await self._on_failed(chain)
        if phase in BY_A_PERSON:
            raise self._stop("stopped", f"{latest.name} is {phase.value}: stopped by a person, "
                             "not submitted again")  # fmt: skip
        self._pending(latest)
        if phase.is_active:
            await self._stall_check(chain)
            if self.next is not None:
                return 0.0
        self._show(self._next_text(latest))
        return self.policy.interval

    async def _check_deleted(self, chain: Chain) -> None:
        """Stop when the attempt seen last is gone and none came after it: a person deleted it
        (the watcher deletes only a stalled attempt, and submits the next itself). One the
        listing leaves out (it lags behind) but describe finds joins the chain."""
        seen = self.seen
        if seen is None or any(a.number >= seen.number for a in chain.attempts):
            return
        if not await self._found(chain, seen.name):
            raise self._stop("stopped", f"{seen.name} was deleted: nothing left to watch", seen)

    async def _found(self, chain: Chain, name: str) -> bool:
        """Whether describe finds `name` in the chain (it then joins `chain`)."""
        try:
            found = self.records.put(await self.cluster.adescribe(name))
        except RunaiError as exc:
            if exc.kind != ErrorKind.NOT_FOUND:
                raise
            return False
        chain.attempts = members(self.root, [*chain.attempts, found])
        return found in chain.attempts

    def _pending(self, latest: Attempt) -> None:
        """Stop when the latest attempt has been Pending (as this watcher saw it) longer than
        the policy allows: a queue, not a fault, and never a reason to submit again."""
        if latest.phase not in WAITING:
            self.pending = None
            return
        if self.pending is None or self.pending[0] != latest.name:
            self.pending = (latest.name, self.clock())
        waited = self.clock() - self.pending[1]
        if waited >= self.policy.max_pending:
            raise self._stop("stopped", f"{latest.name} has been {latest.phase.value} for "
                             f"{waited:g} s (--max-pending {self.policy.max_pending:g}): a queue, "
                             "not a fault; not submitted again")  # fmt: skip

    def _next_text(self, latest: Attempt) -> str:
        if latest.phase in WAITING:
            return f"{latest.phase.value}: the watch stops after {self.policy.max_pending:g} s"
        if not self.policy.recover:
            return "on failure: say why and stop"
        if latest.number >= self.policy.max_attempts:
            return "on failure: stop, no attempt left"
        return f"on failure or a stall: attempt {latest.number + 1}, as the catalogue says"

    async def _on_failed(self, chain: Chain) -> float:
        """Diagnose the failed latest attempt and act on the verdict."""
        latest = chain.latest
        detail = await self.cluster.adescribe(latest.name)
        findings = await self.cluster.findings(latest.name, detail)
        verdict = decide(findings, self.policy.apply_remedies)
        self._report("failed", verdict.reason, verdict=verdict.to_dict())
        if not self.policy.recover:
            raise Stop("failed")
        await self._plan_next(chain, detail, findings, verdict, "failed")
        return 0.0

    async def _stall_check(self, chain: Chain) -> None:
        """Every `stall_every` seconds, diagnose the running latest attempt; when it is
        `stalled`, act on the verdict as on Failed, the attempt deleted first."""
        if self.clock() - self.stall_checked < self.policy.stall_every:
            return
        self.stall_checked = self.clock()
        latest = chain.latest
        detail = await self.cluster.adescribe(latest.name)
        findings = await self.cluster.findings(latest.name, detail)
        if "stalled" not in {f.code for f in deciding(findings)}:
            return
        verdict = decide(findings, self.policy.apply_remedies)
        self._report("stalled", verdict.reason, verdict=verdict.to_dict())
        if not self.policy.recover:
            return
        await self._plan_next(chain, detail, findings, verdict, "stalled")
        assert self.next is not None
        self.next.deleting = latest.name
        await self._delete(self.next)

    async def _plan_next(
        self, chain: Chain, detail: JobDetail, findings: list[Finding], verdict: Verdict, how: str
    ) -> None:
        """Decide the next attempt (`next`), or Stop: the catalogue says so, or none is left."""
        latest = chain.latest
        if verdict.action == "stop":
            raise self._stop("stopped", f"not submitted again: {verdict.reason}")
        if latest.number >= self.policy.max_attempts:
            said = f"attempt {latest.number} of {self.policy.max_attempts} {how}: none left"
            raise self._stop("stopped", f"{said} (--max-attempts)")
        try:
            planned = await self.cluster.plan(
                latest.name, detail, findings, verdict.action == "remedy"
            )
        except RunaiError:
            raise
        except Failure as exc:  # nothing to rebuild from, a secret lost, a bad remedy
            raise self._stop("stopped", f"cannot submit it again: {exc.message}") from None
        resume = await self.cluster.checkpoints(latest.name, detail)
        delay = self.policy.delay(latest.number)
        number = latest.number + 1
        self.next = Next(number, latest.name, planned, self.clock() + delay, resume)
        self._report("waiting", f"attempt {number} in {delay:g} s")
        self._show(f"attempt {number} in {delay:g} s")

    async def _delete(self, nxt: Next) -> None:
        assert nxt.deleting is not None
        try:
            await self.cluster.adelete(nxt.deleting)
        except RunaiError as exc:
            if exc.kind != ErrorKind.NOT_FOUND:
                raise
        nxt.deleted = True
        self._report("deleted", f"{nxt.deleting} deleted (stalled): attempt {nxt.number} is "
                     "submitted once it is gone")  # fmt: skip

    async def _carry_on(self, chain: Chain) -> float:
        """The next attempt decided: follow it once it is on the cluster (submitted by this
        watcher, found after a submit said it failed, or by a person); else submit it once no
        attempt is live and its backoff is over."""
        nxt = self.next
        assert nxt is not None
        later = [a for a in chain.attempts if a.number >= nxt.number]
        if later:
            found = self.seen = later[-1]
            self.next = None
            if found.name == nxt.name and not nxt.submitted:
                self._report("submitted", f"{found.name} is on the cluster: the submit went "
                             "through though runai said it failed", found)  # fmt: skip
            elif found.name != nxt.name:
                self._report("following", f"{found.name} was submitted meanwhile", found)
            return await self._answer(chain)
        if nxt.submitted and nxt.name is not None:
            if await self._found(chain, nxt.name):  # submitted, and not listed yet
                self.next = None
                return await self._answer(chain)
            nxt.unseen += 1
            if nxt.unseen >= UNSEEN_LOOKS:
                raise self._stop("stopped", f"{nxt.name} was submitted but is not listed after "
                                 f"{nxt.unseen} looks (deleted?): nothing left to watch")  # fmt: skip
            return self.policy.interval
        if nxt.deleting is not None and not nxt.deleted:
            await self._delete(nxt)
        names = {a.name for a in chain.attempts}
        if nxt.deleting is None and nxt.parent not in names:
            raise self._stop("stopped", f"{nxt.parent} was deleted: attempt {nxt.number} not "
                             "submitted")  # fmt: skip
        live = [a for a in chain.attempts if a.phase not in ENDED]
        if live:
            if not nxt.said_live:
                nxt.said_live = True
                shown = ", ".join(f"{a.name} ({a.phase.value})" for a in live)
                self._report("waiting", f"{shown} still live: attempt {nxt.number} waits for it")
            self._show(f"attempt {nxt.number} once {live[0].name} has gone")
            return self.policy.interval
        wait = nxt.not_before - self.clock()
        if wait > 0:
            return wait
        return await self._submit(chain, nxt)

    async def _name(self, chain: Chain, nxt: Next) -> str | Attempt:
        """The name to submit attempt `nxt.number` under: the first candidate (attempt_chain's
        candidate_names) that is free, asked by name (a listing may lag behind a submit); or
        the attempt itself, found under one of them (a submit that went through)."""
        listed_others = chain.taken - {a.name for a in chain.attempts}
        for name in candidate_names(self.root, nxt.number):
            if name in listed_others:
                continue
            try:
                found = self.records.put(await self.cluster.adescribe(name))
            except RunaiError as exc:
                if exc.kind != ErrorKind.NOT_FOUND:
                    raise
                return name
            if found.root == self.root and found.number == nxt.number:
                return found
        raise AssertionError("unreachable")  # pragma: no cover

    async def _submit(self, chain: Chain, nxt: Next) -> float:
        name = await self._name(chain, nxt)
        if isinstance(name, Attempt):  # on the cluster already, not listed yet
            self.next, self.seen = None, name
            self._report("submitted", f"{name.name} is on the cluster: the submit went through "
                         "though runai said it failed", name)  # fmt: skip
            return self.policy.interval
        nxt.name = name
        nxt.tries += 1
        self._show(f"submitting attempt {nxt.number} as {name}")
        try:
            sent = await self.cluster.submit(nxt.planned, name, self.root)
        except RunaiError as exc:  # it may have gone through: the next look tells
            if nxt.tries >= SUBMIT_TRIES:
                raise self._stop("stopped", f"submit of {name}: {exc.message} "
                                 f"({nxt.tries} tries)") from None  # fmt: skip
            delay = RUNAI_BACKOFF * 2.0 ** (nxt.tries - 1)
            self._report("runai-error", f"submit of {name}: {exc.message}; looking for it "
                         f"before trying again in {delay:g} s")  # fmt: skip
            return delay
        except Failure as exc:
            raise self._stop("stopped", f"cannot submit it again: {exc.message}") from None
        nxt.submitted, nxt.name = True, sent or name
        overrides = nxt.planned.overrides
        how = f" with {' '.join('--set ' + o for o in overrides)}" if overrides else ""
        text = f"submitted {nxt.name} (attempt {nxt.number} of {self.policy.max_attempts}){how}"
        text += (f", resuming from {nxt.parent}'s checkpoints" if nxt.resume else
                 f", from the start: {nxt.parent} left no checkpoint to resume from")  # fmt: skip
        self._report("submitted", text, submitted=nxt.name, overrides=overrides)
        self._show(f"looking for {nxt.name} (attempt {nxt.number})")
        return self.policy.interval


__all__ = [
    "NAME_MAX", "Attempt", "Chain", "ChainWatch", "ClientCluster", "Cluster", "Lister", "Planned",
    "Policy", "Records", "Report", "Stop", "WatchState", "Watcher", "attempt_name", "attempt_of",
    "chain_of", "members", "read_chain", "read_chains", "read_chains_patiently",
]  # fmt: skip


def _chain_text(chain: Chain) -> str:
    shown = " → ".join(f"{a.name} ({a.phase.value})" for a in chain.attempts)
    return f"chain of {len(chain.attempts)} attempt(s): {shown}"


async def read_chains_patiently(
    client: Lister, names: Sequence[str], say: Callable[[str], None], sleep: Sleep = asyncio.sleep
) -> list[Chain]:
    """read_chains, as a watch starts: a failing `runai` call (a timeout, a refused connection)
    is tried again after RUNAI_BACKOFF, doubling, up to SUBMIT_TRIES tries, each said in one
    line; a job that does not exist, or runai missing or logged out, fails at once."""
    delay = RUNAI_BACKOFF
    for tries in range(1, SUBMIT_TRIES + 1):
        try:
            return await read_chains(client, names)
        except RunaiError as exc:
            if exc.kind not in (ErrorKind.TIMEOUT, ErrorKind.OTHER) or tries == SUBMIT_TRIES:
                raise
            say(f"{exc.message}; trying again in {delay:g} s ({tries} of {SUBMIT_TRIES} tries)")
            await sleep(delay)
            delay = min(delay * 2, RUNAI_BACKOFF_CAP)
    raise AssertionError("unreachable")  # the last try returns or raises


class Watcher:
    """Watches chains with one policy, saying each step through `say`; `publish(root)` gives
    the function that shows a chain's WatchState (None once the watch ends)."""

    def __init__(self, cluster: Cluster, policy: Policy, say: Say, *,
                 sleep: Sleep = asyncio.sleep, clock: Clock = time.monotonic,
                 publish: Callable[[str], Publish] | None = None) -> None:  # fmt: skip
        self.cluster, self.policy, self.say = cluster, policy, say
        self.sleep, self.clock = sleep, clock
        self.publish = publish or (lambda root: _no_publish)

    async def first(self, job: str) -> ChainWatch | str:
        """`job`'s chain read, and its watch; "stopped" (said) when the job is gone."""
        delay = RUNAI_BACKOFF
        while True:
            records = Records()
            try:
                chain = await read_chain(self.cluster, job, records=records)
                break
            except RunaiError as exc:
                if exc.kind != ErrorKind.NOT_FOUND:
                    self.say(Report(job, job, 1, "runai-error",
                                    f"{exc.message}; trying again in {delay:g} s"))  # fmt: skip
                    await self.sleep(delay)
                    delay = min(delay * 2, RUNAI_BACKOFF_CAP)
                    continue
                self.say(Report(job, job, 1, "stopped", f"{exc.message}: nothing to watch"))
                return "stopped"
            except Failure as exc:
                self.say(Report(job, job, 1, "stopped", exc.message))
                return "stopped"
        self.say(Report(chain.root, chain.latest.name, chain.latest.number, "watching",
                        _chain_text(chain), {"attempts": chain.to_dict()["attempts"]}))  # fmt: skip
        return ChainWatch(self.cluster, self.policy, self.say, chain, clock=self.clock,
                          publish=self.publish(chain.root), records=records)  # fmt: skip

    async def watch(self, job: str) -> str:
        """Watch `job`'s chain to its end: "completed", "failed" (without recover) or
        "stopped"."""
        watch = await self.first(job)
        if isinstance(watch, str):
            return watch
        while True:
            wait = await watch.step()
            if isinstance(wait, str):
                return wait
            await self.sleep(wait)
