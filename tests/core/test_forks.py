"""forked_map (runai_tui/forks.py): CPU-bound work over forked copies of this process."""

from __future__ import annotations

import os
import threading

import pytest

from runai_tui.forks import forked_map

PARENT = os.getpid()


def whose(item: int) -> tuple[int, bool]:
    return item * item, os.getpid() == PARENT


def test_each_item_but_the_first_runs_in_a_child_and_results_keep_their_order() -> None:
    assert forked_map(whose, [1, 2, 3, 4]) == [(1, True), (4, False), (9, False), (16, False)]


def test_an_exception_in_a_child_is_raised_here() -> None:
    def fail_on_three(item: int) -> int:
        if item == 3:
            raise FileNotFoundError(2, "No such file or directory", f"part-{item}")
        return item

    with pytest.raises(FileNotFoundError) as raised:
        forked_map(fail_on_three, [1, 2, 3])
    assert raised.value.filename == "part-3"


def test_a_child_that_dies_has_its_item_run_here() -> None:
    def die_in_a_child(item: int) -> tuple[int, bool]:
        if os.getpid() != PARENT:
            os._exit(9)  # killed, say, by the OOM killer: no result comes back
        return item, True

    assert forked_map(die_in_a_child, [1, 2]) == [(1, True), (2, True)]


def test_no_fork_while_other_threads_run_or_for_one_item() -> None:
    assert forked_map(whose, [1]) is None
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert forked_map(whose, [1, 2]) is None  # the caller then runs them in turn
    finally:
        stop.set()
        other.join()
