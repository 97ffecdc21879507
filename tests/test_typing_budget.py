"""`Any` stays rare: documents, records and untrusted input have typed shapes (TypedDicts, the JSON
aliases in runai_tui/shapes/json_types.py and trainer/metrics.py, `object` narrowed with isinstance), so
the word `Any` outside import statements is counted per package and held under a ceiling."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CEILINGS = {"runai_tui": 110, "runai_local": 15, "trainer": 50}
ANY = re.compile(r"\bAny\b")


def any_words(path: Path) -> int:
    """How often the word `Any` appears in `path` outside its import statements (comments and
    strings count: a shape described as Any in words is still untyped)."""
    text = path.read_text(encoding="utf-8")
    import_lines: set[int] = set()
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import | ast.ImportFrom):
            import_lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return sum(
        len(ANY.findall(line))
        for number, line in enumerate(text.splitlines(), 1)
        if number not in import_lines
    )


def test_any_stays_under_each_packages_ceiling() -> None:
    over = []
    for package, ceiling in CEILINGS.items():
        counts = {
            str(p.relative_to(REPO)): any_words(p)
            for p in sorted((REPO / package).rglob("*.py"))
            if "__snapshots__" not in p.parts
        }
        total = sum(counts.values())
        if total > ceiling:
            top = sorted(counts.items(), key=lambda item: -item[1])[:5]
            over.append(f"{package}: {total} > {ceiling} (most in {top})")
    assert over == [], "give the new shapes a type instead of Any: " + "; ".join(over)


def test_the_count_skips_import_statements_only(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import (\n    Any,\n    cast,\n)\nimport typing as Any_\n\n"
        "def f(x: Any) -> dict[str, Any]:  # Any here counts, AnyStr does not\n"
        "    return {}\n"
    )
    assert any_words(sample) == 3
