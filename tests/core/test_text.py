"""text.natural_key: the one order of names the jobs table and `runai-tui list` share."""

from __future__ import annotations

from runai_tui.util.text import natural_key


def test_numbers_in_names_sort_by_value() -> None:
    names = ["t10", "t2", "t1", "t2-b", "a-10", "a-9", "T3", "t02", "run", "7", "t"]
    assert sorted(names, key=natural_key) == [
        "7", "a-9", "a-10", "run", "t", "t1", "t2", "t02", "t2-b", "T3", "t10",
    ]  # fmt: skip


def test_a_number_and_text_at_the_same_place_compare_without_error() -> None:
    assert sorted(["x-a", "x-1", "x-"], key=natural_key) == ["x-", "x-1", "x-a"]
