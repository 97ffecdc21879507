"""Every function in runai_tui and trainer reads in about a screen: at most CEILING lines from
`def` to its last line, as the AST counts them (nested functions and methods included).

The ceiling sits just above the longest function once those that did two things were split
(the trainer's run, its data feeds, the plan, `info`, the local cluster's job spec): a new
function that outgrows it is split into steps rather than added to a list here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("runai_tui", "runai_local", "trainer")
CEILING = 70  # lines, at most

# "path:qualified name" -> why it may be longer than CEILING. Keep this short.
EXCEPTIONS: dict[str, str] = {}


def function_lengths(path: Path) -> Iterator[tuple[str, int]]:
    """(qualified name, length in lines) of every function and method of PATH, nested ones too."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                yield name, (child.end_lineno or child.lineno) - child.lineno + 1
                yield from walk(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")
            else:
                yield from walk(child, prefix)

    yield from walk(tree, "")


def all_lengths() -> dict[str, int]:
    return {
        f"{path.relative_to(ROOT)}:{name}": length
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for name, length in function_lengths(path)
    }


def test_every_function_is_at_most_the_ceiling() -> None:
    too_long = {
        where: length
        for where, length in all_lengths().items()
        if length > CEILING and where not in EXCEPTIONS
    }
    assert not too_long, (
        f"functions over {CEILING} lines: {too_long}; split each into steps that do one thing"
    )


def test_each_exception_is_still_needed() -> None:
    lengths = all_lengths()
    stale = [where for where in EXCEPTIONS if lengths.get(where, 0) <= CEILING]
    assert not stale, f"{stale}: gone or now within {CEILING} lines; drop it from EXCEPTIONS"


def test_length_counts_from_def_to_last_line_and_names_methods(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "def f():\n    x = 1\n\n    return x\n\n\n"
        "class C:\n    def g(self):\n        def h():\n            pass\n        return h\n"
    )
    assert dict(function_lengths(source)) == {"f": 4, "C.g": 4, "C.g.h": 2}
