"""The generations of the `runai` CLI and how a version names one: the names, what a
`runai version` line or a `runai_cli` setting says, and the `runai X` label for messages.

A leaf (it imports nothing from runai_tui) because the layers below the `runai` plumbing need it: the profile
field table (runai_tui/profiles/, whose `cli` column records which generations know each field's
flag) and the settings (runai_tui/shapes/config.py, which checks a `runai_cli` value when it reads it).
Asking the installed CLI itself (its help, its version, the cache) is runai_tui/runai/installed.py.

Flag names changed between generations: docs/runai-cli.md §1.4 and §7. What is certain and what
is a guess (docs/runai-cli.md §3.3, §3.5, §8):
- CLI v2's `version` format is UNCONFIRMED, so any `2.x` (or `3.x`) number in the first line is
  taken. `Version: 2.25.0` may be CLI v1 or v2: a version line never decides v1; the help does
  (v1 has no `runai training` command).
- The 2.20/2.2x boundary: 2.21 and later count as the new generation (2.23 is field-tested with
  `--restart-policy`, 2.25 and v3.0 are documented).
- The embedded local cluster (`runai-local X (embedded local cluster)`) implements the 2.25 flag
  table (runai_local/flags.py) and answers `--help` from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

V1 = "v1"
V2_EARLY = "v2-early"  # CLI v2 up to about 2.20 ([D20])
V2_LATE = "v2.2x"  # CLI v2 2.21 and later: 2.2x, 2.25, v3.0 ([D25], [D30], [ISAAC] 2.23)
GENERATIONS = (V1, V2_EARLY, V2_LATE)
LABELS = {V1: "CLI v1", V2_EARLY: "CLI v2 ≤ 2.20", V2_LATE: "CLI v2 ≥ 2.21"}
ALL = frozenset(GENERATIONS)
V2 = frozenset({V2_EARLY, V2_LATE})
V2_LATE_ONLY = frozenset({V2_LATE})

FIRST_LATE = (2, 21)
# The flag table runai-local parses is CLI v2.25's (runai_local/flags.py).
LOCAL_EMULATES = V2_LATE

_LOCAL = re.compile(r"^runai-local\s+(\S+).*\(embedded local cluster\)")
_NUMBER = re.compile(r"\bv?(\d+)\.(\d+)(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?")
_V1_NAME = re.compile(r"v?1(\.\d+)*|cli-?v1")
_VERSION_NAME = re.compile(r"v?\d+\.\d+(\.\d+)?")


def runai_name(version: str) -> str:
    """`runai 2.20.1` for a version `2.20.1`; a version that names itself (`runai-local 0.1.0`)
    as it is; `runai` when there is none."""
    return version if version.startswith("runai") else f"runai {version}".strip()


@dataclass(frozen=True)
class CliVersion:
    """What `runai version` (or the `runai_cli` setting) said: the `generation` (None when
    unknown), the `version` text ("2.20.1", "runai-local 0.1.0", or the line as printed when
    unreadable) and the first meaningful `line` of `runai version`."""

    generation: str | None
    version: str
    line: str = ""

    @property
    def name(self) -> str:
        """`runai 2.20.1` or `runai-local 0.1.0`."""
        return runai_name(self.version)

    @property
    def label(self) -> str:
        """`runai 2.20.1 (CLI v2 ≤ 2.20)` for messages."""
        return f"{self.name} ({LABELS.get(self.generation or '', 'unknown CLI generation')})"


def classify(line: str) -> CliVersion:
    """The generation the first line of `runai version` belongs to (None when unreadable)."""
    line = line.strip()
    local = _LOCAL.match(line)
    if local:
        return CliVersion(LOCAL_EMULATES, f"runai-local {local.group(1)}", line)
    number = _NUMBER.search(line)
    if not number:
        return CliVersion(None, line or "(no output)", line)
    version = number.group(0).removeprefix("v")
    major, minor = int(number.group(1)), int(number.group(2))
    if major < 2 or (major == 2 and minor < 18):
        return CliVersion(None, version, line)  # before CLI v2 existed: not a CLI v2 number
    late = (major, minor) >= FIRST_LATE
    return CliVersion(V2_LATE if late else V2_EARLY, version, line)


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


def parse_override(value: object) -> CliVersion:
    """The CliVersion a `runai_cli` setting names; ValueError (with what is expected) else."""
    text = str(value).strip().lower() if isinstance(value, (str, int, float)) else ""
    if text in _GENERATION_NAMES:
        return CliVersion(_GENERATION_NAMES[text], text, text)
    if _V1_NAME.fullmatch(text):
        raise ValueError("CLI v1 is not supported: runai-tui needs the runai CLI v2")
    if _VERSION_NAME.fullmatch(text):
        cli = classify(text)
        if cli.generation is not None:
            return cli
    raise ValueError(OVERRIDE_EXPECTED)
