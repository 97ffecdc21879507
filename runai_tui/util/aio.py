"""Reads that run together: `gather_all`, the one way runai_tui awaits several at once.

`asyncio.gather` raises the first failure and leaves the other awaitables running: their
`runai` processes and log streams are then torn down by whoever closes the loop, out of order (a
stream's generator closed while its task still runs it: "aclose(): asynchronous generator is
already running"). Here the first failure cancels the others, waits until each has ended (its
process killed and reaped, its stream closed, in its own task) and only then is raised, so a
caller sees one error and nothing is left behind. Python 3.10 has no TaskGroup, which does the
same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, Sequence
from typing import TypeVar

_T = TypeVar("_T")


async def _end(tasks: Sequence[asyncio.Future[_T]]) -> None:
    """Cancel the tasks not yet done and wait until every one has ended."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def _gated(gate: asyncio.Semaphore, awaitable: Awaitable[_T]) -> _T:
    try:
        async with gate:
            return await awaitable
    except BaseException:
        if asyncio.iscoroutine(awaitable):
            awaitable.close()  # cancelled before its turn: never started, and never warned of
        raise


async def gather_all(awaitables: Iterable[Awaitable[_T]], at_once: int | None = None) -> list[_T]:
    """Every result, in the order given; the first failure (in that order, of those that failed
    by the time one did) is raised once the others are cancelled and ended. A cancel from
    outside cancels them all and waits for them the same way. `at_once`: at most that many
    run at a time (each `runai` read is a process of its own)."""
    if at_once is not None:
        gate = asyncio.Semaphore(at_once)
        awaitables = [_gated(gate, aw) for aw in awaitables]
    tasks = [asyncio.ensure_future(aw) for aw in awaitables]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except BaseException:
        await _end(tasks)
        raise
    failed = [t for t in tasks if t.done() and not t.cancelled() and t.exception() is not None]
    if failed:
        await _end(tasks)
        error = failed[0].exception()
        assert error is not None
        raise error
    return [task.result() for task in tasks]
