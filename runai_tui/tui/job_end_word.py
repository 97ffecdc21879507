"""Word when a job ends: the jobs the list shows are watched; when one goes from Running to
Completed, Failed or Stopped the app raises a notification (on whatever screen is showing) and,
unless `notify = false`, rings the terminal: BEL plus a desktop notification as OSC 9 (iTerm2,
Windows Terminal, kitty, WezTerm...) and OSC 777 (foot, Konsole, VTE terminals).

The escape sequences go out through the terminal driver's public `write`/`flush`. Textual keeps
its driver to itself, so `driver_class_with_handle` subclasses the class the app would use and
hands each instance to the app when it is made (a headless test app has none: it only notifies).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from runai_tui.shapes.models import Job, Phase
from runai_tui.workflows.job_end import end_message, ended

if TYPE_CHECKING:
    from textual.driver import Driver

TITLE = "runai-tui"


class HasDriver(Protocol):
    terminal_driver: Driver | None


def driver_class_with_handle(base: type[Driver]) -> type[Driver]:
    """`base`, whose instances set `app.terminal_driver` to themselves."""

    class DriverWithHandle(base):  # type: ignore[valid-type,misc]
        def __init__(self, app: HasDriver, *args: object, **kwargs: object) -> None:
            super().__init__(app, *args, **kwargs)
            app.terminal_driver = self

    return DriverWithHandle


def _plain(text: str) -> str:
    """Printable characters only, and no `;` (the OSC field separator): a job name cannot end
    the sequence early or slip an escape of its own into the terminal."""
    return "".join(c for c in text if c.isprintable() and c != ";")


def ring_sequence(title: str, body: str) -> str:
    """BEL, then the same notification as OSC 9 and as OSC 777 (each ended by BEL)."""
    title, body = _plain(title), _plain(body)
    return f"\a\x1b]9;{title}: {body}\a\x1b]777;notify;{title};{body}\a"


class EndWatcher:
    """The phase each listed job had last time; `ends(jobs)` gives the ones that just ended."""

    def __init__(self) -> None:
        self.phases: dict[str, Phase] = {}

    def ends(self, jobs: list[Job]) -> list[Job]:
        found = [j for j in jobs if ended(self.phases.get(j.name), j.phase)]
        self.phases = {j.name: j.phase for j in jobs}
        return found


def announce(app: Any, job: Job, ring: bool) -> None:
    """A Textual notification on the current screen, and the terminal's ring when `ring`."""
    message = end_message(job.name, job.phase)
    severity = "information" if job.phase is Phase.COMPLETED else "warning"
    app.notify(message, title="job ended", severity=severity, timeout=10, markup=False)
    driver = getattr(app, "terminal_driver", None)
    if ring and driver is not None:
        driver.write(ring_sequence(TITLE, message))
        driver.flush()
