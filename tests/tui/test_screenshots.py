"""The README's screenshots (docs/screenshots/*.svg) are what scripts/screenshots.py makes from the
app today: a change to a screen the README shows fails here until the pictures are made again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.tui.showcase import SHOTS, Shot, screenshot

REPO = Path(__file__).resolve().parents[2]
SHOTS_DIR = REPO / "docs" / "screenshots"


@pytest.fixture(autouse=True)
def no_animations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")


@pytest.mark.parametrize("shot", SHOTS, ids=[shot.name for shot in SHOTS])
async def test_the_committed_screenshot_is_what_the_app_shows(shot: Shot) -> None:
    path = SHOTS_DIR / f"{shot.name}.svg"
    stale = f"{path.relative_to(REPO)} is stale: run .venv/bin/python scripts/screenshots.py"
    assert path.exists(), stale
    assert await screenshot(shot) == path.read_text(encoding="utf-8"), stale


def test_the_readme_shows_every_screenshot() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    shown = re.findall(r"!\[([^\]]*)\]\(docs/screenshots/([\w-]+)\.svg\)", readme)
    assert shown == [(shot.alt, shot.name) for shot in SHOTS]
    assert sorted(p.stem for p in SHOTS_DIR.glob("*.svg")) == sorted(s.name for s in SHOTS)
    # Near the top: before the Quick start.
    assert readme.index("docs/screenshots/") < readme.index("## Quick start")
