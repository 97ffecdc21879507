"""The trainer's record schema has one home, trainer/records.py: runai-tui reads that very file
(runai_tui/trainer_flags/records.py is a link to it, as fast_path.py is), it needs nothing but the
standard library, and what the trainer writes with it the readers parse back."""

from __future__ import annotations

import ast
import dataclasses
import sys
from pathlib import Path

from runai_tui.knowledge.records import progress
from runai_tui.trainer_flags import records as ours
from runai_tui.workflows import job_records
from trainer import records

REPO = Path(__file__).resolve().parents[2]


def test_runai_tui_reads_the_trainers_own_schema_file() -> None:
    link = REPO / "runai_tui" / "trainer_flags" / "records.py"
    assert link.is_symlink() and link.resolve() == Path(records.__file__).resolve()
    assert ours.RANK_FIGURES == records.RANK_FIGURES
    assert tuple(f"rank_{n}" for n in records.RANK_FIGURES) == job_records.RANK_COLUMNS
    # Every figure the trainer lists is a field of what the readers make of a rank.
    assert set(records.RANK_FIGURES) <= {f.name for f in dataclasses.fields(progress.RankFigures)}


def test_the_schema_needs_only_the_standard_library() -> None:
    tree = ast.parse(Path(records.__file__).read_text())
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(str(node.module).split(".")[0])
    assert imported and imported <= set(sys.stdlib_module_names) | {"__future__"}


def test_a_record_the_trainer_writes_is_the_one_a_reader_parses() -> None:
    record = {records.KIND: records.COMM, "step": 0, "sizes": []}
    line = "[rank0]: " + records.record_line(record)
    assert records.kind_mark(records.COMM) in line
    assert progress.parse_metric_line(line) == record
    assert progress.parse_metric_line('{"step": 1}') is None  # no kind: not a record
    assert progress.parse_metric_line(records.record_line({records.KIND: 3})) is None
    assert set(records.FINISHED) < set(records.KINDS)
