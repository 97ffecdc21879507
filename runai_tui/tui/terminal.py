"""InteractiveRunner: the one way the TUI hands the real terminal to a child (exec, $EDITOR).

The app suspends itself around the child; tests replace the runner because a headless app
cannot suspend.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runai_tui.runai.interactive import run_interactive

if TYPE_CHECKING:
    from textual.app import App


def editor_command() -> list[str]:
    """The user's editor as an argv prefix: $VISUAL, then $EDITOR, then vi."""
    configured = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    return shlex.split(configured) or ["vi"]


class InteractiveRunner:
    """Runs interactive children on the real terminal while the app is suspended."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app

    def run(self, argv: list[str]) -> int:
        """Run `argv` on the terminal (the app is suspended meanwhile); return its exit code."""

        with self.app.suspend():
            return run_interactive(argv)

    def edit(self, path: Path) -> int:
        """Open `path` in the user's editor; return the editor's exit code."""
        return self.run([*editor_command(), str(path)])
