"""gather_all (runai_tui/util/aio.py): reads run together; the first failure cancels the others and
waits until each has ended, its stream closed in its own task, before it is raised."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator

import pytest

from runai_tui.util.aio import gather_all


def test_the_first_failure_ends_the_other_reads_before_it_is_raised() -> None:
    said: list[str] = []

    async def lines() -> AsyncIterator[int]:
        try:
            for i in range(10_000):
                await asyncio.sleep(0.001)
                yield i
        finally:
            said.append("stream closed")

    async def reads() -> int:
        count = 0
        async for _ in lines():
            count += 1
        return count

    async def fails() -> int:
        await asyncio.sleep(0.02)
        raise LookupError("no such job")

    async def main() -> None:
        with pytest.raises(LookupError, match="no such job"):
            await gather_all([reads(), fails(), reads()])
        said.append("raised")
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []

    asyncio.run(main())
    assert said == ["stream closed", "stream closed", "raised"]


def test_results_in_order_and_nothing_to_await() -> None:
    async def after(delay: float, value: int) -> int:
        await asyncio.sleep(delay)
        return value

    async def main() -> tuple[list[int], list[int]]:
        return await gather_all([after(0.02, 1), after(0.0, 2)]), await gather_all([])

    assert asyncio.run(main()) == ([1, 2], [])


def test_at_once_bounds_how_many_run_and_a_failure_before_their_turn_starts_none() -> None:
    running, most, started = 0, 0, []

    async def one(i: int) -> int:
        nonlocal running, most
        started.append(i)
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01)
        running -= 1
        if i == 1:
            raise ValueError("the second fails")
        return i

    async def main() -> None:
        assert await gather_all((one(i) for i in (0, 2, 3, 4)), at_once=2) == [0, 2, 3, 4]
        assert most == 2
        started.clear()
        with pytest.raises(ValueError, match="the second fails"):
            await gather_all((one(i) for i in range(6)), at_once=2)
        # Those that took the freed places were cancelled; the rest never started.
        assert started[:2] == [0, 1] and not {4, 5} & set(started)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine ... was never awaited"
        asyncio.run(main())
