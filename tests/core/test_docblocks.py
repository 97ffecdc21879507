"""The generators of the docs' blocks, run as the Development table says: each rewrites the blocks
that the files it is given hold, and refuses a file that holds none of them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from runai_tui.knowledge.docs import DIAGNOSE_CODES, LINT_RULES
from runai_tui.profiles.docs import FIELD_TABLE

REPO = Path(__file__).resolve().parents[2]


def generate(module: str, *files: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *files], cwd=cwd, capture_output=True, text=True
    )


def test_stale_blocks_in_both_files_are_rewritten(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    for block in (LINT_RULES, DIAGNOSE_CODES):
        good = (REPO / block.doc).read_text(encoding="utf-8")
        stale = block.replace(good, "| stale |")
        assert stale != good
        (tmp_path / block.doc).write_text(stale, encoding="utf-8")
    run = generate("runai_tui.knowledge.docs", LINT_RULES.doc, DIAGNOSE_CODES.doc, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "updated lint-rules, lint-examples in docs/profiles.md",
        "updated diagnose-codes, xid-codes in docs/health.md",
    ]
    for block in (LINT_RULES, DIAGNOSE_CODES):
        assert (tmp_path / block.doc).read_text(encoding="utf-8") == (REPO / block.doc).read_text(
            encoding="utf-8"
        )
    again = generate("runai_tui.knowledge.docs", LINT_RULES.doc, DIAGNOSE_CODES.doc, cwd=tmp_path)
    assert again.returncode == 0 and again.stdout == ""  # nothing to change: nothing written


def test_a_file_without_the_blocks_is_refused(tmp_path: Path) -> None:
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    run = generate("runai_tui.profiles.docs", "README.md", cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        "error: README.md holds none of runai_tui.profiles.docs's blocks (field-table)",
        f"hint: they are in {FIELD_TABLE.doc}",
    ]
    assert (tmp_path / "README.md").read_bytes() == (REPO / "README.md").read_bytes()


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    run = generate("runai_tui.profiles.docs", "docs/nothing.md", cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        "error: docs/nothing.md: No such file or directory",
        "hint: runai_tui.profiles.docs's blocks are in docs/profiles.md",
    ]


def test_no_file_is_a_usage_error(tmp_path: Path) -> None:
    run = generate("runai_tui.knowledge.docs", cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.strip() == (
        "usage: python -m runai_tui.knowledge.docs FILE... "
        "(its blocks are in docs/health.md, docs/profiles.md)"
    )
