"""The suite's hand-out order (tests/conftest.py LONGEST_FIRST) names each module once, and only
modules that exist: a name twice, or one renamed away, silently orders nothing. The quick loop
(`make check`) leaves out, unimported, exactly the modules marked slow as a whole."""

from __future__ import annotations

import ast

from tests.conftest import LONGEST_FIRST, REPO, WHOLE_MODULE_SLOW


def test_the_longest_modules_are_named_once_each_and_exist() -> None:
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST), LONGEST_FIRST
    assert [name for name in LONGEST_FIRST if not (REPO / name).is_file()] == []


def module_marks(tree: ast.Module) -> list[ast.Assign]:
    """The module-level assignments to `pytestmark`."""
    return [
        node
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
    ]


def test_the_quick_loop_skips_exactly_the_modules_marked_slow_as_a_whole() -> None:
    """`make check` leaves a module unimported when its text has WHOLE_MODULE_SLOW
    (pytest_ignore_collect): so that line must be the module's only `pytestmark`, and a module
    marked slow another way (a list, a second assignment) must be written that way instead, or
    the quick loop would import it for nothing or skip a test it should run."""
    misread = []
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        marks = module_marks(ast.parse(text))
        slow = [m for m in marks if "pytest.mark.slow" in ast.unparse(m.value)]
        as_a_whole = [m for m in marks if ast.unparse(m.value) == "pytest.mark.slow"]
        skipped = bool(WHOLE_MODULE_SLOW.search(text))
        if skipped != (len(marks) == len(as_a_whole) == 1) or (slow and not as_a_whole):
            misread.append(path.relative_to(REPO).as_posix())
    assert misread == []
