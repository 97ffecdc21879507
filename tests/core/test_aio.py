"""gather_all (runai_tui/aio.py): reads run together; the first failure cancels the others and
waits until each has ended, its stream closed in its own task, before it is raised."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from runai_tui.aio import gather_all


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
