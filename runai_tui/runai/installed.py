"""What the installed `runai` is and accepts: its `runai version` line and its own cobra `--help`,
asked once per executable and cached.

The published reference pages are the CLI's cobra help (docs/runai-cli.md §8), so the installed
CLI can say which flags and verbs it has, on any version, including ones no page describes.
`runai <command> --help` is read once for each command runai-tui uses (COMMANDS), when it is
first needed. The `Flags:` section gives the flags, `Available Commands:` the verbs.

Where help cannot be read (a wrapper script, say) the answer comes from `runai version`: its
generation (runai_tui/shapes/cli_generations.py reads the line) and the documented pages of that
generation (`_BY_GENERATION`, and the field table's `cli` column for submit). The `runai_cli`
setting (config.toml, RUNAI_TUI_RUNAI_CLI) overrides both. Every answer says where it came from:
"help", "version" or "override".

CLI v1 (no `runai training` command) is refused before any command is built (exit 2).

The cache is `$XDG_CACHE_HOME/runai-tui/cli-version.json`: one entry per executable, keyed by its
path and stamped with its mtime and size, so an auto-updated `runai` (2.22+ updates itself) is
asked again. An entry holds the version line and each command's parsed help.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runai_tui import __version__
from runai_tui.runai.parse import first_meaningful_line, strip_notices
from runai_tui.shapes.cli_generations import V2, V2_EARLY, V2_LATE_ONLY, CliVersion, classify
from runai_tui.shapes.errors import UsageError
from runai_tui.util import paths
from runai_tui.util.atomic import atomic_write

# The commands runai-tui runs, by key: the words after `runai`.
COMMANDS: dict[str, tuple[str, ...]] = {
    "pytorch": ("training", "pytorch"),
    "submit": ("training", "pytorch", "submit"),
    "describe": ("training", "pytorch", "describe"),
    "logs": ("training", "pytorch", "logs"),
    "delete": ("training", "pytorch", "delete"),
    "suspend": ("training", "pytorch", "suspend"),
    "resume": ("training", "pytorch", "resume"),
    "exec": ("training", "pytorch", "exec"),
    "port-forward": ("training", "pytorch", "port-forward"),
    "list": ("training", "list"),
    "training": ("training",),  # its Available Commands: the frameworks' subcommands
}
GROUPS = ("pytorch", "training")  # keys whose help lists subcommands, not flags
VERBS = ("delete", "describe", "exec", "logs", "port-forward", "resume", "submit", "suspend")

# Answers when help cannot be read: the generations whose documented pages list the flag or
# verb (docs/runai-cli.md §8). Anything not listed here is in every CLI v2 generation; submit's
# flags come from the field table's `cli` column.
_EARLY = frozenset({V2_EARLY})
_BY_GENERATION: dict[tuple[str, str], frozenset[str]] = {
    ("list", "--next-token"): V2_LATE_ONLY,
    ("list", "--limit"): _EARLY,
    ("list", "--offset"): _EARLY,
    ("pytorch", "suspend"): V2_LATE_ONLY,
    ("pytorch", "resume"): V2_LATE_ONLY,
}
# `training list --limit N` where there is no paging: more than any project holds.
LIST_LIMIT = 100_000
# `training list --limit N --offset M` pages of this size.
OFFSET_PAGE = 500

HINT_V1 = (
    "install the runai CLI v2 from your Run:ai control plane (UI: ? > Researcher Command Line "
    "Interface), then put it first on PATH or set RUNAI_TUI_RUNAI to it"
)


@dataclass(frozen=True)
class CobraHelp:
    """What one `--help` listed: its local `flags` (`--name` and `-x`) and its subcommands."""

    flags: frozenset[str]
    commands: frozenset[str]

    def to_json(self) -> dict[str, list[str]]:
        return {"flags": sorted(self.flags), "commands": sorted(self.commands)}

    @classmethod
    def from_json(cls, data: object) -> CobraHelp | None:
        if not isinstance(data, dict):
            return None
        return cls(frozenset(data.get("flags") or ()), frozenset(data.get("commands") or ()))


_FLAG_LINE = re.compile(r"^\s{1,8}(?:-([A-Za-z0-9?]),\s+)?--([A-Za-z0-9][\w.-]*)")
_SHORT_ONLY = re.compile(r"^\s{1,8}-([A-Za-z0-9?])(?:\s|$)")
_COMMAND_LINE = re.compile(r"^\s{1,8}([A-Za-z0-9][\w-]*)(?:\s+|$)")
_COMMAND_SECTIONS = ("Available Commands:", "Additional Commands:")


def parse_help(text: str) -> CobraHelp | None:
    """The flags of the `Flags:` section and the words of `Available Commands:` in cobra help
    text; None when the text has neither a `Usage:` line nor those sections (not cobra help)."""
    flags: set[str] = set()
    commands: set[str] = set()
    section = ""
    seen_usage = seen_section = False
    for line in text.splitlines():
        if line and not line[0].isspace():
            section = line.strip() if line.rstrip().endswith(":") else ""
            seen_usage = seen_usage or section == "Usage:"
            seen_section = seen_section or section == "Flags:" or section in _COMMAND_SECTIONS
            continue
        if section == "Flags:":
            match = _FLAG_LINE.match(line)
            if match:
                flags.add(f"--{match.group(2)}")
                if match.group(1):
                    flags.add(f"-{match.group(1)}")
                continue
            short = _SHORT_ONLY.match(line)
            if short:
                flags.add(f"-{short.group(1)}")
        elif section in _COMMAND_SECTIONS:
            match = _COMMAND_LINE.match(line)
            if match:
                commands.add(match.group(1))
    if not (seen_usage and seen_section):
        return None
    return CobraHelp(frozenset(flags), frozenset(commands))


def _says_no_training(code: int, text: str) -> bool:
    """cobra's answer when `runai training` does not exist: CLI v1 (`submit-dist pytorch`)."""
    return code != 0 and re.search(r'unknown command "training" for', text) is not None


# A runner of probe commands: args after the executable -> (exit code, stdout + stderr).
Probe = Callable[[list[str]], Awaitable[tuple[int, str]]]


@dataclass
class Capabilities:
    """What one executable accepts, filled in per command as commands are first used."""

    executable: list[str]
    override: CliVersion | None = None
    override_source: str = ""
    helps: dict[str, CobraHelp | None] = field(default_factory=dict)
    version: CliVersion | None = None
    warnings: list[str] = field(default_factory=list)
    _warned: bool = False

    # -- filling in -------------------------------------------------------------------------

    async def aload(self, probe: Probe, keys: Iterable[str] = ()) -> None:
        """Read (or take from the cache) the help of `pytorch` and of each of `keys`; refuse
        CLI v1 (UsageError, exit 2). Nothing is run when the override is set."""
        if self.override is not None:
            return
        for key in dict.fromkeys(("pytorch", *keys)):
            if key in self.helps:
                continue
            if self._verb_missing(key):
                self.helps[key] = None  # its help would only say "unknown command"
                continue
            entry = cache_entry(self.executable).get("help", {})
            if key in entry:
                if entry[key] == "v1":
                    await self._refuse_v1(probe)
                self.helps[key] = CobraHelp.from_json(entry[key])
            else:
                code, text = await probe([*COMMANDS[key], "--help"])
                if key == "pytorch" and _says_no_training(code, text):
                    cache_update(self.executable, help={key: "v1"})
                    await self._refuse_v1(probe)
                found = parse_help(text) if code == 0 else None
                self.helps[key] = found
                cache_update(self.executable, help={key: found.to_json() if found else None})
                if found is None and not self._warned:
                    self._warned = True  # once: the next unreadable help says the same
                    await self.aversion(probe)
                    words = " ".join(COMMANDS[key])
                    said = first_line(text) or "(no output)"
                    self.warnings.append(
                        f"cannot read `runai {words} --help` ({said!r}, exit {code}); "
                        f"deciding by {self._fallback_label()}"
                    )
            if self.helps[key] is None:
                await self.aversion(probe)

    def _verb_missing(self, key: str) -> bool:
        """Whether `key` is a `training pytorch` verb that the pytorch help does not list."""
        words, parent = COMMANDS[key], self.helps.get("pytorch")
        if parent is None or len(words) != 3 or words[:2] != COMMANDS["pytorch"]:
            return False
        return words[2] not in parent.commands

    async def aversion(self, probe: Probe) -> CliVersion:
        """`runai version` (cached as before): for display, messages and the fallback."""
        if self.version is None:
            cached = cached_version(self.executable)
            if cached is not None:
                self.version = cached
            else:
                code, text = await probe(["version"])
                line = first_line(text) if code == 0 else ""
                remember_version(self.executable, line)
                self.version = classify(line)
        return self.version

    async def _refuse_v1(self, probe: Probe) -> None:
        version = await self.aversion(probe)
        name = version.name if version.generation is not None else "runai"
        raise UsageError(
            f"{name} at {self.executable[0]} is CLI v1 (it has no `runai training` command); "
            "runai-tui needs the runai CLI v2",
            HINT_V1,
        )

    def _fallback_label(self) -> str:
        cli = self.version
        if cli is None or cli.generation is None:
            return "nothing (the version is unreadable too): every flag is tried"
        return f"the version line: {cli.label}"

    # -- answers ----------------------------------------------------------------------------

    @property
    def generation(self) -> str | None:
        chosen = self.override or self.version
        return chosen.generation if chosen else None

    def source(self, key: str) -> str:
        """Where the answers about `key` come from: override, help, version or unknown."""
        if self.override is not None:
            return "override"
        if self.helps.get(key) is not None:
            return "help"
        return "version" if self.generation is not None else "unknown"

    def has(self, key: str, word: str) -> bool | None:
        """Whether command `key` takes flag `word` (`--pod-limit`, `-e`) or, for `pytorch`, has
        the verb `word`; None when nothing can tell (try it)."""
        found = None if self.override is not None else self.helps.get(key)
        if found is not None:
            return word in (found.commands if key in GROUPS else found.flags)
        generation = self.generation
        if generation is None:
            return None
        if key == "submit":
            return _submit_flag_by_generation(word, generation)
        return generation in _BY_GENERATION.get((key, word), V2)

    def paging(self) -> str:
        """How `training list` reaches every job: next-token, offset, limit or none."""
        if self.has("list", "--next-token"):
            return "next-token"
        if self.has("list", "--limit"):
            return "offset" if self.has("list", "--offset") else "limit"
        return "none"

    @property
    def label(self) -> str:
        """`runai 2.20.1` (the version as `runai version` said it) or what is known."""
        cli = self.version
        if cli is None or not cli.version or cli.version == "(no output)":
            return "the installed runai"
        return cli.name

    def why(self, key: str) -> str:
        """Why an answer about `key` is what it is, for messages."""
        source = self.source(key)
        words = " ".join(COMMANDS[key])
        if source == "override":
            assert self.override is not None
            return f"runai_cli from {self.override_source} says {self.override.label}"
        if source == "help":
            return f"`runai {words} --help` does not list it"
        if source == "version":
            assert self.version is not None
            return f"the help is unreadable and {self.version.label} does not have it"
        return "unknown"

    def report(self) -> list[dict[str, Any]]:
        """Each capability runai-tui uses, its answer and its source (for `runai-tui info`)."""
        rows: list[dict[str, Any]] = []
        for verb in VERBS:
            rows.append(self._row(f"verb {verb}", "pytorch", verb))
        for key, word in (
            ("describe", "--pod-limit"),
            ("describe", "--event-limit"),
            ("logs", "--previous"),
            ("logs", "--since"),
            ("list", "--next-token"),
            ("list", "--limit"),
            ("list", "--offset"),
        ):
            rows.append(self._row(f"{key} {word}", key, word))

        # off the first paint and the job list (docs/performance.md)
        from runai_tui.profiles import FIELDS

        for row in FIELDS:
            for flag in row.flags:
                if flag.startswith("-"):
                    rows.append(self._row(f"submit {flag} ({row.name})", "submit", flag))
        return rows

    def _row(self, name: str, key: str, word: str) -> dict[str, Any]:
        return {"capability": name, "available": self.has(key, word), "source": self.source(key)}


def _submit_flag_by_generation(flag: str, generation: str) -> bool:
    # off the first paint and the job list (docs/performance.md)
    from runai_tui.profiles import FIELDS

    for row in FIELDS:
        if flag in row.flags:
            return generation in row.cli
    return generation in V2


# --- the cache, one entry per executable ----------------------------------------------------

CACHE_NAME = "cli-version.json"


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
    return first_meaningful_line(strip_notices(text) or text)


# --- the checks ---------------------------------------------------------------------------------


def check_logs_flags(flags: Iterable[str], caps: Capabilities) -> None:
    """Raise UsageError (exit 2) for the first of `flags` that `logs` lacks; unknown passes."""
    for flag in flags:
        if caps.has("logs", flag) is False:
            raise UsageError(
                f"logs {flag} is not in {caps.label}: {caps.why('logs')}",
                f"drop {flag}, or update the runai CLI",
            )


def check_verb(verb: str, caps: Capabilities) -> None:
    """Raise UsageError (exit 2) when `training pytorch VERB` is not in the installed CLI."""
    if caps.has("pytorch", verb) is False:
        raise UsageError(
            f"{verb}: `runai training pytorch {verb}` is not in {caps.label}: "
            f"{caps.why('pytorch').replace('does not list it', f'does not list {verb}')}",
            "update the runai CLI (suspend and resume came after 2.20)",
        )
