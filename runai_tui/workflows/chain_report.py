"""The morning report (`runai-tui report`): per job, or per chain of attempts (a job and the jobs
submitted again from it, watcher.read_chain), what the night did and cost.

Per chain: its outcome (the latest attempt's phase), attempts, restarts in place (the pods'
restart counts), preemptions (describe's count, else its events), steps lost and the GPU-hours
they took (knowledge/records/redone.py, from the trainer's train and resume records in the master pod's
log, the container before its last restart or preemption first), wall time (the pods' first
start to their last end; a running attempt: until now), GPU-hours used, best loss and best mAP.
Totals at the end, and cost where config.toml names a price per GPU-hour.

GPU-hours are the sum over every run of every pod's container of its GPUs times the run's time
(a restart's and a preemption's earlier runs included, the time waiting for slots excluded),
where describe lists the runs (the local cluster's `runs`). Where it does not (runai's describe),
they fall back to the attempt's GPUs times its pods' first start to last end, or without pod
times its creation to its last event (queue time counted); each attempt says which (`basis`).

It reads the cluster (list, describe, logs) and never writes to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from runai_tui.knowledge.records.redone import Redone
from runai_tui.shapes.errors import RunaiError
from runai_tui.shapes.models import Job, JobDetail, Phase, master_pod
from runai_tui.util.aio import gather_all
from runai_tui.workflows.attempt_chain import Attempt, Chain, attempt_of

if TYPE_CHECKING:
    from runai_tui.runai.client import RunaiClient

_PREEMPTED = re.compile(r"preempted$", re.IGNORECASE)
READS_AT_ONCE = 4


def _time(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def raw_pods(detail: JobDetail) -> list[dict[str, object]]:
    """describe's own pod entries (restart counts, start and end times live there)."""
    pods = detail.raw.get("pods") if detail.raw else None
    return [p for p in pods if isinstance(p, dict)] if isinstance(pods, list) else []


def restarts(detail: JobDetail) -> int:
    """Restarts in place: the pods' restart counts, summed."""
    counts = (p.get("restartCount", p.get("restarts")) for p in raw_pods(detail))
    return sum(c for c in counts if isinstance(c, int) and not isinstance(c, bool))


def preemptions(detail: JobDetail) -> int:
    """Times the job gave its slots to a job of higher priority: describe's count where it has
    one (the local cluster's `preemptions`), else its `Preempted` events (a `Preempting` event
    is the job that took them)."""
    count = detail.raw.get("preemptions") if detail.raw else None
    if isinstance(count, int) and not isinstance(count, bool):
        return count
    return sum(1 for e in detail.events if _PREEMPTED.match(e.reason))


def gpus(detail: JobDetail) -> float:
    """The GPUs the job holds while it runs: describe's total, else the list's figure."""
    gpu = detail.resources.get("gpu")
    total = gpu.get("total") if isinstance(gpu, dict) else None
    if isinstance(total, (int, float)) and not isinstance(total, bool):
        return float(total)
    return float(detail.job.gpus or 0.0)


BASIS_RUNS = "container runs"
BASIS_PODS = "pod start and end"
BASIS_JOB = "job creation to last event"
BASIS_SAID = {
    BASIS_RUNS: "every run of every pod's container, its GPUs times its time (queue time excluded)",
    BASIS_PODS: "describe lists no container runs: the attempt's GPUs times its pods' first start "
    "to last end (a restart's earlier runs are not told apart)",
    BASIS_JOB: "describe has no pod times: the attempt's GPUs times its creation to its last "
    "event (queue time counted as GPU time)",
}


def runs(pod: dict[str, object], now: float) -> list[tuple[float, float]]:
    """The (start, end) of each run of POD's container that describe lists (an open one: now)."""
    listed = pod.get("runs")
    out = []
    for run in listed if isinstance(listed, list) else []:
        start = _time(run.get("startedAt")) if isinstance(run, dict) else None
        if start is None:
            continue
        end = _time(run.get("finishedAt"))
        out.append((start, now if end is None else max(end, start)))
    return out


def gpu_seconds(detail: JobDetail, now: float) -> tuple[float | None, str]:
    """The attempt's GPU-seconds summed over its pods' container runs, and the basis; None when
    describe lists no runs (the caller falls back to the wall time)."""
    pods = raw_pods(detail)
    if not any(runs(p, now) for p in pods):
        return None, BASIS_PODS if any(_time(p.get("startedAt")) for p in pods) else BASIS_JOB
    total = 0.0
    for pod in pods:
        share = pod.get("gpus")
        each = (
            float(share) if isinstance(share, (int, float)) and not isinstance(share, bool) else 0.0
        )
        total += each * sum(end - start for start, end in runs(pod, now))
    return total, BASIS_RUNS


def wall(detail: JobDetail, now: float) -> tuple[float | None, float | None]:
    """(start, end) of the attempt: its pods' first start and last end (a running one: now),
    from their container runs where describe lists them; without pod times, its creation and
    its last event."""
    pods = raw_pods(detail)
    every = [r for p in pods for r in runs(p, now)]
    if every:
        return min(s for s, _ in every), now if detail.job.phase.is_active else max(
            e for _, e in every
        )
    starts = [t for p in pods if (t := _time(p.get("startedAt"))) is not None]
    ends = [t for p in pods if (t := _time(p.get("finishedAt"))) is not None]
    created = detail.job.created.timestamp() if detail.job.created else None
    start = min(starts) if starts else created
    if detail.job.phase.is_active:
        return start, now
    events = [t for e in detail.events if (t := _time(e.time)) is not None]
    end = max(ends) if ends else (max(events) if events else None)
    return start, end


@dataclass
class AttemptRow:
    attempt: Attempt
    gpus: float
    seconds: float
    restarts: int
    preemptions: int
    gpu_seconds: float = 0.0
    basis: str = BASIS_RUNS  # what gpu_seconds was computed from (BASIS_SAID)

    def to_dict(self) -> dict[str, object]:
        return {**self.attempt.to_dict(), "gpus": self.gpus, "wall_seconds": round(self.seconds, 1),
                "gpu_hours": round(self.gpu_seconds / 3600, 4), "basis": self.basis,
                "restarts": self.restarts, "preemptions": self.preemptions}  # fmt: skip


@dataclass
class ChainRow:
    """One line of the report: a chain's attempts and its figures."""

    root: str
    attempts: list[AttemptRow]
    redone: Redone
    gpu_hours_lost: float = 0.0
    sweep: str | None = None

    @property
    def outcome(self) -> str:
        return self.attempts[-1].attempt.phase.value

    @property
    def gpu_hours(self) -> float:
        return sum(a.gpu_seconds for a in self.attempts) / 3600

    @property
    def bases(self) -> list[str]:
        """What the attempts' GPU-hours were computed from, each once."""
        return list(dict.fromkeys(a.basis for a in self.attempts))

    @property
    def seconds(self) -> float:
        return sum(a.seconds for a in self.attempts)

    def figures(self) -> dict[str, float]:
        return {
            "attempts": len(self.attempts),
            "restarts": sum(a.restarts for a in self.attempts),
            "preemptions": sum(a.preemptions for a in self.attempts),
            "steps_lost": self.redone.steps,
            "wall_seconds": round(self.seconds, 1),
            "gpu_hours": round(self.gpu_hours, 4),
            "gpu_hours_lost": round(self.gpu_hours_lost, 4),
        }

    def to_dict(self, price: float | None) -> dict[str, object]:
        return {
            "job": self.root,
            "sweep": self.sweep,
            "outcome": self.outcome,
            **self.figures(),
            "best_loss": self.redone.best_loss,
            "best_map": self.redone.best_map,
            "target": None if self.redone.target is None else self.redone.target.to_dict(),
            "last_step": self.redone.last_step,
            **cost(self.gpu_hours, self.gpu_hours_lost, price),
            "gpu_hours_basis": self.bases,
            "chain": [a.to_dict() for a in self.attempts],
        }


def cost(used: float, lost: float, price: float | None) -> dict[str, float | None]:
    if price is None:
        return {"cost": None, "cost_lost": None}
    return {"cost": round(used * price, 2), "cost_lost": round(lost * price, 2)}


def totals(rows: Sequence[ChainRow], price: float | None) -> dict[str, object]:
    summed: dict[str, float] = {}
    for row in rows:
        for key, value in row.figures().items():
            summed[key] = summed.get(key, 0) + value
    used, lost = summed.get("gpu_hours", 0.0), summed.get("gpu_hours_lost", 0.0)
    bases = list(dict.fromkeys(b for row in rows for b in row.bases))
    return {"jobs": len(rows), **summed, **cost(used, lost, price), "gpu_hours_basis": bases}


async def _log_lines(client: RunaiClient, detail: JobDetail) -> list[str]:
    """The master pod's log: the container before its last restart or preemption, where the
    cluster keeps one (a pod never restarted has none: nothing), then the current one."""
    pod = master_pod(detail.pods)
    if pod is None:
        return []
    lines: list[str] = []
    for previous in (True, False):
        with contextlib.suppress(RunaiError):
            lines += [line async for line in client.stream_logs(
                detail.job.name, pod=pod.name, follow=False, previous=previous)]  # fmt: skip
    return lines


async def chain_row(client: RunaiClient, chain: Chain, now: float) -> ChainRow:
    """The report's row of `chain` (each attempt described and its master's log read)."""
    redone = Redone()
    rows: list[AttemptRow] = []
    lost = 0.0
    for attempt in chain.attempts:
        detail = await client.adescribe(attempt.name)
        start, end = wall(detail, now)
        seconds = max(0.0, end - start) if start is not None and end is not None else 0.0
        used, basis = gpu_seconds(detail, now)
        row = AttemptRow(attempt_of(detail), gpus(detail), seconds, restarts(detail),
                         preemptions(detail), 0.0, basis)  # fmt: skip
        row.gpu_seconds = row.gpus * seconds if used is None else used
        before = redone.seconds
        redone.feed_all(await _log_lines(client, detail))
        lost += (redone.seconds - before) * row.gpus / 3600
        rows.append(row)
    sweep = chain.attempts[0].record.sweep if chain.attempts[0].record else None
    return ChainRow(chain.root, rows, redone, lost, sweep)


def chains_of(attempts: Sequence[Attempt]) -> list[Chain]:
    """The attempts grouped into chains: each first submission (or one whose parent is gone)
    with its newest child, down; an attempt left over (a second child) is a chain of its own."""
    by_name = {a.name: a for a in attempts}
    children: dict[str, list[Attempt]] = {}
    for a in attempts:
        if a.parent is not None and a.parent in by_name:
            children.setdefault(a.parent, []).append(a)
    placed: set[str] = set()
    chains: list[Chain] = []
    for a in sorted(attempts, key=lambda a: (a.created.timestamp() if a.created else 0, a.name)):
        if a.name in placed or (a.parent is not None and a.parent in by_name):
            continue
        links = [a]
        while kids := [k for k in children.get(links[-1].name, []) if k.name not in placed]:
            links.append(max(kids, key=lambda k: (k.number, k.name)))
            placed.add(links[-1].name)
        placed.add(a.name)
        chains.append(Chain(links))
    for a in attempts:  # second children: their own chains
        if a.name not in placed:
            placed.add(a.name)
            chains.append(Chain([a]))
    return chains


async def recent_chains(client: RunaiClient, since: float, now: float) -> list[Chain]:
    """The chains of the jobs created in the last `since` seconds."""
    jobs: list[Job] = await client.alist_jobs()
    recent = [j.name for j in jobs if j.created is None or j.created.timestamp() >= now - since]
    gate = asyncio.Semaphore(READS_AT_ONCE)

    async def one(name: str) -> Attempt | None:
        async with gate:
            try:
                return attempt_of(await client.adescribe(name))
            except RunaiError:
                return None

    found = [a for a in await gather_all(one(n) for n in recent) if a is not None]
    return chains_of(found)


@dataclass
class Report:
    rows: list[ChainRow] = field(default_factory=list)
    price: float | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "price_per_gpu_hour": self.price,
            "jobs": [r.to_dict(self.price) for r in self.rows],
            "total": totals(self.rows, self.price),
        }


async def build(client: RunaiClient, chains: Sequence[Chain], price: float | None) -> Report:
    now = time.time()
    gate = asyncio.Semaphore(READS_AT_ONCE)

    async def one(chain: Chain) -> ChainRow:
        async with gate:
            return await chain_row(client, chain, now)

    return Report(await gather_all(one(c) for c in chains), price)


__all__ = ["Phase", "Report", "build", "chains_of", "recent_chains"]
