"""Which pod's logs, and every pod's at once: ranks to pods, the wait for a Pending pod, and one
`logs` stream per pod merged as lines arrive. Both faces use it; it runs processes only through
the client (RunaiClient.stream_logs, adescribe).

Ranks follow the Kubeflow PyTorchJob operator (docs/runai-cli.md §4.2): the master pod is rank 0,
worker i is rank i+1 (rank i with --no-master). With several processes per pod (torchrun
--nproc-per-node) this is the pod's node rank: the master runs the rank-0 group.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runai_tui.shapes.errors import RunaiError, UsageError
from runai_tui.shapes.models import JobDetail, Phase

if TYPE_CHECKING:
    from runai_tui.runai.client import RunaiClient

_POD_NAME = re.compile(r"-(master|worker)-(\d+)$")
# A pod in one of these has no container to read yet: `logs -f` waits instead of failing.
_NOT_STARTED = (Phase.PENDING, Phase.CREATING, Phase.INITIALIZING, Phase.RESUMING)
WAIT_POLL_SECONDS = 1.0


@dataclass(frozen=True)
class LogChoice:
    """What to read from each pod: `tail` lines, lines newer than `since` (a Go duration), the
    `previous` container, and whether to `follow`."""

    follow: bool = False
    tail: int | None = None
    since: str | None = None
    previous: bool = False


@dataclass(frozen=True)
class PodLine:
    """One line of one pod's log."""

    pod: str
    text: str


def pods_by_rank(detail: JobDetail) -> dict[int, str]:
    """Rank -> pod name. From the pods describe lists; while it lists none (a Pending job on some
    CLIs), from the requested pod count and the Kubeflow names."""
    named = [
        (m.group(1), int(m.group(2)), p.name)
        for p in detail.pods
        if (m := _POD_NAME.search(p.name))
    ]
    if named:
        has_master = any(role == "master" for role, _, _ in named)
        ranks: dict[int, str] = {}
        for role, index, name in named:
            rank = index if role == "master" or not has_master else index + 1
            ranks[rank] = name
        return dict(sorted(ranks.items()))
    count = detail.job.requested_pods or 0
    job = detail.job.name
    return {r: f"{job}-master-0" if r == 0 else f"{job}-worker-{r - 1}" for r in range(count)}


def pod_for_rank(detail: JobDetail, rank: int) -> str:
    """The pod that runs `rank`; a UsageError (exit 2) when the job has no such rank."""
    ranks = pods_by_rank(detail)
    if rank in ranks:
        return ranks[rank]
    have = f"ranks 0-{max(ranks)}" if ranks else "no pods yet"
    raise UsageError(
        f"rank {rank} is out of range: job {detail.job.name!r} has {len(ranks)} pod(s) ({have})",
        "the master is rank 0 and worker i is rank i+1; `runai-tui describe JOB` lists the pods",
    )


def all_pods(detail: JobDetail) -> list[str]:
    """Every pod of the job, in rank order."""
    return list(pods_by_rank(detail).values()) or [p.name for p in detail.pods]


def waiting_on(detail: JobDetail, pod: str | None) -> str | None:
    """Why `pod` (None: the first pod) has nothing to show yet, e.g. "pod x-master-0 is
    Pending"; None when its container has started or the job has ended."""
    if detail.job.phase.is_terminal or detail.job.phase is Phase.STOPPED:
        return None
    target = next((p for p in detail.pods if p.name == pod), None) if pod else None
    if target is None and not pod and detail.pods:
        target = detail.pods[0]
    if target is not None:
        if target.phase in _NOT_STARTED:
            return f"pod {target.name} is {target.phase.value}"
        return None
    if detail.job.phase in _NOT_STARTED:
        return f"job {detail.job.name} is {detail.job.phase.value}"
    return None


async def wait_until_started(
    client: RunaiClient,
    name: str,
    pod: str | None,
    notice: Callable[[str], None],
    poll: float = WAIT_POLL_SECONDS,
) -> JobDetail:
    """Return once `pod` of job `name` has started (at once when it has); `notice` is told
    once, the first time it has not. Unknown job: the client's RunaiError."""
    said = False
    while True:
        detail = await client.adescribe(name)
        why = waiting_on(detail, pod)
        if why is None:
            return detail
        if not said:
            said = True
            notice(f"{why}: waiting for it to start")
        await asyncio.sleep(poll)


async def merged_lines(
    client: RunaiClient, name: str, pods: list[str], choice: LogChoice
) -> AsyncGenerator[PodLine, None]:
    """Every pod's lines. Following: one `logs` stream per pod at once, lines handed on as they
    arrive; otherwise pod after pod. A pod whose stream fails does not stop the others: its
    RunaiError is raised at the end (the first one, naming the pod)."""
    failures: list[tuple[str, RunaiError]] = []
    if not choice.follow:
        for pod in pods:
            try:
                async with contextlib.aclosing(_stream(client, name, pod, choice)) as lines:
                    async for text in lines:
                        yield PodLine(pod, text)
            except RunaiError as exc:
                failures.append((pod, exc))
    else:
        queue: asyncio.Queue[PodLine | tuple[str, RunaiError | None]] = asyncio.Queue(1024)

        async def pump(pod: str) -> None:
            error: RunaiError | None = None
            try:
                async with contextlib.aclosing(_stream(client, name, pod, choice)) as lines:
                    async for text in lines:
                        await queue.put(PodLine(pod, text))
            except RunaiError as exc:
                error = exc
            await queue.put((pod, error))

        tasks = [asyncio.create_task(pump(pod)) for pod in pods]
        try:
            running = len(tasks)
            while running:
                item = await queue.get()
                if isinstance(item, PodLine):
                    yield item
                    continue
                running -= 1
                if item[1] is not None:
                    failures.append((item[0], item[1]))
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    if failures:
        pod, error = failures[0]
        others = f" (and {len(failures) - 1} more pod(s))" if len(failures) > 1 else ""
        error.message = f"pod {pod}: {error.message}{others}"
        raise error


def _stream(
    client: RunaiClient, name: str, pod: str, choice: LogChoice
) -> AsyncGenerator[str, None]:
    return client.stream_logs(
        name,
        pod,
        follow=choice.follow,
        tail=choice.tail,
        since=choice.since,
        previous=choice.previous,
    )
