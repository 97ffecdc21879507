"""Every path of this repository that pyproject.toml and the READMEs (README.md,
trainer/README.md, runai_tui/*/README.md, docs/*.md) name exists: a module that moved or became a
package (knowledge/diagnose.py -> knowledge/diagnose/) fails here instead of misleading a reader.

A path counts when it starts at a top-level folder of the repository (`runai_tui/...`,
`tests/...`); a glob (`tests/trainer/test_*.py`) must match something. In a package's README a
bare module name in backticks (`jobspec.py`) must be a file of that package. Paths that name
something else on purpose are listed in ELSEWHERE, with where they are."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOP = ("runai_tui", "runai_local", "trainer", "tests", "docs", "scripts", "benchmarks", "profiles")
# Not preceded by what makes it part of a longer path, a URL, a variable or a placeholder.
PATH = re.compile(r"(?<![\w./~$<>{}@:-])((?:" + "|".join(TOP) + r")/[\w.*/-]*[\w*/])")
MODULE = re.compile(r"`([\w-]+\.py)`")
ELSEWHERE = {
    # Paths in the repositories docs/runai-cli.md cites as its sources.
    ("docs/runai-cli.md", "docs/run-ai/reference/cli/runai/*.md"),
    ("docs/runai-cli.md", "docs/Researcher/cli-reference/new-cli/*.md"),
    ("docs/runai-cli.md", "docs/Researcher/cli-reference/runai-submit.md"),
    ("docs/runai-cli.md", "docs/multinode.md"),
    # Paths inside the local cluster's seeded claim (project-001), not in this checkout.
    ("runai_local/README.md", "scripts/vision/shell/"),
    ("runai_local/README.md", "scripts/vision/train/trainer"),
}


def documents() -> list[Path]:
    return [
        REPO / "pyproject.toml",
        REPO / "README.md",
        REPO / "trainer" / "README.md",
        *sorted(REPO.glob("runai_tui/*/README.md")),
        *sorted(REPO.glob("docs/*.md")),
    ]


def named_paths(text: str) -> list[str]:
    return [match.rstrip(".") for match in PATH.findall(text)]


def exists(path: str) -> bool:
    return any(REPO.glob(path)) if "*" in path else (REPO / path).exists()


def test_every_repository_path_named_exists() -> None:
    missing = []
    for doc in documents():
        where = str(doc.relative_to(REPO))
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for path in named_paths(line):
                if (where, path) not in ELSEWHERE and not exists(path):
                    missing.append(f"{where}:{number}: {path}")
    assert missing == []


def test_every_module_a_package_readme_names_is_in_the_package() -> None:
    missing = []
    for readme in sorted(REPO.glob("runai_tui/*/README.md")):
        package = readme.parent
        for number, line in enumerate(readme.read_text(encoding="utf-8").splitlines(), 1):
            for name in MODULE.findall(line):
                if not any(package.rglob(name)):
                    missing.append(f"{readme.relative_to(REPO)}:{number}: {name}")
    assert missing == []


def test_the_reader_finds_paths_and_leaves_other_things_alone() -> None:
    line = (
        "see `runai_tui/knowledge/diagnose.py`, tests/trainer/test_*.py and runai_tui/tui/. "
        "Not /data/scripts/x.sh, https://x.org/docs/a.md, $HOME/trainer/x or <dir>/tests/y."
    )
    assert named_paths(line) == [
        "runai_tui/knowledge/diagnose.py",
        "tests/trainer/test_*.py",
        "runai_tui/tui/",
    ]
    assert not exists("runai_tui/knowledge/diagnose.py") and exists("tests/trainer/test_*.py")


# A markdown link or image to a file of this repository, not a URL: [text](target#anchor).
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*```")


def prose(text: str) -> list[tuple[int, str]]:
    """The numbered lines of a markdown text outside its code fences."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line))
    return lines


def anchors(text: str) -> set[str]:
    """The anchors GitHub makes of a markdown text's headings: lower case, punctuation other than
    `-` and `_` dropped, each space a `-`; a repeated heading gets `-1`, `-2`..."""
    seen: dict[str, int] = {}
    for _, line in prose(text):
        heading = re.match(r"#{1,6} (.*)", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            if count:
                seen[f"{slug}-{count}"] = 1
    return set(seen)


def markdown_documents() -> list[Path]:
    return [doc for doc in documents() if doc.suffix == ".md"]


def test_every_link_between_the_docs_leads_somewhere() -> None:
    broken = []
    for doc in markdown_documents():
        text = doc.read_text(encoding="utf-8")
        for number, line in prose(text):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue  # a URL
                path, _, anchor = target.partition("#")
                file = (doc.parent / path).resolve() if path else doc
                where = f"{doc.relative_to(REPO)}:{number}: {target}"
                if not file.exists():
                    broken.append(f"{where} (no such file)")
                elif anchor and anchor not in anchors(file.read_text(encoding="utf-8")):
                    broken.append(f"{where} (no such heading)")
    assert broken == []


def test_the_anchor_reader_follows_github() -> None:
    text = "# A\n## Settings: `config.toml`\n```\n# not a heading\n```\n## Shards (`--x y`)\n## A\n"
    assert anchors(text) == {"a", "settings-configtoml", "shards---x-y", "a-1"}


def test_no_two_test_modules_share_a_basename() -> None:
    """pytest imports a module of a folder that is not a package by its basename: a second
    `test_wire.py` in another such folder stops the collection of the whole suite ("import file
    mismatch"). A package's modules (tests/tui) are imported by their dotted name."""
    seen: dict[str, list[str]] = {}
    for module in sorted(REPO.glob("tests/**/test_*.py")):
        if (module.parent / "__init__.py").exists():
            continue
        seen.setdefault(module.name, []).append(str(module.relative_to(REPO)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
