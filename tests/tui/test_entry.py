"""`runai-tui` with no subcommand: bad choices end with one line and the right exit code, before
any screen is drawn."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

RUNAI_TUI = Path(sys.executable).parent / "runai-tui"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    return subprocess.run(
        [str(RUNAI_TUI), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_missing_runai_is_one_line_exit_1() -> None:
    done = run("--backend", "runai")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: runai is not installed")
    assert lines[1].startswith("hint: ") and "--backend local" in lines[1]
    assert "Traceback" not in done.stderr


def test_negative_refresh_is_a_usage_error() -> None:
    done = run("--backend", "local", "--refresh", "-1")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: --refresh -1: expected 0 (off) or a positive number of seconds such as 2 or 2s "
        "(negative)",
        "hint: e.g. runai-tui --refresh 5",
    ]
