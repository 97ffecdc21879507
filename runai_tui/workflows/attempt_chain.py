"""A chain of attempts read from the cluster: a job and the jobs submitted again from it
(`runai-tui resubmit`, the watcher's next attempts). Each attempt's submission record names the
chain's first job (`root`), its parent and its number (runai_tui/profiles/submission_record.py), so the
chain is read from the records alone, never from names: one listing, and a describe per job not
read yet (`Records`: a record never changes), the jobs created before the first one left out.

Read by the watcher (watcher.py), the morning report and describe.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Protocol

from runai_tui.knowledge.submitted import read_submission
from runai_tui.profiles import check_job_name
from runai_tui.shapes.errors import ErrorKind, RunaiError, UsageError
from runai_tui.shapes.models import Job, JobDetail, Phase
from runai_tui.util.aio import gather_all

if TYPE_CHECKING:
    from runai_tui.profiles.submission_record import Record

DESCRIBES_AT_ONCE = 4
NAME_MAX = 63  # a job name is a DNS-1123 label
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Attempt:
    """One job of a chain: its name, number (1: the first submission), parent, phase, creation
    time and project, as describe and its submission record say."""

    name: str
    number: int
    parent: str | None
    phase: Phase
    created: datetime | None = None
    record: Record | None = None
    project: str = ""

    @property
    def root(self) -> str | None:
        """The chain's first job as the record names it (None: a first submission, or a record
        written before records named it)."""
        return self.record.root if self.record is not None else None

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
        detail.job.project,
    )


@dataclass
class Chain:
    """A job's attempts in order (number, then creation), the names the cluster has (`taken`),
    and the chain's first job (`root_name`; the first attempt's when not given)."""

    attempts: list[Attempt]
    taken: set[str] = field(default_factory=set)
    root_name: str = ""
    since: datetime | None = None  # the first job's creation, where known

    @property
    def root(self) -> str:
        return self.root_name or self.attempts[0].name

    @property
    def latest(self) -> Attempt:
        return self.attempts[-1]

    @property
    def project(self) -> str:
        """The project the cluster put the chain in (its newest attempt's): the one a lock is
        keyed by, however the project was spelled on the command line."""
        return next((a.project for a in reversed(self.attempts) if a.project), "")

    def to_dict(self) -> dict[str, object]:
        return {"root": self.root, "attempts": [a.to_dict() for a in self.attempts]}


class Lister(Protocol):
    """What reading a chain needs of a client."""

    async def alist_jobs(self) -> list[Job]: ...

    async def adescribe(self, name: str) -> JobDetail: ...


@dataclass
class Records:
    """Each job's submission record, read (describe) once: a record never changes. A name used
    again is told apart by its job's creation time."""

    seen: dict[str, Attempt] = field(default_factory=dict)

    def known(self, job: Job) -> Attempt | None:
        """`job`'s attempt with the phase the listing gives; None when not read yet."""
        hit = self.seen.get(job.name)
        if hit is None:
            return None
        if job.created and hit.created and job.created != hit.created:
            return None  # another job under the same name
        return replace(hit, phase=job.phase, project=job.project or hit.project)

    def put(self, detail: JobDetail) -> Attempt:
        attempt = attempt_of(detail)
        self.seen[attempt.name] = attempt
        return attempt

    def keep(self, names: Iterable[str]) -> None:
        """Forget the jobs that are gone."""
        listed = set(names)
        self.seen = {n: a for n, a in self.seen.items() if n in listed}


async def _described(client: Lister, names: Sequence[str], records: Records) -> None:
    """Read the records of `names` (the ones deleted meanwhile left out)."""
    gate = asyncio.Semaphore(DESCRIBES_AT_ONCE)

    async def one(name: str) -> None:
        async with gate:
            try:
                records.put(await client.adescribe(name))
            except RunaiError as exc:
                if exc.kind != ErrorKind.NOT_FOUND:
                    raise

    await gather_all(one(n) for n in names)


def members(root: str, attempts: Iterable[Attempt]) -> list[Attempt]:
    """The attempts of `root`'s chain, in order: the first submission named `root`, every
    attempt whose record names `root`, and (records written before they named it) every attempt
    whose parent is in the chain."""
    every = list(attempts)
    chain = {a.name: a for a in every if a.root == root or (a.name == root and a.parent is None)}
    grown = True
    while grown:
        grown = False
        for a in every:
            if a.name not in chain and a.root is None and a.parent in chain:
                chain[a.name], grown = a, True
    return sorted(chain.values(), key=lambda a: (a.number, a.created or _EPOCH, a.name))


async def chain_of(
    client: Lister,
    root: str,
    records: Records,
    jobs: Sequence[Job] | None = None,
    since: datetime | None = None,
    budget: int | None = None,
) -> Chain:
    """`root`'s chain as the records say: one listing (`jobs` when given), and a describe per
    job not read yet that was created no earlier than `since` (the first job's creation: an
    attempt never predates it); at most `budget` of them, the earliest created first (a view
    that may miss a late attempt, never the watcher's)."""
    if jobs is None:
        jobs = await client.alist_jobs()
    records.keep(j.name for j in jobs)
    slack = since.timestamp() - 1 if since is not None else None
    unread = [
        j.name
        for j in jobs
        if records.known(j) is None
        and (slack is None or j.created is None or j.created.timestamp() >= slack)
    ]
    if budget is not None and len(unread) > budget:
        when = {j.name: j.created or _EPOCH for j in jobs}
        unread = sorted(unread, key=lambda n: when[n])[:budget]
    await _described(client, unread, records)
    attempts = [a for j in jobs if (a := records.known(j)) is not None]
    chain = Chain(members(root, attempts), {j.name for j in jobs}, root, since)
    first = chain.attempts[0] if chain.attempts else None
    if since is None and first is not None and first.name == root and first.parent is None:
        chain.since = first.created
    return chain


async def root_of(client: Lister, attempt: Attempt, records: Records) -> str:
    """The first job of `attempt`'s chain: as its record names it, else (a record written before
    records named it) up its parents to the first, or to the first one deleted."""
    if attempt.root:
        return attempt.root
    up = attempt
    seen = {up.name}
    while (parent := up.parent) and parent not in seen:
        try:
            up = records.put(await client.adescribe(parent))
        except RunaiError as exc:
            if exc.kind != ErrorKind.NOT_FOUND:
                raise
            return parent  # deleted: its children still name it
        if up.root:
            return up.root
        seen.add(up.name)
    return up.name


async def _created(client: Lister, root: str, records: Records) -> datetime | None:
    """When the first job was created (None: gone, or not said)."""
    if root not in records.seen:
        try:
            records.put(await client.adescribe(root))
        except RunaiError as exc:
            if exc.kind != ErrorKind.NOT_FOUND:
                raise
            return None
    first = records.seen[root]
    return first.created if first.parent is None else None


async def read_chain(
    client: Lister,
    job: str,
    jobs: Sequence[Job] | None = None,
    records: Records | None = None,
    budget: int | None = None,
) -> Chain:
    """`job`'s chain, read from the records (the first job's, and every later job's; `budget`:
    chain_of's). RunaiError NOT_FOUND when `job` does not exist."""
    records = records if records is not None else Records()
    own = records.put(await client.adescribe(job))
    root = await root_of(client, own, records)
    since = await _created(client, root, records)
    chain = await chain_of(client, root, records, jobs, since, budget)
    if own.name not in {a.name for a in chain.attempts}:  # submitted after the listing
        chain.attempts = members(root, [*chain.attempts, own])
    return chain


async def read_chains(
    client: Lister, names: Sequence[str], *, skip_missing: bool = False
) -> list[Chain]:
    """Each named job's chain, once per chain (two attempts of one chain give one). A job that
    is gone is skipped with `skip_missing` (deleted since a listing), else UsageError."""
    chains: dict[str, Chain] = {}
    records = Records()
    jobs = await client.alist_jobs() if names else []
    for name in names:
        try:
            chain = await read_chain(client, name, jobs, records)
        except RunaiError as exc:
            if exc.kind != ErrorKind.NOT_FOUND:
                raise
            if skip_missing:
                continue
            raise UsageError(f"job {name!r}: no such job", "see: runai-tui list") from None
        chains.setdefault(chain.root, chain)
    return list(chains.values())


def candidate_names(root: str, number: int) -> Iterator[str]:
    """The names attempt `number` of `root`'s chain may have, in the order they are tried:
    `ROOT-rN` (when it fits NAME_MAX), then `ROOT-rN-XXXXXX`, ROOT shortened to fit, XXXXXX from
    the root, the number and how many were tried before. The same for every watcher."""
    plain = f"{root}-r{number}"
    if len(plain) <= NAME_MAX:
        yield plain
    for salt in itertools.count():
        tag = hashlib.sha256(f"{root}/{number}/{salt}".encode()).hexdigest()[:6]
        tail = f"-r{number}-{tag}"
        yield check_job_name(root[: NAME_MAX - len(tail)].rstrip("-.") + tail)


def attempt_name(root: str, number: int, taken: set[str]) -> str:
    """The first of candidate_names that no job in `taken` has."""
    return next(name for name in candidate_names(root, number) if name not in taken)
