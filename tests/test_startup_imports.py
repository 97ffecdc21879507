"""The headless dry run loads only what printing a command line needs: a structural check of what
`runai-tui submit --dry-run` imports, not a timing (benchmarks/fig_cli.py measures the time).

The modules below are the lazy imports that matter (tens of milliseconds, or a whole UI or
framework): the process machinery, the client, the TUI and torch. Plain Python (typing,
dataclasses) is welcome on this path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Not on the dry-run path: the process machinery, the client and backend, the TUI and torch.
HEAVY = [
    "asyncio",
    "subprocess",
    "runai_tui.runai.client",
    "runai_tui.runai.backend",
    "runai_tui.runai.parse",
    "textual",
    "rich",
    "torch",
]


def test_dry_run_imports_none_of_the_heavy_modules() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from runai_tui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['submit', '--profile', 'retinanet-tcp', '--dry-run']) == 0\n"
        f"heavy = {HEAVY!r}\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
