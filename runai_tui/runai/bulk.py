"""Many jobs at once: choose them (names, or a selector by name glob, status and age) and run
one verb (delete, suspend, resume) on each. Every job gets its own outcome; a failure never stops
the rest. The faces say what happened and exit 1 when anything failed."""

from __future__ import annotations

import asyncio
import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from runai_tui.shapes.errors import RunaiError
from runai_tui.shapes.models import Job, normalize_phase
from runai_tui.util.aio import gather_all

if TYPE_CHECKING:
    from runai_tui.runai.client import RunaiClient

VERBS = ("delete", "suspend", "resume")
AT_ONCE = 4  # verbs in flight together: the local cluster's delete waits out a grace period


@dataclass(frozen=True)
class Selector:
    """Jobs whose name matches `glob` (fnmatch), whose status is one of `statuses` (any case,
    v1 names too) and that were created more than `older_than` seconds ago. Empty parts match
    everything."""

    glob: str = "*"
    statuses: tuple[str, ...] = ()
    older_than: float | None = None

    def matches(self, job: Job, now: datetime | None = None) -> bool:
        if not fnmatch.fnmatchcase(job.name, self.glob):
            return False
        if self.statuses and job.phase not in {normalize_phase(s) for s in self.statuses}:
            return False
        if self.older_than is not None:
            if job.created is None:
                return False  # an age we cannot tell is never old enough to act on
            created = (
                job.created if job.created.tzinfo else job.created.replace(tzinfo=timezone.utc)
            )
            age = ((now or datetime.now(timezone.utc)) - created).total_seconds()
            if age <= self.older_than:
                return False
        return True

    def describe(self) -> str:
        parts = [f"name {self.glob}"]
        if self.statuses:
            parts.append(f"status {'/'.join(self.statuses)}")
        if self.older_than is not None:
            parts.append(f"older than {self.older_than:g} s")
        return ", ".join(parts)


def select(jobs: Sequence[Job], selector: Selector, now: datetime | None = None) -> list[str]:
    """Names of the jobs `selector` matches, in the list's order."""
    return [job.name for job in jobs if selector.matches(job, now)]


@dataclass(frozen=True)
class Outcome:
    """What one verb did to one job: `ok`, and the CLI's answer ("" when it said nothing) or the
    error (with its hint)."""

    name: str
    ok: bool
    message: str
    hint: str = ""


async def act(client: RunaiClient, verb: str, names: Sequence[str]) -> list[Outcome]:
    """Run `verb` on every job in `names` (a few at a time); one Outcome per name, in order."""
    if verb not in VERBS:
        raise ValueError(f"unknown verb {verb!r}")
    gate = asyncio.Semaphore(AT_ONCE)
    method = {"delete": client.adelete, "suspend": client.asuspend, "resume": client.aresume}[verb]

    async def one(name: str) -> Outcome:
        async with gate:
            try:
                said = await method(name)
            except RunaiError as exc:
                return Outcome(name, False, exc.message, exc.hint)
            return Outcome(name, True, said.strip())

    return await gather_all(one(name) for name in dict.fromkeys(names))
