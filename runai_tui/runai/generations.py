"""The generation of the installed `runai` CLI from `runai version`, and the per-executable cache.

The installed CLI's own `--help` decides what it accepts (capabilities.py); this module keeps what
`runai version` says (for display, and as the fallback when help cannot be read), the `runai_cli`
override's values, the generations the field table's `cli` column names, and the cache both use.

What is certain and what is a guess (docs/runai-cli.md §3.3, §3.5, §8):
- CLI v2's `version` format is UNCONFIRMED, so any `2.x` (or `3.x`) number in the first line is
  taken. `Version: 2.25.0` may be CLI v1 or v2: a version line never decides v1; the help does
  (v1 has no `runai training` command).
- The 2.20/2.2x boundary: 2.21 and later count as the new generation (2.23 is field-tested with
  `--restart-policy`, 2.25 and v3.0 are documented).
- The embedded local cluster (`runai-local X (embedded local cluster)`) implements the 2.25 flag
  table (runai_tui/local/flags.py) and answers `--help` from it.

The cache is `$XDG_CACHE_HOME/runai-tui/cli-version.json`: one entry per executable, keyed by its
path and stamped with its mtime and size, so an auto-updated `runai` (2.22+ updates itself) is
asked again. An entry holds the version line and each command's parsed help.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any, NamedTuple

from runai_tui import __version__, paths
from runai_tui.atomic import atomic_write
from runai_tui.cli_generations import LABELS, V2_EARLY, V2_LATE

FIRST_LATE = (2, 21)
# The flag table runai-local parses is CLI v2.25's (runai_tui/local/flags.py).
LOCAL_EMULATES = V2_LATE

CACHE_NAME = "cli-version.json"
# Patterns as text: `re` compiles them at the first `classify`, not at every start.
_LOCAL = r"^runai-local\s+(\S+).*\(embedded local cluster\)"
_NUMBER = r"\bv?(\d+)\.(\d+)(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?"


class CliVersion(NamedTuple):
    """What `runai version` said: the `generation` (None when unknown), the `version` text
    ("2.20.1", "runai-local 0.1.0", or the line as printed when unreadable) and the first
    meaningful `line` of `runai version`."""

    generation: str | None
    version: str
    line: str = ""

    @property
    def label(self) -> str:
        """`runai 2.20.1 (CLI v2 ≤ 2.20)` for messages."""
        kind = LABELS.get(self.generation or "", "unknown CLI generation")
        name = self.version if self.version.startswith("runai") else f"runai {self.version}"
        return f"{name} ({kind})"


def classify(line: str) -> CliVersion:
    """The generation the first line of `runai version` belongs to (None when unreadable)."""
    line = line.strip()
    local = re.match(_LOCAL, line)
    if local:
        return CliVersion(LOCAL_EMULATES, f"runai-local {local.group(1)}", line)
    number = re.search(_NUMBER, line)
    if not number:
        return CliVersion(None, line or "(no output)", line)
    version = number.group(0).removeprefix("v")
    major, minor = int(number.group(1)), int(number.group(2))
    if major < 2 or (major == 2 and minor < 18):
        return CliVersion(None, version, line)  # before CLI v2 existed: not a CLI v2 number
    late = (major, minor) >= FIRST_LATE
    return CliVersion(V2_LATE if late else V2_EARLY, version, line)


# --- the override ----------------------------------------------------------------------------

# `runai_cli` values naming a generation rather than a version.
_GENERATION_NAMES = {
    "v2-early": V2_EARLY,
    "2.18-2.20": V2_EARLY,
    "v2.2x": V2_LATE,
    "v2-late": V2_LATE,
    "v3": V2_LATE,
}
OVERRIDE_EXPECTED = (
    "expected a CLI v2 generation (v2-early = 2.18-2.20, v2.2x = 2.21 and later) "
    "or a version such as 2.19 or 2.25.3"
)


def parse_override(value: Any) -> CliVersion:
    """The CliVersion a `runai_cli` setting names; ValueError (with what is expected) else."""
    text = str(value).strip().lower() if isinstance(value, (str, int, float)) else ""
    if text in _GENERATION_NAMES:
        generation = _GENERATION_NAMES[text]
        return CliVersion(generation, text, text)
    if re.fullmatch(r"v?1(\.\d+)*|cli-?v1", text):
        raise ValueError("CLI v1 is not supported: runai-tui needs the runai CLI v2")
    if re.fullmatch(r"v?\d+\.\d+(\.\d+)?", text):
        cli = classify(text)
        if cli.generation is not None:
            return cli
    raise ValueError(OVERRIDE_EXPECTED)


# --- the cache, one entry per executable ----------------------------------------------------


def cache_path() -> Path:
    return paths.cache_dir() / CACHE_NAME


def _stamp(executable: list[str]) -> tuple[str, dict[str, Any]] | None:
    """The cache key and the file stamp of the executable; None when it cannot be stat'ed."""
    try:
        info = Path(executable[0]).resolve().stat()
    except (OSError, IndexError):
        return None
    stamp = {"mtime_ns": info.st_mtime_ns, "size": info.st_size, "runai_tui": __version__}
    return "\0".join(executable), stamp


def _read_cache() -> dict[str, Any]:
    import json  # lazy: only a runai call reads the cache (the settings need parse_override alone)

    try:
        data = json.loads(cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cache_entry(executable: list[str]) -> dict[str, Any]:
    """The executable's cache entry while its stamp still matches ({} otherwise)."""
    key = _stamp(executable)
    if key is None:
        return {}
    entry = _read_cache().get(key[0])
    if not isinstance(entry, dict) or entry.get("stamp") != key[1]:
        return {}
    return entry


def cache_update(executable: list[str], **changes: Any) -> None:
    """Merge `changes` into the executable's entry (dicts are merged one level deep)."""
    key = _stamp(executable)
    if key is None:
        return

    data = _read_cache()
    entry = data.get(key[0])
    if not isinstance(entry, dict) or entry.get("stamp") != key[1]:
        entry = {"stamp": key[1]}
    for name, value in changes.items():
        if isinstance(value, dict) and isinstance(entry.get(name), dict):
            entry[name] = {**entry[name], **value}
        else:
            entry[name] = value
    data[key[0]] = entry
    import json  # lazy: only a runai call writes the cache (the settings need parse_override alone)

    # A read-only cache only costs the questions again.
    with contextlib.suppress(OSError):
        atomic_write(cache_path(), json.dumps(data, indent=1, sort_keys=True) + "\n")


def cached_version(executable: list[str]) -> CliVersion | None:
    entry = cache_entry(executable)
    return classify(str(entry["line"])) if "line" in entry else None


def remember_version(executable: list[str], line: str) -> None:
    cache_update(executable, line=line)


def first_line(text: str) -> str:
    """The first meaningful line of a CLI answer (notices and blank lines skipped)."""
    # lazy: runai.parse stays off the dry-run start-up path
    from runai_tui.runai.parse import first_meaningful_line, strip_notices

    return first_meaningful_line(strip_notices(text) or text)
