"""The field table is the one source: schema, Profile, builder, `profiles fields` and docs/profiles.md."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from runai_tui.profiles import FIELDS, SCHEMA, Profile, ProfileStore, field_paths
from runai_tui.profiles.docs import FIELD_TABLE, field_rows, markdown_table
from runai_tui.runai.command import build_submit_argv, field_argv

REPO = Path(__file__).resolve().parents[2]


def test_the_docs_field_table_is_generated_from_the_table() -> None:
    assert FIELD_TABLE.doc == "docs/profiles.md"
    doc = (REPO / FIELD_TABLE.doc).read_text(encoding="utf-8")
    assert FIELD_TABLE.current(doc) == markdown_table(), FIELD_TABLE.stale
    assert "run python -m runai_tui.profiles.docs docs/profiles.md" in FIELD_TABLE.stale
    for row in FIELDS:
        assert f"| `{row.name}` |" in doc


def test_schema_and_profile_follow_the_table() -> None:
    names = [row.name for row in FIELDS]
    assert list(SCHEMA) == names
    profile = Profile(name="p")
    assert list(vars(profile)) == ["name", "source", *names, "data", "origins"]
    assert all(getattr(profile, row.name) == row.empty for row in FIELDS)
    assert Profile(name="p") == profile != Profile(name="q")
    assert repr(profile).startswith("Profile(name='p', source=None, description=''")
    assert "data=" not in repr(profile) and "origins=" not in repr(profile)
    assert sorted(path for path, *_ in field_rows()) == field_paths()
    flags = [flag for row in FIELDS for flag in row.flags]
    assert len(flags) == len(set(flags)), "two fields spell the same flag"


def test_every_example_is_valid_and_every_field_reaches_its_flag(tmp_path: Path) -> None:
    """One profile made of every row's example: it validates, and each flag shows in argv."""
    text = "\n".join(f"{row.name}: {row.example}" for row in FIELDS if row.name not in ("extends",))
    store = ProfileStore([tmp_path])
    profile = store.validate_text("all", text)
    argv = build_submit_argv(profile)
    assert argv[4] == yaml.safe_load(text)["job_name"]
    for row in FIELDS:
        for flag in row.flags:
            assert flag in argv, (row.name, flag)
        value = getattr(profile, row.name)
        assert value != row.empty or row.name == "extends", row.name
        words = field_argv(row, value)
        assert words == [] or words[0] in row.flags, row.name
    assert argv[-2:] == ["--epochs", "12"]


def test_profiles_fields_prints_every_path_with_its_flag() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "runai_tui.cli", "profiles", "fields"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
        check=True,
    ).stdout
    lines = out.splitlines()
    assert lines[0].split() == ["FIELD", "FLAG", "CLI", "WHAT"]
    assert [line.split()[0] for line in lines[1:]] == field_paths()
    by_path = {line.split()[0]: line for line in lines[1:]}
    assert (
        "--preemptibility" in by_path["preemptibility"] and "v2 ≥ 2.21" in by_path["preemptibility"]
    )
    assert "-e KEY=VALUE" in by_path["env.KEY"] and " all " in by_path["env.KEY"]
