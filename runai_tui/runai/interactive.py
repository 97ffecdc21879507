"""The one place that hands the real terminal to a child (`runai … exec --tty`, `$EDITOR`).

The TUI wraps the call in `App.suspend()`; the headless CLI calls it directly. Tests can replace
`run_interactive` (monkeypatch) because both faces call it through this module.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
from collections.abc import Iterator, Sequence

from runai_tui.shapes.errors import ErrorKind, RunaiError


def _ignore(_signum: int, _frame: object) -> None:
    pass


@contextlib.contextmanager
def _sigint_to_child() -> Iterator[None]:
    """Ignore Ctrl-C in this process while the child owns the terminal (the child, in the same
    foreground process group, still gets it), as a shell does. A no-op handler, not SIG_IGN:
    an ignored signal would be inherited by the child across exec."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _ignore)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_interactive(argv: Sequence[str]) -> int:
    """Run `argv` on the real terminal (inherited stdin/stdout/stderr); return its exit code."""
    try:
        with _sigint_to_child():
            return subprocess.call(list(argv))
    except OSError as exc:
        raise RunaiError(
            ErrorKind.NOT_INSTALLED,
            f"{argv[0] if argv else '(empty command)'} could not be started: {exc.strerror or exc}",
            "check that the program is installed and on PATH",
            argv=list(argv),
        ) from None
