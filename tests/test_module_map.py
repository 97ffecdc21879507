"""The module map (docs/contracts.md, "Layout and layers") names every module under runai_tui/,
runai_local/ and trainer/, and no module that is gone. The modules are read from the tree, so a module moved into
a package fails here with the lines the map needs."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO

MAP = REPO / "docs" / "contracts.md"
PACKAGES = ("runai_tui", "runai_local", "trainer")
# A module's name where it stands alone: `trainer/config.py` in a description is a path, not a
# module of the folder being described.
NAME = re.compile(r"(?<![\w/.])([A-Za-z0-9_]+\.py)\b")


def map_block(text: str) -> list[str]:
    """The lines of the first code block after the "Layout and layers" heading."""
    section = text.split("## Layout and layers", 1)[1]
    return section.split("```", 2)[1].splitlines()[1:]


def modules_in_map(lines: list[str]) -> set[str]:
    """Every `folder/module.py` the map names: a folder line starts at the left margin with a
    path ending in `/`; the `.py` names after it, up to the next folder line, are its modules."""
    named: set[str] = set()
    folder = ""
    for line in lines:
        if line[:1].strip():
            folder = line.split()[0]
            line = line[len(folder) :]
        named.update(folder + name for name in NAME.findall(line))
    return {path for path in named if path.startswith(tuple(p + "/" for p in PACKAGES))}


def modules_in_tree(root: Path = REPO) -> set[str]:
    return {
        path.relative_to(root).as_posix()
        for package in PACKAGES
        for path in (root / package).rglob("*.py")
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    }


def test_the_map_parser_reads_folders_and_names_and_skips_paths() -> None:
    lines = [
        "runai_tui/x/      what it is, see trainer/config.py and (scripts/y.py)",
        "  a.py b.py,",
        "  c.py",
        "trainer/     d.py",
        "scripts/     e.py",
    ]
    assert modules_in_map(lines) == {
        "runai_tui/x/a.py",
        "runai_tui/x/b.py",
        "runai_tui/x/c.py",
        "trainer/d.py",
    }


def test_the_map_names_every_module_and_none_that_is_gone() -> None:
    named = modules_in_map(map_block(MAP.read_text(encoding="utf-8")))
    tree = modules_in_tree()
    missing = sorted(tree - named)
    gone = sorted(named - tree)
    assert not missing and not gone, (
        f"docs/contracts.md's module map: add {missing or 'nothing'} (under its folder's line), "
        f"drop {gone or 'nothing'}"
    )


def test_the_readme_is_for_users_and_short() -> None:
    # The README is for using the project (what it is, the two commands, a tour, links): at most
    # 400 lines, and no dated notes of runs outside the table `make bench` generates.
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 400
    outside = re.sub(r"<!-- bench-summary:begin.*?<!-- bench-summary:end -->", "", text, flags=re.S)
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", outside)
