"""The headless dry-run path stays at its start-up floor (issue 12): a structural check of what
`runai-tui submit --dry-run` imports, not a timing (benchmarks/fig_cli.py measures the time).

Each module below costs milliseconds at every start and is not needed to print a command line;
import it lazily, where it is used, instead (see the comments next to those lazy imports)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Not on the dry-run path: the process machinery, the client and backend, formats and helpers
# needed only for --json, --debug, writes or unknown keys, and of course the TUI and torch.
HEAVY = [
    "asyncio",
    "subprocess",
    "json",
    "dataclasses",
    "inspect",
    "tempfile",
    "traceback",
    "difflib",
    "shutil",
    "typing",  # annotations only: `TYPE_CHECKING = False` guards, namedtuples for records
    "runai_tui.runai.client",
    "runai_tui.runai.backend",
    "runai_tui.models",
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
