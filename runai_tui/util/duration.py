"""Durations as people type them: `300s`, `2m`, `1h30m`, `7d`, `2w` (Go's units plus days and
weeks), for `logs --since` and `--older-than`. `go_duration` writes one the way the runai CLI's
Go flag parser reads it (it has no days)."""

from __future__ import annotations

import re

from runai_tui.shapes.errors import UsageError

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
}
_PART = r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d|w)"
_WHOLE = re.compile(rf"^(?:{_PART})+$")
_PART_RE = re.compile(_PART)
HINT = "use a number and a unit: 30s, 5m, 3h, 1h30m, 7d, 2w"


def parse_duration(text: str, flag: str) -> float:
    """Seconds in `text`; a UsageError naming `flag` (exit 2) when it is not a duration."""
    value = text.strip()
    if not _WHOLE.match(value):
        raise UsageError(f"{flag} {text!r} is not a duration", HINT)
    return sum(float(n) * _UNITS[u] for n, u in _PART_RE.findall(value))


def go_duration(seconds: float) -> str:
    """`seconds` as a Go duration (`300s`, `48h`), which `runai ... --since` accepts."""
    whole = int(seconds)
    if whole == seconds:
        if whole and whole % 3600 == 0:
            return f"{whole // 3600}h"
        if whole and whole % 60 == 0:
            return f"{whole // 60}m"
        return f"{whole}s"
    return f"{seconds:g}s"
