"""Text about the fields, generated from the field table: the docs' table and `profiles fields`.

Regenerate the table in docs/profiles.md after editing fields.py:

    python -m runai_tui.profiles.docs docs/profiles.md

(tests/core/test_fields.py fails while docs/profiles.md and the table disagree).
"""

from __future__ import annotations

import re
import sys

from runai_tui.profiles.fields import FIELDS, Field
from runai_tui.profiles.schema import TRAINER_FIELD
from runai_tui.shapes.cli_generations import ALL, GENERATIONS, LABELS, V2, V2_LATE_ONLY
from runai_tui.util.docblocks import Block, rewrite, table

FIELD_TABLE = Block("field-table", "runai_tui.profiles.docs", "docs/profiles.md")


def _placeholder(item: str) -> str:
    return re.sub(r"\{(\w*)\}", lambda m: (m.group(1) or "value").upper(), item)


def flag_text(row: Field) -> str:
    """How the field appears on the command line, in words."""
    if row.emit == "positional":
        return "positional name"
    if row.emit == "group":
        return ", ".join(f"`{s.flag}`" for s in row.sub)
    if row.emit == "repeat":
        return f"`{row.flag} {_placeholder(row.item)}` each"
    if row.emit == "count":
        return f"`{row.flag}` (left out at 0)"
    if row.emit == "command":
        return f"`{row.flag} -- CMD…`"
    if row.emit == "args":
        return "after the command (or after a bare `--` without one)"
    if row.flag:
        return f"`{row.flag}`"
    return "— (inherit)" if row.name == "extends" else "—"


def cli_text(row: Field) -> str:
    """Which runai CLI generations know the field's flag (and, for a protection an older CLI
    goes without, that it degrades there: docs/profiles.md "Older CLIs")."""
    if row.degrades_on_older_cli:
        return f"{_generations(row)}; older: left out (shipped profiles)"
    return _generations(row)


def _generations(row: Field) -> str:
    if not row.flags and row.emit not in ("positional", "args"):
        return "—"
    if row.cli == ALL:
        return "all"
    if row.cli == V2:
        return "v2"
    if row.cli == V2_LATE_ONLY:
        return "v2 ≥ 2.21"
    return ", ".join(LABELS[g] for g in GENERATIONS if g in row.cli)


def markdown_table() -> str:
    return table(
        ["Field", "Example", "Flag", "CLI", "What"],
        ([f"`{r.name}`", f"`{r.example}`", flag_text(r), cli_text(r), r.help] for r in FIELDS),
    )


def field_rows() -> list[tuple[str, str, str, str]]:
    """(path for --set, flag, CLI generations, help) for every path `--set` accepts, sorted."""
    rows = []
    for row in FIELDS:
        cli = cli_text(row)
        if row.kind == "group":
            rows += [(f"{row.name}.{s.name}", s.flag, cli, s.help) for s in row.sub]
        elif row.kind == "mapping":
            flag = f"{row.flag} {_placeholder(row.item)}"
            rows.append((f"{row.name}.KEY", flag, cli, row.help))
        else:
            flag = row.flag or ("(job name)" if row.emit == "positional" else "-")
            flag = "-- ARGS" if row.emit == "args" else flag
            rows.append((row.name, flag, cli, row.help))
    rows.append(
        (
            f"{TRAINER_FIELD}.FLAG",
            "-- ARGS (--FLAG VALUE, once)",
            "all",
            "a flag of the trainer (`python -m trainer --help`), set in command or args",
        )
    )
    return sorted(rows)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    return rewrite("runai_tui.profiles.docs", [(FIELD_TABLE, markdown_table)], args)


if __name__ == "__main__":
    sys.exit(main())
