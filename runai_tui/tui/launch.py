"""Opening the TUI: the first job list is fetched while Textual loads.

Importing Textual and the app takes about 0.3 s, and the first `runai training list` about as
long again; one after the other they were most of the first paint. Here the list call starts
in a thread before the app is imported (this module imports no Textual), and the jobs screen's
first refresh takes its result (first paint measured by benchmarks/fig_tui_paint.py).
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from runai_tui.runai import runner
from runai_tui.runai.backend import select_backend
from runai_tui.runai.client import RunaiClient
from runai_tui.shapes.errors import UsageError

if TYPE_CHECKING:
    from runai_tui.runai.client import RunaiClient
    from runai_tui.shapes.models import Job


def start_first_list(client: RunaiClient) -> Future[list[Job]]:
    """The first `runai training list`, started now in a thread of its own (the core's sync
    bridge, runner.run_in_background); the jobs screen awaits the Future."""

    return runner.run_in_background(client.alist_jobs(), "first-job-list")


def run_tui(
    backend_choice: str | None,
    readonly: bool,
    refresh: float,
    project: str | None,
    timeout: float = 60.0,
    project_explicit: bool = False,
    notify: bool = True,
    runai_cli: dict[str, Any] | None = None,
) -> int:
    """Entry point for `runai-tui` with no subcommand: open the app; return the exit code.

    Bad choices raise before any screen is drawn; the CLI reports them like every other error."""

    if refresh < 0:
        raise UsageError(
            f"--refresh {refresh:g}: expected 0 (off) or a positive number of seconds",
            "e.g. runai-tui --refresh 5",
        )
    backend = select_backend(backend_choice)
    client = RunaiClient(backend, project=project, timeout=timeout, **(runai_cli or {}))
    first_list = start_first_list(client)
    from runai_tui.tui.app import RunaiTuiApp  # Textual is imported here, while the list runs

    app = RunaiTuiApp(
        client, readonly=readonly, refresh_interval=refresh, first_list=first_list, notify=notify
    )
    app.project_explicit = project_explicit
    result = app.run()
    return int(result or app.return_code or 0)
