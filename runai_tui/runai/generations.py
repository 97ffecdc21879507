"""Which generation of the `runai` CLI is installed, told once from `runai version` and cached.

Flag names changed between CLI generations (docs/runai-cli.md §1.4 and §7): `-e` is valid in all of
them, while `--preemptibility` and the restart policies exist only in CLI v2 from about 2.21 on.
The profile field table (runai_tui/profiles/fields.py) records which generations know each
field's flag; `check_profile` turns a field the detected CLI lacks into a validation error
(exit 2) BEFORE anything is submitted, instead of letting `runai` fail on an unknown flag.

What is certain and what is a guess (docs/runai-cli.md §3.3, §3.5):
- CLI v1 prints `Version: x` then `BuildDate:`, `GitCommit:`… (its source); CLI v2's format is
  UNCONFIRMED, so any `2.x` number in the first line is taken. A v1 answer only warns (runai-tui
  speaks CLI v2; v1's exact output is too close to a guess to refuse on it).
- The 2.20/2.2x boundary is "about 2.20" in the reference: 2.21 and later count as the new
  generation (2.23 is field-tested with `--restart-policy`, 2.25 and v3.0 are documented).
- The embedded local cluster (`runai-local X (embedded local cluster)`) implements the 2.25 flag
  table (runai_tui/local/flags.py; tests/local/test_flags.py keeps the two in agreement).
- An answer we cannot read never blocks a submit: it warns once (per executable and version).

The cache is `$XDG_CACHE_HOME/runai-tui/cli-version.json`, keyed by the executable and its
mtime and size, so an auto-updated `runai` (2.22+ updates itself) is asked again.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from runai_tui import __version__, paths
from runai_tui.atomic import atomic_write
from runai_tui.cli_generations import (
    ALL,
    GENERATIONS,
    LABELS,
    V1,
    V2,
    V2_EARLY,
    V2_LATE,
    V2_LATE_ONLY,
)
from runai_tui.errors import ErrorKind, RunaiError
from runai_tui.profiles import Problem, Profile, ProfileError, unsupported_fields

if TYPE_CHECKING:  # the backend only when it runs
    from runai_tui.runai.backend import Backend


class _VersionClient(Protocol):
    backend: Backend

    def version(self) -> str: ...


class _AsyncVersionClient(Protocol):
    backend: Backend

    async def aversion(self) -> str: ...


FIRST_LATE = (2, 21)
# The flag table runai-local parses is CLI v2.25's (runai_tui/local/flags.py).
LOCAL_EMULATES = V2_LATE

# `describe --pod-limit N --event-limit N` (-1: no limit; defaults 10 pods and 50 events) are in
# the 2.25 reference ([D25]); the 2.18-2.20 docs ([D20]) and CLI v1 do not have them.
DESCRIBE_LIMITS = V2_LATE_ONLY
NO_DESCRIBE_LIMITS = ["--pod-limit", "-1", "--event-limit", "-1"]

CACHE_NAME = "cli-version.json"
# Patterns as text: `re` compiles them at the first `classify`, not at every start.
_LOCAL = r"^runai-local\s+(\S+).*\(embedded local cluster\)"
_V1 = r"^Version:\s*v?(\d+)\.(\d+)"
_NUMBER = r"\bv?(\d+)\.(\d+)(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?"


@dataclass(frozen=True)
class CliVersion:
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
    if re.match(_V1, line):
        return CliVersion(V1, version, line)
    if major < 2 or (major == 2 and minor < 18):
        return CliVersion(None, version, line)  # before CLI v2 existed: not a CLI v2 number
    late = (major, minor) >= FIRST_LATE
    return CliVersion(V2_LATE if late else V2_EARLY, version, line)


# --- detection, cached per executable ---------------------------------------------------------


@dataclass(frozen=True)
class Detection:
    """The `cli` and a `warning`, said once: when the answer was just asked and could not be
    read ("" otherwise)."""

    cli: CliVersion
    warning: str = ""


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
    import json  # lazy: only a real submit detects; the dry run's start-up stays at its floor

    try:
        data = json.loads(cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _cached(executable: list[str]) -> CliVersion | None:
    key = _stamp(executable)
    if key is None:
        return None
    entry = _read_cache().get(key[0])
    if not isinstance(entry, dict) or entry.get("stamp") != key[1]:
        return None
    return classify(str(entry.get("line", "")))


def _remember(executable: list[str], line: str) -> None:
    key = _stamp(executable)
    if key is None:
        return
    import json  # lazy: see _read_cache

    data = _read_cache()
    data[key[0]] = {"stamp": key[1], "line": line}
    # A read-only cache only costs one `runai version` per submit.
    with contextlib.suppress(OSError):
        atomic_write(cache_path(), json.dumps(data, indent=1, sort_keys=True) + "\n")


def _finish(executable: list[str], line: str, error: RunaiError | None) -> Detection:
    if error is None or error.kind is not ErrorKind.TIMEOUT:
        _remember(executable, line)
    cli = classify(line)
    if error is not None:
        why = f"`version` failed: {error.message}"
    elif cli.generation is None:
        why = f"`version` printed {cli.version!r}"
    elif cli.generation == V1:
        return Detection(
            cli,
            f"{cli.label} looks like CLI v1; runai-tui speaks CLI v2 "
            "(`runai training pytorch submit`), so the submit may fail",
        )
    else:
        return Detection(cli)
    return Detection(
        cli, f"cannot tell the runai CLI generation ({why}); submitting without checking flags"
    )


def detect(client: _VersionClient) -> Detection:
    """The CLI generation of client's executable: from the cache, else by asking `version`."""
    executable = list(client.backend.executable)
    cached = _cached(executable)
    if cached is not None:
        return Detection(cached)
    try:
        line = client.version()
    except RunaiError as error:
        return _finish(executable, "", error)
    return _finish(executable, line, None)


async def adetect(client: _AsyncVersionClient) -> Detection:
    """detect() for the TUI: the same cache, the async client."""
    executable = list(client.backend.executable)
    cached = _cached(executable)
    if cached is not None:
        return Detection(cached)
    try:
        line = await client.aversion()
    except RunaiError as error:
        return _finish(executable, "", error)
    return _finish(executable, line, None)


def describe_limits(generation: str | None) -> bool | None:
    """Whether `describe` of this generation takes --pod-limit/--event-limit: True, False, or
    None when the generation is unknown (try them, and describe again without on refusal)."""
    if generation is None:
        return None
    return generation in DESCRIBE_LIMITS


# --- the check ------------------------------------------------------------------------------


def check_profile(profile: Profile, cli: CliVersion) -> None:
    """Raise ProfileError (exit 2) naming every field whose flag `cli` lacks; unknown passes."""
    if cli.generation is None or cli.generation == V1:
        return
    problems = []
    for spec, path in unsupported_fields(profile, cli.generation):
        file, line = profile.origins.get(path, (str(profile.source or profile.name), None))
        needs = ", ".join(LABELS[g] for g in GENERATIONS if g in spec.cli)
        problems.append(
            Problem(file, line, path, f"{spec.flag} is not in {cli.label}; it needs {needs}")
        )
    if problems:
        fields = " ".join(f"--set {p.field}=" for p in problems)
        raise ProfileError(
            problems,
            f"drop the field for this CLI ({fields}) or update the runai CLI",
        )


# `logs` flags beyond --pod/--follow/--tail and the generations that have them: CLI v2 documents
# both ([D20], [D25]); CLI v1's `runai logs` has --since but no --previous ([V1SRC] logs.go).
LOGS_FLAGS = {"--previous": V2, "--since": ALL}


def check_logs_flags(flags: list[str], cli: CliVersion) -> None:
    """Raise UsageError (exit 2) for the first of `flags` that `cli` lacks; unknown passes."""
    from runai_tui.errors import UsageError

    if cli.generation is None:
        return
    for flag in flags:
        have = LOGS_FLAGS.get(flag, ALL)
        if cli.generation not in have:
            needs = ", ".join(LABELS[g] for g in GENERATIONS if g in have)
            raise UsageError(
                f"logs {flag} is not in {cli.label}; it needs {needs}",
                f"drop {flag}, or update the runai CLI",
            )
