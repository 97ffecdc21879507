"""The watcher that recovers jobs: `runai-tui watch JOB… --recover` and the TUI's armed watch.

A job and the jobs submitted again from it make a chain of attempts. Each attempt's submission
record names its parent and its number (runai_tui/profiles/submission_record.py), so the chain is read
from the cluster alone (`read_chain`): a watcher started again mid-night carries on from there,
and never submits an attempt that already exists. One watcher per chain (watch_lock.py).

On `Failed`, the latest attempt is diagnosed, its remedies computed, and the retry catalogue
decides (knowledge/diagnose/retry.py): run again (the same submission, which resumes from the
failed job's checkpoints: it names the same output directory, and the trainer's `--resume auto`
takes the newest complete checkpoint there), apply the remedies (only with --apply-remedies), or
stop and say why. Attempts are bounded (`max_attempts`, the first submission counted) and each
waits a backoff that doubles per attempt. A failing `runai` call is tried again with its own
backoff, said in one line each time; never a traceback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, TypeVar

from runai_tui.knowledge.diagnose.retry import Verdict, decide
from runai_tui.knowledge.findings import Finding
from runai_tui.knowledge.remedies import attach_for_job
from runai_tui.knowledge.submitted import read_submission
from runai_tui.profiles import check_job_name
from runai_tui.shapes.errors import ErrorKind, Failure, RunaiError, UsageError
from runai_tui.shapes.models import Job, JobDetail, Phase
from runai_tui.util.aio import gather_all
from runai_tui.workflows import resubmit
from runai_tui.workflows.diagnose_job import diagnose_job

if TYPE_CHECKING:
    from runai_tui.profiles.submission_record import Record
    from runai_tui.runai.client import RunaiClient

T = TypeVar("T")

BACKOFF = 60.0  # seconds before attempt 2; doubled for each attempt after it
BACKOFF_CAP = 1800.0
RUNAI_BACKOFF = 5.0  # a failing runai call: tried again after this, doubled up to the cap
RUNAI_BACKOFF_CAP = 300.0
SUBMIT_TRIES = 5  # a submit that runai refuses this often is not a passing failure: stop
INTERVAL = 10.0  # seconds between two looks at a running attempt
DESCRIBES_AT_ONCE = 4
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Attempt:
    """One job of a chain: its name, number (1: the first submission), parent, phase and
    creation time, as describe and its submission record say."""

    name: str
    number: int
    parent: str | None
    phase: Phase
    created: datetime | None = None
    record: Record | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "job": self.name,
            "attempt": self.number,
            "parent": self.parent,
            "status": self.phase.value,
            "created": self.created.isoformat() if self.created else None,
        }


def attempt_of(detail: JobDetail) -> Attempt:
    record = read_submission(detail).decoded_record()
    return Attempt(
        detail.job.name,
        record.attempt_number if record is not None else 1,
        record.parent if record is not None else None,
        detail.job.phase,
        detail.job.created,
        record,
    )


@dataclass
class Chain:
    """A job's attempts, the first submission first, and the names the cluster has (`taken`)."""

    attempts: list[Attempt]
    taken: set[str] = field(default_factory=set)

    @property
    def root(self) -> str:
        return self.attempts[0].name

    @property
    def latest(self) -> Attempt:
        return self.attempts[-1]

    def to_dict(self) -> dict[str, object]:
        return {"root": self.root, "attempts": [a.to_dict() for a in self.attempts]}


async def _described(client: RunaiClient, names: Sequence[str]) -> list[Attempt]:
    """Each job's Attempt, the ones deleted meanwhile left out."""
    gate = asyncio.Semaphore(DESCRIBES_AT_ONCE)

    async def one(name: str) -> Attempt | None:
        async with gate:
            try:
                return attempt_of(await client.adescribe(name))
            except RunaiError as exc:
                if exc.kind == ErrorKind.NOT_FOUND:
                    return None
                raise

    return [a for a in await gather_all(one(n) for n in names) if a is not None]


async def read_chain(client: RunaiClient, job: str, jobs: Sequence[Job] | None = None) -> Chain:
    """`job`'s chain: its parents up to the first submission, then the newest child of each
    attempt down to the latest. Children are looked for among the jobs whose names start with
    the first one's (the watcher's `ROOT-rN`, resubmit's `ROOT-N`). RunaiError NOT_FOUND when
    `job` does not exist."""
    up = [attempt_of(await client.adescribe(job))]
    while (parent := up[0].parent) and parent not in {a.name for a in up}:
        found = await _described(client, [parent])
        if not found:  # the parent was deleted: the chain starts here now
            break
        up.insert(0, found[0])
    if jobs is None:
        jobs = await client.alist_jobs()
    known = {a.name for a in up}
    names = [j.name for j in jobs if j.name.startswith(up[0].name + "-") and j.name not in known]
    children: dict[str, list[Attempt]] = {}
    for attempt in await _described(client, names):
        if attempt.parent is not None:
            children.setdefault(attempt.parent, []).append(attempt)
    chain = up
    while kids := [k for k in children.get(chain[-1].name, []) if k.name not in known]:
        newest = max(kids, key=lambda a: (a.number, a.created or _EPOCH))
        chain.append(newest)
        known.add(newest.name)
    return Chain(chain, {j.name for j in jobs} | known)


async def read_chains(
    client: RunaiClient, names: Sequence[str], *, skip_missing: bool = False
) -> list[Chain]:
    """Each named job's chain, once per chain (two attempts of one chain give one). A job that
    is gone is skipped with `skip_missing` (deleted since a listing), else UsageError."""
    chains: dict[str, Chain] = {}
    for name in names:
        try:
            chain = await read_chain(client, name)
        except RunaiError as exc:
            if exc.kind != ErrorKind.NOT_FOUND:
                raise
            if skip_missing:
                continue
            raise UsageError(f"job {name!r}: no such job", "see: runai-tui list") from None
        chains.setdefault(chain.root, chain)
    return list(chains.values())


@dataclass(frozen=True)
class Policy:
    """What the watcher does on Failed (`recover`: submit again; else say and stop), with how
    many attempts in all, whether remedies are applied, and its pauses in seconds."""

    recover: bool = True
    max_attempts: int = 3
    apply_remedies: bool = False
    backoff: float = BACKOFF
    interval: float = INTERVAL

    def delay(self, number: int) -> float:
        """The pause before submitting attempt `number` + 1."""
        return float(min(self.backoff * 2.0 ** max(number - 1, 0), BACKOFF_CAP))


@dataclass(frozen=True)
class Report:
    """One thing the watcher did or saw: the chain (`root`), the attempt's job and number,
    what (`kind`: watching, running, completed, failed, waiting, submitted, following,
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


Say = Callable[[Report], None]
Sleep = Callable[[float], Awaitable[None]]


class Stop(Exception):
    """The chain ends here (`outcome`: completed, failed, stopped); the report is said."""

    def __init__(self, outcome: str) -> None:
        super().__init__(outcome)
        self.outcome = outcome


class Watcher:
    """Watches chains with one policy, saying each step through `say`."""

    def __init__(
        self,
        client: RunaiClient,
        policy: Policy,
        say: Say,
        *,
        project: str | None = None,
        project_explicit: bool = False,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.client, self.policy, self.say = client, policy, say
        self.project, self.project_explicit = project, project_explicit
        self.sleep = sleep

    def _report(self, chain: Chain, kind: str, text: str, **data: object) -> None:
        latest = chain.latest
        self.say(Report(chain.root, latest.name, latest.number, kind, text, data))

    async def _retrying(self, make: Callable[[], Awaitable[T]], chain: Chain) -> T:
        """`make()`, tried again while runai fails (a job that is gone is not retried)."""
        delay = RUNAI_BACKOFF
        while True:
            try:
                return await make()
            except RunaiError as exc:
                if exc.kind == ErrorKind.NOT_FOUND:
                    raise
                self._report(chain, "runai-error", f"{exc.message}; trying again in {delay:g} s")
                await self.sleep(delay)
                delay = min(delay * 2, RUNAI_BACKOFF_CAP)

    async def watch(self, job: str) -> str:
        """Watch `job`'s chain to its end: "completed", "failed" (without recover) or
        "stopped"."""
        chain = Chain([Attempt(job, 1, None, Phase.UNKNOWN)])  # until the records are read
        try:
            chain = await self._retrying(lambda: read_chain(self.client, job), chain)
        except Failure as exc:  # the job is gone, or its records cannot be read
            self._report(chain, "stopped", exc.message)
            return "stopped"
        self._report(chain, "watching", _chain_text(chain), attempts=chain.to_dict()["attempts"])
        while True:
            try:
                phase = await self._phase(chain)
                if phase is Phase.COMPLETED:
                    self._report(chain, "completed", f"{chain.latest.name} completed")
                    return "completed"
                if phase is Phase.FAILED:
                    chain = await self._on_failed(chain)
                    continue
            except Stop as stop:
                return stop.outcome
            except RunaiError as exc:  # only a job gone is not retried: deleted under the watcher
                self._report(chain, "stopped", f"{exc.message}: nothing left to watch")
                return "stopped"
            except Failure as exc:  # what cannot be read or submitted: said, never a traceback
                self._report(chain, "stopped", exc.message)
                return "stopped"
            await self.sleep(self.policy.interval)

    async def _phase(self, chain: Chain) -> Phase:
        name = chain.latest.name
        detail = await self._retrying(lambda: self.client.adescribe(name), chain)
        return detail.job.phase

    async def _on_failed(self, chain: Chain) -> Chain:
        """Diagnose the failed latest attempt and act on the verdict: the chain with the new
        attempt, or Stop."""
        latest = chain.latest
        detail = await self._retrying(lambda: self.client.adescribe(latest.name), chain)
        diagnosis = await self._retrying(
            lambda: diagnose_job(self.client, latest.name, detail=detail), chain
        )
        attach_for_job(diagnosis.findings, detail, local=self.client.backend.is_local)
        verdict = decide(diagnosis.findings, self.policy.apply_remedies)
        self._report(chain, "failed", verdict.reason, verdict=verdict.to_dict())
        if not self.policy.recover:
            raise Stop("failed")
        if verdict.action == "stop":
            self._report(chain, "stopped", f"not submitted again: {verdict.reason}")
            raise Stop("stopped")
        if latest.number >= self.policy.max_attempts:
            said = f"attempt {latest.number} of {self.policy.max_attempts} failed: none left"
            self._report(chain, "stopped", f"{said} (--max-attempts)")
            raise Stop("stopped")
        delay = self.policy.delay(latest.number)
        self._report(chain, "waiting", f"attempt {latest.number + 1} in {delay:g} s")
        await self.sleep(delay)
        again = await self._retrying(lambda: read_chain(self.client, chain.root), chain)
        if again.latest.name != latest.name:  # submitted meanwhile (by a person): follow it
            self._report(again, "following", f"{again.latest.name} was submitted meanwhile")
            return again
        return await self._submit(again, detail, diagnosis.findings, verdict)

    def _name(self, chain: Chain) -> str | None:
        """`ROOT-rN` for attempt N, unless taken or not a valid name (then resubmit's NAME-N)."""
        name = f"{chain.root}-r{chain.latest.number + 1}"
        try:
            check_job_name(name)
        except UsageError:
            return None
        return None if name in chain.taken else name

    async def _submit(
        self, chain: Chain, detail: JobDetail, findings: list[Finding], verdict: Verdict
    ) -> Chain:
        latest = chain.latest
        remedies = verdict.action == "remedy"
        try:
            planned = await self._retrying(
                lambda: resubmit.plan(
                    self.client, latest.name, apply_remedies=remedies, name=self._name(chain),
                    project=self.project, project_explicit=self.project_explicit,
                    detail=detail, findings=findings,
                ),
                chain,
            )  # fmt: skip
        except RunaiError:
            raise  # a job gone: watch says so
        except Failure as exc:  # nothing to rebuild from, a secret lost, a bad remedy
            self._report(chain, "stopped", f"cannot submit it again: {exc.message}")
            raise Stop("stopped") from None
        for tries in range(1, SUBMIT_TRIES + 1):
            try:
                result = await resubmit.asubmit(self.client, planned)
                break
            except RunaiError as exc:  # it may have gone through: the records tell
                if exc.kind == ErrorKind.NOT_FOUND or tries == SUBMIT_TRIES:
                    self._report(chain, "stopped", f"submit of {planned.name}: {exc.message}")
                    raise Stop("stopped") from None
                self._report(chain, "runai-error", f"submit: {exc.message}; looking again")
                await self.sleep(RUNAI_BACKOFF * 2 ** (tries - 1))
                again = await self._retrying(lambda: read_chain(self.client, chain.root), chain)
                if again.latest.name != latest.name:
                    return again
        overrides = [o.item for o in planned.overrides]
        how = f" with {' '.join('--set ' + o for o in overrides)}" if overrides else ""
        text = (f"submitted {result.name} (attempt {latest.number + 1} of "
                f"{self.policy.max_attempts}){how}, resuming from {latest.name}'s checkpoints")  # fmt: skip
        self._report(chain, "submitted", text, submitted=result.name, overrides=overrides)
        return await self._retrying(lambda: read_chain(self.client, chain.root), chain)


def _chain_text(chain: Chain) -> str:
    shown = " → ".join(f"{a.name} ({a.phase.value})" for a in chain.attempts)
    return f"chain of {len(chain.attempts)} attempt(s): {shown}"
