"""Every duration runai-tui reads goes through runai_tui/util/duration.py: a round trip of what it
writes, what it refuses (nan, inf, negatives, junk) for any text, and each command's refusal as a
user meets it, a real `runai-tui` process exiting 2 with one error line."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runai_tui.shapes.errors import UsageError
from runai_tui.util.duration import (
    DurationError,
    go_duration,
    go_seconds,
    parse_duration,
    read_seconds,
)

UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
GO_UNITS = ("ns", "us", "µs", "ms", "s", "m", "h")
BAD_NUMBERS = ("nan", "NaN", "inf", "-inf", "Infinity", "+inf", "1e400", "-1", "-0.5", "-2s")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(sorted(UNITS))), min_size=1))
def test_parts_with_units_read_as_their_sum(parts: list[tuple[int, str]]) -> None:
    text = "".join(f"{n}{unit}" for n, unit in parts)
    want = sum(n * UNITS[unit] for n, unit in parts)
    assert read_seconds(text) == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert parse_duration(text, "--since") == pytest.approx(want, rel=1e-12, abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.integers(0, 9 * 10**9),  # Go's durations end near 292 years
        st.floats(0, 10**9, allow_nan=False, allow_infinity=False),
    )
)
def test_what_go_duration_writes_reads_back(seconds: float) -> None:
    """`go_duration` writes what `runai` (Go) and this parser read: never an exponent."""
    text = go_duration(seconds)
    assert "e" not in text
    assert go_seconds(text) == pytest.approx(seconds, rel=1e-9, abs=1e-9)
    typed = repr(seconds)
    if "e" not in typed:  # an exponent is no duration: `--interval 1e-05` is refused
        assert read_seconds(typed) == seconds


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_number_is_read_only_when_finite_and_not_negative(number: float) -> None:
    fine = math.isfinite(number) and number >= 0
    for value in (number, repr(number)):
        if fine and "e" not in str(value):
            assert read_seconds(value) == number
        elif not fine:
            with pytest.raises(DurationError):
                read_seconds(value)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=12))
def test_any_text_is_a_finite_duration_or_one_refusal(text: str) -> None:
    for kwargs in ({}, {"bare": False}, {"bare": False, "go": True}):
        try:
            seconds = read_seconds(text, **kwargs)  # type: ignore[arg-type]
        except DurationError as exc:
            assert "\n" not in str(exc)
        else:
            assert math.isfinite(seconds) and seconds >= 0


@pytest.mark.parametrize("text", BAD_NUMBERS)
def test_nan_inf_and_negatives_are_refused_everywhere(text: str) -> None:
    for kwargs in ({}, {"bare": False}, {"bare": False, "go": True}):
        with pytest.raises(DurationError):
            read_seconds(text, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="is not a duration"):
        parse_duration(text, "--since")


def test_go_forms_and_go_words() -> None:
    """runai reads Go's time.ParseDuration: `.5s`, `5.s`, `1m30s`, a bare `0`, no days."""
    assert go_seconds("1m30s") == 90 and go_seconds(".5s") == 0.5 and go_seconds("5.s") == 5
    assert go_seconds("0") == 0 and go_seconds("2h") == 7200 and go_seconds("+1s") == 1
    for text, words in [
        ("banana", 'time: invalid duration "banana"'),
        ("5", 'time: missing unit in duration "5"'),
        ("7d", 'time: unknown unit "d" in duration "7d"'),
        ("-5s", 'time: invalid duration "-5s"'),
        (" 5s", 'time: invalid duration " 5s"'),
        ("300000000h", 'time: invalid duration "300000000h"'),  # past Go's int64 nanoseconds
    ]:
        with pytest.raises(DurationError) as info:
            go_seconds(text)
        assert str(info.value) == words


@pytest.mark.parametrize(
    "argv",
    [
        ["watch", "job-a", "--interval", "nan"],
        ["watch", "job-a", "--backoff", "nan"],
        ["watch", "job-a", "--backoff", "inf"],
        ["watch", "job-a", "--backoff", "-5"],
        ["wait", "job-a", "--interval", "nan"],
        ["wait", "job-a", "--timeout", "inf"],
        ["burnin", "--profile", "retinanet-local", "--interval", "nan"],
        ["burnin", "--profile", "retinanet-local", "--wait-timeout", "banana"],
        ["top", "job-a", "--watch", "--every", "nan"],
        ["top", "job-a", "--watch", "--every", "0"],
        ["sweep", "--profile", "retinanet-local", "--plan", "--step-time", "inf"],
        ["lint", "retinanet-local", "--step-time", "nan"],
        ["logs", "job-a", "--since", "inf"],
        ["delete", "--selector", "job-*", "--older-than", "1x"],
        ["--timeout", "nan", "list"],
        ["--refresh", "nan", "list"],
    ],
)
def test_each_command_refuses_a_bad_duration_in_one_line_exit_2(argv: list[str]) -> None:
    at = next(i for i, word in enumerate(argv) if word in ("nan", "inf", "-5", "banana", "0", "1x"))
    flag, value = argv[at - 1], argv[at]
    proc = subprocess.run(
        [sys.executable, "-m", "runai_tui.cli", "--backend", "local", *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2, proc.stderr
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert flag in errors[0] and value in errors[0], errors[0]
