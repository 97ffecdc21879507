"""Make the README's screenshots, docs/screenshots/*.svg, from the real app on the fixed fixture of
tests/tui/showcase.py (the one the snapshot tests use): the same pictures on every machine.

    .venv/bin/python scripts/screenshots.py [--out DIR]

--out DIR writes them to DIR instead (tests/tui/test_screenshots.py does, and fails while a
committed picture differs from what this makes).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The fixture lives with the tests (tests/tui/showcase.py), which are not installed.
sys.path.insert(0, str(REPO))

from runai_tui.util.atomic import atomic_write  # noqa: E402
from tests.tui.showcase import SHOTS, screenshot  # noqa: E402

OUT = REPO / "docs" / "screenshots"


async def make_all(out: Path) -> list[str]:
    written = []
    for shot in SHOTS:
        svg = await screenshot(shot)
        path = out / f"{shot.name}.svg"
        if not path.exists() or path.read_text(encoding="utf-8") != svg:
            atomic_write(path, svg)
            written.append(str(path))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Make the README's screenshots.")
    parser.add_argument("--out", type=Path, default=OUT, help="where (default: docs/screenshots)")
    out: Path = parser.parse_args(argv).out
    # As in the tests: no animation, and none of this machine's settings or state.
    os.environ["TEXTUAL_ANIMATIONS"] = "none"
    with tempfile.TemporaryDirectory() as home:
        for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
            os.environ[var] = str(Path(home) / var.lower())
        for var in ("RUNAI_TUI_BACKEND", "RUNAI_TUI_RUNAI", "RUNAI_LOCAL_GPUS"):
            os.environ.pop(var, None)
        out.mkdir(parents=True, exist_ok=True)
        written = asyncio.run(make_all(out))
    print("updated " + ", ".join(written) if written else "the screenshots are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
