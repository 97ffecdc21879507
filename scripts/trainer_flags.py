"""Make runai_tui/trainer_flags/table.py, the trainer's flags as runai-tui reads them, from the
trainer's own configuration (trainer/config.py: TrainConfig, whose fields build_parser turns into
the trainer's argparse flags, one flag a field):

    .venv/bin/python scripts/trainer_flags.py           (also part of `make docs`)

runai_tui cannot import the trainer (it is not installed with runai-tui), so the table is
generated, as the docs' tables are; tests/core/test_trainer_flag_table.py fails while the file
and the trainer disagree, naming this command. A new flag in trainer/config.py needs nothing
else: the table, and with it `--set trainer.NAME=VALUE`, lint, plan, compare and the sweeps, pick
it up from here.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The trainer is not installed: it is read from this checkout.
sys.path.insert(0, str(REPO))

from runai_tui.util.atomic import atomic_write  # noqa: E402
from trainer.config import TrainConfig  # noqa: E402

TABLE = REPO / "runai_tui" / "trainer_flags" / "table.py"
COMMAND = "python scripts/trainer_flags.py"

HEADER = f'''"""The trainer's flags: GENERATED from trainer/config.py (TrainConfig, whose
fields build_parser turns into the trainer's argparse flags) by `{COMMAND}`.
Do not edit: tests/core/test_trainer_flag_table.py fails while this file and the trainer disagree.
"""

from __future__ import annotations

from typing import NamedTuple


class Flag(NamedTuple):
    """`kind`: int, float, str, bool (`--flag` / `--no-flag`) or switch (auto, on or off, and
    the boolean spellings: `--flag` alone is on, `--no-flag` off); `choices`: the values it
    accepts (empty: any)."""

    kind: str
    choices: tuple[str, ...] = ()

'''

VALUES = '''
    @property
    def values(self) -> dict[str, object]:
        """Every flag's value by field name (`batch_size`)."""
        return {name: value for name, value in self._asdict().items() if name != "given"}
'''


def _kind(field: dataclasses.Field[object]) -> tuple[str, str]:
    """(the flag's kind, its value's annotation) as build_parser reads the field."""
    annotation = field.type if isinstance(field.type, str) else field.type.__name__
    base = annotation.replace(" | None", "")
    if base not in ("int", "float", "str", "bool"):
        raise SystemExit(f"{field.name}: a {annotation} field is no flag kind this table knows")
    return ("switch" if field.metadata.get("switch") else base), annotation


def _literal(value: object) -> str:
    """value as Python source, strings in double quotes (the formatter's style)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        items = ", ".join(map(_literal, value))
        return f"({items},)" if len(value) == 1 else f"({items})"
    return repr(value)


def _flag_line(field: dataclasses.Field[object]) -> str:
    kind, _ = _kind(field)
    choices: Sequence[str] = tuple(field.metadata.get("choices") or ())
    name = field.name.replace("_", "-")
    if not choices:
        return f'    "{name}": Flag("{kind}"),'
    return f'    "{name}": Flag("{kind}", {_literal(tuple(choices))}),'


def render() -> str:
    """The text of table.py."""
    flags = dataclasses.fields(TrainConfig)
    lines = [HEADER.rstrip("\n"), "", "", "# fmt: off"]
    lines += ["# The trainer's flags by name, as it spells them on its command line."]
    lines += ["FLAGS: dict[str, Flag] = {", *map(_flag_line, flags), "}", "", ""]
    lines += [
        "class TrainerArgs(NamedTuple):",
        '    """Every flag\'s value as the trainer parses a command line, the trainer\'s default where',
        "    the line leaves it out; `given`: the flags (field names) the line passes. A NamedTuple:",
        "    every runai-tui command that lints a profile builds this class of a hundred fields, and",
        '    as a frozen dataclass it took a twentieth of `submit --dry-run`\'s start."""',
        "",
    ]
    lines += [f"    {f.name}: {_kind(f)[1]} = {_literal(f.default)}" for f in flags]
    lines += ["    given: frozenset[str] = frozenset()", VALUES.rstrip("\n")]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv:
        print(f"usage: {COMMAND} (writes {TABLE.relative_to(REPO)})", file=sys.stderr)
        return 2
    text = render()
    if not TABLE.exists() or TABLE.read_text(encoding="utf-8") != text:
        atomic_write(TABLE, text)
        print(f"updated {TABLE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
