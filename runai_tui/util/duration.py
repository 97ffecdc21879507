"""Every duration runai-tui reads, by one parser: command-line flags (`--interval 5`,
`--since 1h30m`, `--older-than 7d`), settings (`refresh = 2`), profile fields and the local
cluster's `runai` flags (Go's `time.ParseDuration` forms: `30s`, `1m30s`, `.5s`, `0`).

A duration is a number of seconds (where the flag says seconds) or numbers each with a unit
(Go's units, plus days and weeks where people type them; Go's forms have no days). Junk, a
negative, `nan`, `inf` and anything too large to be a float are refused in one line: a sleep
of nan seconds never ends, and a grace period of nan is no grace at all.
`go_duration` writes one the way the runai CLI's Go flag parser reads it.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from runai_tui.shapes.errors import UsageError

_GO_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # U+00B5, as Go spells it
    "μs": 1e-6,  # U+03BC, which Go accepts too
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_UNITS = {**_GO_UNITS, "d": 86400.0, "w": 604800.0}
_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"  # ASCII digits only, as Go reads them
_PART = re.compile(rf"({_NUMBER})([^0-9.]*)")
_BARE = re.compile(rf"{_NUMBER}")
_EXPONENT = re.compile(rf"{_NUMBER}[eE][-+]?[0-9]+")
# Go's time.Duration is an int64 of nanoseconds: about 292 years.
_GO_MAX_SECONDS = (2**63 - 1) / 1e9
HINT = "use a number and a unit: 30s, 5m, 3h, 1h30m, 7d, 2w"
SECONDS_HINT = "use a number of seconds (5, 0.5) or a number and a unit: 30s, 5m, 1h30m"


class DurationError(ValueError):
    """Not a duration; the message says why in a few words (`unit`: the unknown unit, if so)."""

    def __init__(self, why: str, unit: str | None = None) -> None:
        super().__init__(why)
        self.unit = unit


def read_seconds(
    value: object, *, bare: bool = True, go: bool = False, positive: bool = False
) -> float:
    """Seconds in `value`: a string with units (`1h30m`), or with `bare` a number of seconds
    (`5`, `0.5`, or an int/float as a settings file holds it); with `go` only Go's units and
    Go's forms (a bare `0`, no days). DurationError unless finite and 0 or more (above 0 with
    `positive`)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DurationError("not a duration")
    if isinstance(value, (int, float)):
        if not bare:
            raise DurationError("not a duration: give a unit")
        seconds = float(value)
    else:
        seconds = _parse_text(value if go else value.strip(), bare, _GO_UNITS if go else _UNITS)
    if math.isnan(seconds):
        raise DurationError("not a number")
    if seconds < 0:
        raise DurationError("negative")
    if math.isinf(seconds) or (go and seconds > _GO_MAX_SECONDS):
        raise DurationError("too large")
    if positive and seconds == 0:
        raise DurationError("must be more than 0")
    return seconds


def _parse_text(text: str, bare: bool, units: dict[str, float]) -> float:
    sign, text = (text[0], text[1:]) if text[:1] in ("-", "+") else ("", text)
    seconds = _unsigned(text, bare, units)
    if sign == "-" and seconds > 0:
        raise DurationError("negative")
    return seconds


def _unsigned(text: str, bare: bool, units: dict[str, float]) -> float:
    if text == "0" or (bare and _BARE.fullmatch(text)):
        return float(text)
    if not text:
        raise DurationError("empty")
    if bare and _EXPONENT.fullmatch(text):  # 1e3 is no unit e (Go's words keep Go's reading)
        raise DurationError(_junk(text))
    total, at = 0.0, 0
    for match in _PART.finditer(text):
        if match.start() != at:
            break
        number, unit = match.groups()
        if unit not in units:
            raise DurationError(f"unknown unit {unit!r}" if unit else "missing unit", unit)
        total += float(number) * units[unit]
        at = match.end()
    if at != len(text):
        raise DurationError(_junk(text))
    return total


def _junk(text: str) -> str:
    """Why `text` is no duration: nan and inf (which float() reads) are named as such."""
    try:
        number = float(text)
    except ValueError:
        return "expected digits and a unit"
    return (
        "not a finite number" if not math.isfinite(number) else "an exponent: write the digits out"
    )


def parse_duration(text: str, flag: str) -> float:
    """Seconds in `text`, which needs a unit (`logs --since`, `--older-than`); a UsageError
    naming `flag` (exit 2) when it is not a duration."""
    try:
        return read_seconds(text, bare=False)
    except DurationError as exc:
        raise UsageError(f"{flag} {text!r} is not a duration ({exc})", HINT) from None


def seconds_arg(positive: bool = False) -> Callable[[str], float]:
    """An argparse `type=` for a flag in seconds (`5`, `0.5`, `30s`, `2m`): a mistake is one
    `argument --flag: ...` line, exit 2 (cli.common.Parser)."""

    def seconds(text: str) -> float:
        try:
            return read_seconds(text, positive=positive)
        except DurationError as exc:
            raise argparse.ArgumentTypeError(f"{text!r}: {exc}; {SECONDS_HINT}") from None

    seconds.__name__ = "duration"  # argparse names the type in some messages
    return seconds


def go_seconds(text: str) -> float:
    """Seconds in a Go duration as `runai` reads one (time.ParseDuration: `30s`, `1m30s`, `.5s`,
    `0`); a negative is refused too. DurationError in Go's words (`time: invalid duration "x"`,
    `time: missing unit in duration "5"`, `time: unknown unit "x" in duration "1x"`)."""
    try:
        return read_seconds(text, bare=False, go=True)
    except DurationError as exc:
        if exc.unit == "":
            raise DurationError(f'time: missing unit in duration "{text}"') from None
        if exc.unit:
            raise DurationError(f'time: unknown unit "{exc.unit}" in duration "{text}"') from None
        raise DurationError(f'time: invalid duration "{text}"') from None


def go_duration(seconds: float) -> str:
    """`seconds` as a Go duration (`300s`, `48h`), which `runai ... --since` accepts."""
    whole = int(seconds)
    if whole == seconds:
        if whole and whole % 3600 == 0:
            return f"{whole // 3600}h"
        if whole and whole % 60 == 0:
            return f"{whole // 60}m"
        return f"{whole}s"
    # Decimal digits to the nanosecond, never an exponent (`1e-07s` is no Go duration).
    return (f"{seconds:.9f}".rstrip("0").rstrip(".") or "0") + "s"
