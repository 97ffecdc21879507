"""The README's screenshots (docs/screenshots/*.svg) are what scripts/screenshots.py makes from the
app today: a change to a screen the README shows fails here until the pictures are made again."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tui.showcase import SHOTS

# The README's screenshots, each made by the app in a process of its own.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SHOTS_DIR = REPO / "docs" / "screenshots"


def test_the_committed_screenshots_are_what_the_script_makes(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "screenshots.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    made = sorted(path.name for path in tmp_path.glob("*.svg"))
    assert made == sorted(f"{shot.name}.svg" for shot in SHOTS)
    stale = [
        name
        for name in made
        if not (SHOTS_DIR / name).exists()
        or (SHOTS_DIR / name).read_text(encoding="utf-8") != (tmp_path / name).read_text("utf-8")
    ]
    assert stale == [], f"stale: {stale}: run .venv/bin/python scripts/screenshots.py"


def test_the_readme_shows_every_screenshot() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    shown = re.findall(r"!\[([^\]]*)\]\(docs/screenshots/([\w-]+)\.svg\)", readme)
    assert shown == [(shot.alt, shot.name) for shot in SHOTS]
    assert sorted(p.stem for p in SHOTS_DIR.glob("*.svg")) == sorted(s.name for s in SHOTS)
    # Near the top: before the Quick start.
    assert readme.index("docs/screenshots/") < readme.index("## Quick start")
