"""Helpers every screen uses: typed access to the app (TuiHost), and the header."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from textual.screen import Screen
from textual.worker import Worker

from runai_tui.tui.widgets.header import StatusHeader

if TYPE_CHECKING:
    from concurrent.futures import Future

    from runai_tui.profiles import ProfileStore
    from runai_tui.runai.client import RunaiClient
    from runai_tui.shapes.errors import Failure, RuntimeFailure
    from runai_tui.shapes.models import Job
    from runai_tui.tui.forwards import Forwards
    from runai_tui.tui.health_view import HealthCache
    from runai_tui.tui.terminal import InteractiveRunner


Result = TypeVar("Result")  # what the screen's dismiss() hands back


class TuiHost(Protocol):
    """What the screens use of the app (RunaiTuiApp is one). A protocol, so no screen imports
    the app module, which imports the screens."""

    client: RunaiClient
    readonly: bool
    refresh_interval: float
    save_dir: Path
    select_after_refresh: str | None
    suspended_refresh: bool
    project_explicit: bool
    first_list: Future[list[Job]] | None

    @property
    def store(self) -> ProfileStore: ...

    @property
    def runner(self) -> InteractiveRunner: ...

    @property
    def health(self) -> HealthCache: ...

    chain_records: object | None  # watcher.Records, made by the first describe

    @property
    def forwards(self) -> Forwards: ...

    def now(self) -> datetime: ...

    def apply_header(self, header: StatusHeader) -> None: ...

    def first_fetch_done(self) -> None: ...

    def backend_ok(self) -> None: ...

    def backend_failed(self, error: RuntimeFailure) -> None: ...

    def report_error(self, error: Failure) -> None: ...

    def announce_job_ends(self, jobs: list[Job]) -> None: ...

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None: ...

    def choose_project(self, on_switched: Callable[[], object] | None = None) -> None: ...

    def confirm_delete(self, job: Job, on_deleted: Callable[[], object] | None = None) -> None: ...

    def confirm_bulk(
        self, verb: str, names: list[str], on_done: Callable[[], object] | None = None
    ) -> None: ...

    def exec_into(
        self, job: str, pod: str | None, after: Callable[[], object] | None = None
    ) -> None: ...

    def show_submitted(self, name: str | None) -> None: ...


class AppScreen(Screen[Result]):
    """A screen with the shared StatusHeader."""

    HELP_TITLE = "screen"

    @property
    def tui(self) -> TuiHost:
        return cast("TuiHost", self.app)

    def on_screen_resume(self) -> None:
        for header in self.query(StatusHeader):
            self.tui.apply_header(header)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.tui.on_worker_state_changed(event)

    def make_header(self) -> StatusHeader:
        header = StatusHeader()
        self.tui.apply_header(header)
        return header
