"""The trainer's command line as runai-tui reads and writes it, in one place:

- table.py      the trainer's flags (kind, choices) and `TrainerArgs` (every flag's default),
                GENERATED from trainer/config.py by scripts/trainer_flags.py: a flag added to the
                trainer reaches `--set trainer.NAME=VALUE`, lint, plan, compare and the sweeps
                with no edit here
- fast_path.py  trainer/fast_path.py itself (a link): --channels-last auto and --compile auto,
                decided by `plan` and the submit form with the trainer's own rule
- records.py    trainer/records.py itself (a link): the schema of what the trainer prints (record
                kinds, every rank's figures, the Flight Recorder's folder), read by every reader
- here          one reader of the words (`tokens`), behind reading them (`parse`), setting one
                flag (`set_flag`) and finding one value (`value_of`)

A leaf below profiles and knowledge: it imports nothing of runai_tui but its errors, so the
profiles' `--set trainer.NAME=VALUE` and the operator's knowledge read the same vocabulary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from runai_tui.shapes.errors import UsageError
from runai_tui.trainer_flags.table import FLAGS, Flag, TrainerArgs

__all__ = [
    "DEFAULT_OUTPUT_DIR",
    "ENTRY_SCRIPT",
    "FIELD",
    "FLAGS",
    "HOOK_EXPECTED",
    "HOOK_SPEC",
    "Flag",
    "Token",
    "TrainerArgs",
    "flag_name",
    "flag_words",
    "is_flag",
    "parse",
    "set_flag",
    "setting_key",
    "spelled",
    "tokens",
    "trainer_start",
    "value_of",
]

# The script a profile's command runs the trainer through (it passes its arguments on).
ENTRY_SCRIPT = "train-retinanet-ddp.sh"
# `--set trainer.NAME=VALUE`: the trainer's flags as one field of a profile.
FIELD = "trainer"
# Where the trainer writes when no --output-dir is given (a sweep gives each job its own).
DEFAULT_OUTPUT_DIR = TrainerArgs().output_dir
# --ddp-comm-hook: a hook name, PowerSGD with an optional rank (trainer/config.py HOOK_SPEC, which
# refuses any other spelling in its own check; tests/trainer/test_plan_tables.py compares).
HOOK_SPEC = re.compile(r"^(none|bf16|fp16|powersgd(:[1-9][0-9]*)?)$")
HOOK_EXPECTED = "expected none, bf16, fp16, powersgd or powersgd:RANK (e.g. powersgd:2)"
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def spelled(name: str) -> str:
    """A flag's name as the trainer spells it: `batch_size` and `--batch-size` are `batch-size`."""
    return name.strip().removeprefix("--").replace("_", "-")


def flag_name(name: str) -> str | None:
    """The trainer's flag of that name (`batch_size` -> `batch-size`), None when it has none."""
    found = spelled(name)
    return found if found in FLAGS else None


def setting_key(key: str) -> str:
    """An override's key, one spelling per field: `trainer.batch_size` is `trainer.batch-size`;
    other keys as given."""
    head, dot, rest = key.strip().partition(".")
    return f"{head}.{spelled(rest)}" if head == FIELD and dot else key.strip()


def is_flag(word: str) -> bool:
    """`--flag`, `-e`; not `-`, nor a negative number."""
    return word.startswith("-") and len(word) > 1 and not word[1:2].isdigit()


class Token(NamedTuple):
    """Words read as the trainer's argparse reads them: `at` the first word's index, `span` how
    many words; `flag` as written before any `=` ("" for a word that is no flag's value); `name`
    the trainer's flag it sets ("" for another program's flag, or none); `raw` the value as
    written (None for a flag alone); `inline` for the `--flag=value` spelling."""

    at: int
    span: int
    flag: str
    name: str
    raw: str | None
    inline: bool = False


def _takes_next(kind: str | None, following: str | None) -> bool:
    """Whether a flag written alone takes the next word as its value: a value flag always (as
    argparse), a switch (nargs="?") and another program's flag only a word that is no flag."""
    if following is None or kind == "bool":
        return False
    return kind in ("int", "float", "str") or not is_flag(following)


def _named(flag: str) -> str:
    """The trainer's flag `flag` sets: `--lr` lr, `--no-sync-bn` sync-bn; "" when none."""
    name = flag.removeprefix("--") if flag.startswith("--") else ""
    if name in FLAGS:
        return name
    negated = name.removeprefix("no-")
    if negated != name and FLAGS.get(negated, Flag("")).kind in ("bool", "switch"):
        return negated
    return ""


def tokens(words: Sequence[str], start: int = 0) -> list[Token]:
    """words[start:] read flag by flag (the one reader of a trainer's words)."""
    out: list[Token] = []
    i = start
    while i < len(words):
        word = words[i]
        if not is_flag(word):
            out.append(Token(i, 1, "", "", word))
            i += 1
            continue
        flag, eq, inline = word.partition("=")
        name = _named(flag)
        if eq:
            out.append(Token(i, 1, flag, name, inline, True))
            i += 1
            continue
        kind = FLAGS[name].kind if name and name == flag[2:] else None
        if kind is None and name:
            kind = "bool"  # `--no-NAME` takes no value
        following = words[i + 1] if i + 1 < len(words) else None
        span = 2 if _takes_next(kind, following) else 1
        out.append(Token(i, span, flag, name, following if span == 2 else None))
        i += span
    return out


def trainer_start(words: Sequence[str]) -> int | None:
    """The index of the first word the trainer parses, None when the words do not run it: after
    the entry script (`.../train-retinanet-ddp.sh ARGS` passes ARGS on) or `-m trainer`
    (python or torchrun)."""
    for i, word in enumerate(words):
        if word.rsplit("/", 1)[-1] == ENTRY_SCRIPT:
            return i + 1
        if word == "-m" and i + 1 < len(words) and words[i + 1] == "trainer":
            return i + 2
    return None


def parse(words: Sequence[str]) -> TrainerArgs:
    """The trainer's words (after trainer_start) as its argparse reads them, last one wins.

    Flags must be spelled in full (`--batch-size 4` or `--batch-size=4`); other programs' flags
    are skipped. Raises UsageError for a value the trainer would refuse as its type.
    """
    values: dict[str, Any] = {}  # by field name, each of its flag's type
    for token in tokens(words):
        if not token.name:
            continue
        flag, key = FLAGS[token.name], token.name.replace("-", "_")
        if flag.kind == "bool":
            if token.inline:
                continue
            values[key] = not token.flag.startswith("--no-")
        elif flag.kind == "switch" and token.raw is None:
            values[key] = "off" if token.flag.startswith("--no-") else "on"
        elif token.raw is None:
            default = getattr(TrainerArgs(), key)
            raise UsageError(
                f"args: --{token.name}: expected a value after it", f"e.g. --{token.name} {default}"
            )
        else:
            values[key] = _convert(token.name, token.raw, flag.kind)
    return TrainerArgs(**values, given=frozenset(values))


def _convert(name: str, raw: str, kind: str) -> int | float | str:
    try:
        return int(raw) if kind == "int" else float(raw) if kind == "float" else raw
    except ValueError:
        expected = "a whole number" if kind == "int" else "a number"
        raise UsageError(
            f"args: --{name} {raw!r}: expected {expected} (the trainer would refuse it)",
            f"fix the profile's args, or override it: --set {FIELD}.{name}=VALUE",
        ) from None


def value_of(words: Sequence[str], name: str) -> str | None:
    """The value the words give the trainer's `--name` (the last one, as argparse), or None."""
    found = [t.raw for t in tokens(words) if t.name == name and t.raw is not None]
    return found[-1] if found else None


def flag_words(name: str, raw: str) -> list[str]:
    """The words that pass `raw` to the trainer's `--name` (a name of FLAGS): `--lr 0.01`; for a
    bool `--flag` (true) or `--no-flag` (false); [] for an empty value (the trainer's default).
    Raises ValueError saying what the trainer accepts."""
    flag = FLAGS[name]
    value = raw.strip()
    if not value:
        return []
    if flag.kind == "bool":
        if value.lower() in _TRUE:
            return [f"--{name}"]
        if value.lower() in _FALSE:
            return [f"--no-{name}"]
        raise ValueError(f"{raw!r}: expected true or false (--{name} or --no-{name})")
    if flag.kind in ("int", "float"):
        try:
            {"int": int, "float": float}[flag.kind](value)
        except ValueError:
            expected = "a whole number" if flag.kind == "int" else "a number"
            raise ValueError(f"{raw!r}: expected {expected} (the trainer's --{name})") from None
    if flag.choices and value not in flag.choices:
        raise ValueError(f"{raw!r}: expected one of " + ", ".join(flag.choices))
    if name == "ddp-comm-hook" and not HOOK_SPEC.match(value):
        raise ValueError(f"{raw!r}: {HOOK_EXPECTED}")
    return [f"--{name}", value]


def set_flag(
    command: Sequence[str], args: Sequence[str], name: str, raw: str
) -> tuple[list[str], list[str]]:
    """(command, args) with the trainer's `--name` set to `raw`, passed exactly once: the first
    place that passes it now gets the new value (keeping a `--name=value` spelling), any other
    place loses it, and args gains `--name value` when nothing passed it. An empty `raw` removes
    the flag. Raises ValueError when the words do not run the trainer or the value is refused."""
    new = flag_words(name, raw)
    words = [*command, *args]
    start = trainer_start(words)
    if start is None:
        raise ValueError(
            f"the command does not run the trainer (.../{ENTRY_SCRIPT} or -m trainer); "
            "set args or command instead"
        )
    out: list[tuple[str, bool]] = [(w, i < len(command)) for i, w in enumerate(words[:start])]
    placed = False
    for token in tokens(words, start):
        in_command = token.at < len(command)
        if token.name != name:
            out += [(words[i], i < len(command)) for i in range(token.at, token.at + token.span)]
            continue
        if not placed:
            spelled_as = [f"{new[0]}={new[1]}"] if token.inline and len(new) == 2 else new
            out += [(w, in_command) for w in spelled_as]
            placed = True
    if not placed:
        out += [(w, False) for w in new]
    return [w for w, here in out if here], [w for w, here in out if not here]
