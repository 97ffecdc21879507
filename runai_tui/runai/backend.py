"""Which runai-compatible executable the client runs: the real `runai` or the local cluster.

`auto` (the default) picks `runai` when it is found and the embedded local cluster otherwise.
Nothing here runs a subprocess; the client does, always the argv of `Backend.argv`, which is also
what every preview of a command shows (the dry run, its --json, the TUI's preview and copy): the
executable named as it is run, so a preview is the command that runs, word for word. Selecting a
backend needs only the environment, PATH and the config, so the dry run can afford it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runai_tui.shapes.cli_generations import runai_name
from runai_tui.shapes.config import BACKEND_CHOICES, ENV_BACKEND
from runai_tui.shapes.errors import ErrorKind, RunaiError, UsageError

ENV_RUNAI = "RUNAI_TUI_RUNAI"

HINT_INSTALL_RUNAI = (
    f"install the Run:ai CLI or set {ENV_RUNAI} to its path, or use --backend local"
)


@dataclass(frozen=True)
class Backend:
    kind: str  # "runai" | "local"
    executable: list[str]  # argv prefix, e.g. ["/usr/bin/runai"] or [python, "-m", "…"]
    version: str = ""  # filled in by callers that asked `version` (dataclasses.replace)

    @property
    def is_local(self) -> bool:
        return self.kind == "local"

    @property
    def label(self) -> str:
        if self.is_local:
            return "LOCAL"
        return runai_name(self.version)

    @property
    def display_name(self) -> str:
        """Short program name for messages: `runai` or `runai-local`."""
        return "runai-local" if self.is_local else "runai"

    def argv(self, args: Sequence[str]) -> list[str]:
        """The argv this backend executes for runai's words `args` (`training pytorch submit …`):
        its executable, as found, first. The client runs exactly this and the previews show it."""
        return [*self.executable, *args]


def find_runai() -> str | None:
    """The runai executable: `$RUNAI_TUI_RUNAI` (a path or a name on PATH) else `runai` on PATH."""
    wanted = os.environ.get(ENV_RUNAI, "").strip()
    if not wanted:
        return shutil.which("runai")
    if os.sep in wanted or (os.altsep and os.altsep in wanted):
        path = Path(wanted).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return str(path.absolute())
        return None
    return shutil.which(wanted)


def local_available() -> bool:
    """True when the embedded local cluster is part of this installation."""
    try:
        return importlib.util.find_spec("runai_local.cli") is not None
    except (ImportError, ValueError):
        return False


def find_local() -> list[str]:
    """argv prefix for `runai-local`: the venv's script, else PATH, else `python -m`."""
    beside = Path(sys.executable).parent / "runai-local"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    on_path = shutil.which("runai-local")
    if on_path:
        return [on_path]
    return [sys.executable, "-m", "runai_local.cli"]


def _runai_missing_error() -> RunaiError:
    wanted = os.environ.get(ENV_RUNAI, "").strip()
    if wanted:
        return RunaiError(
            ErrorKind.NOT_INSTALLED,
            f"runai is not installed: {ENV_RUNAI}={wanted} is not an executable file",
            f"fix {ENV_RUNAI} or unset it, or use --backend local",
        )
    return RunaiError(
        ErrorKind.NOT_INSTALLED, "runai is not installed or not on PATH", HINT_INSTALL_RUNAI
    )


def _local_backend() -> Backend:
    if not local_available():
        raise RunaiError(
            ErrorKind.NOT_INSTALLED,
            "the embedded local cluster is not available in this installation",
            HINT_INSTALL_RUNAI.replace(", or use --backend local", ""),
        )
    return Backend("local", find_local())


def select_backend(choice: str | None = None) -> Backend:
    """The backend for `--backend CHOICE` (None → `$RUNAI_TUI_BACKEND` or "auto")."""
    source = "--backend"
    if choice is None:
        choice = os.environ.get(ENV_BACKEND) or "auto"
        source = ENV_BACKEND if os.environ.get(ENV_BACKEND) else "--backend"
    normalized = choice.strip().lower()
    if normalized not in BACKEND_CHOICES:
        raise UsageError(
            f"invalid backend {choice!r} in {source}",
            f"use one of: {', '.join(BACKEND_CHOICES)}",
        )
    if normalized == "local":
        return _local_backend()
    runai = find_runai()
    if runai:
        return Backend("runai", [runai])
    if normalized == "runai":
        raise _runai_missing_error()
    if local_available():
        return Backend("local", find_local())
    raise RunaiError(
        ErrorKind.NOT_INSTALLED,
        "runai is not installed or not on PATH, and the local cluster is not available",
        HINT_INSTALL_RUNAI.replace(", or use --backend local", ""),
    )
