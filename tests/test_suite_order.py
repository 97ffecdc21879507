"""The suite's hand-out order (tests/conftest.py LONGEST_FIRST) names each module once, and only
modules that exist: a name twice, or one renamed away, silently orders nothing."""

from __future__ import annotations

from tests.conftest import LONGEST_FIRST, REPO


def test_the_longest_modules_are_named_once_each_and_exist() -> None:
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST), LONGEST_FIRST
    assert [name for name in LONGEST_FIRST if not (REPO / name).is_file()] == []
