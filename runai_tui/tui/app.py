"""RunaiTuiApp: the Textual face of runai-tui. All cluster work goes through RunaiClient."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App, SuspendNotSupported
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.worker import Worker, WorkerState

from runai_tui.runai.bulk import act
from runai_tui.shapes.errors import ErrorKind, Failure, RunaiError, RuntimeFailure
from runai_tui.tui.failure_notice import notify_failure
from runai_tui.tui.forwards import Forwards
from runai_tui.tui.health_view import HealthCache
from runai_tui.tui.job_end_word import EndWatcher, announce, driver_class_with_handle
from runai_tui.tui.screens.base import TuiHost
from runai_tui.tui.screens.jobs import JobsScreen
from runai_tui.tui.terminal import InteractiveRunner
from runai_tui.tui.widgets.header import HeaderState, StatusHeader
from runai_tui.util.text import literal

if TYPE_CHECKING:
    from concurrent.futures import Future

    from textual.driver import Driver

    from runai_tui.profiles import ProfileStore
    from runai_tui.runai.client import RunaiClient
    from runai_tui.shapes.models import Job


def not_logged_in(error: RunaiError) -> str:
    """The header's login state after `error`, with the core's fix (`run: runai login`)."""
    return f"not logged in ({error.hint})" if error.hint else "not logged in"


class ScreenActions(Provider):
    """Command palette entries for every action of the active screen (keys shown as help)."""

    def _commands(self) -> list[tuple[str, str, Callable[[], Any]]]:
        screen = self.screen
        commands: list[tuple[str, str, Callable[[], Any]]] = []
        for binding in getattr(screen, "BINDINGS", []):
            if not isinstance(binding, Binding) or not binding.description:
                continue
            state = screen.check_action(binding.action, ())
            if state is False:
                continue
            key = self.app.get_key_display(binding)
            note = "" if state else "  (not available now)"
            callback = partial(screen.run_action, binding.action)
            commands.append((binding.description, f"key {key}{note}", callback))
        return commands

    async def discover(self) -> Hits:
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)


class RunaiTuiApp(App[int]):
    """Jobs, describe, logs, submit and profiles over one RunaiClient."""

    CSS_PATH = "app.tcss"
    TITLE = "runai-tui"
    COMMANDS = App.COMMANDS | {ScreenActions}
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        client: RunaiClient,
        *,
        store: ProfileStore | None = None,
        readonly: bool = False,
        refresh_interval: float = 2.0,
        runner: InteractiveRunner | None = None,
        clock: Callable[[], datetime] | None = None,
        save_dir: Path | None = None,
        first_list: Future[list[Job]] | None = None,
        notify: bool = True,
    ) -> None:
        super().__init__()
        self.terminal_driver: Driver | None = None  # set by the driver (tui/job_end_word.py)
        # The first job list, already being fetched while the app loaded (tui/launch.py).
        self.first_list = first_list
        self.client = client
        self._store = store
        self.readonly = readonly
        # 0 turns periodic refresh off (snapshots); `r` still refreshes.
        self.refresh_interval = refresh_interval
        self.runner = runner or InteractiveRunner(self)
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.save_dir = save_dir or Path.cwd()
        self.select_after_refresh: str | None = None
        self.health = HealthCache()  # diagnoses made so far (describe, the jobs screen's pass)
        # The submission records describe read to find chains of attempts (watcher.Records):
        # each job's once per app, made on the first describe (off the first paint).
        self.chain_records: object | None = None
        self.header_state = HeaderState(
            backend=client.backend.label,
            project=getattr(client, "project", None) or "",
            readonly=readonly,
        )
        self._last_error = ""
        self._last_internal = ""
        self.ring_on_end = notify  # `notify = false` in config.toml: notifications only
        self.end_watcher = EndWatcher()
        self.forwards = Forwards(self)  # `F`: port forwards, ended with the app

    def get_driver_class(self) -> type[Driver]:
        return driver_class_with_handle(super().get_driver_class())

    def announce_job_ends(self, jobs: list[Job]) -> None:
        """The jobs screen's every list: word of each job that went from Running to an end."""
        for job in self.end_watcher.ends(jobs):
            announce(self, job, ring=self.ring_on_end)

    # -- state shared by the screens -----------------------------------------------------------

    @property
    def store(self) -> ProfileStore:
        if self._store is None:
            # off the first paint (docs/performance.md)
            from runai_tui.profiles import ProfileStore

            self._store = ProfileStore()
        return self._store

    def now(self) -> datetime:
        return self.clock()

    def on_mount(self) -> None:
        self.push_screen(JobsScreen())
        # The backend check (two runai calls: version, whoami) waits for the first job list,
        # which is what the user waits for: run alongside it, they share the CPU and delay the
        # first paint (benchmarks/fig_tui_paint.py). The timer covers a slow list.
        self._backend_checked = False
        self.set_timer(2.0, self.first_fetch_done)

    async def on_unmount(self) -> None:
        await self.forwards.stop_all()  # no port-forward outlives the app

    def first_fetch_done(self) -> None:
        """The first job list arrived (or failed, or is slow): check the backend once."""
        if not self._backend_checked:
            self._backend_checked = True
            self.check_backend()

    def set_header(self, state: HeaderState) -> None:
        """Make STATE the header state (`dataclasses.replace(self.header_state, field=...)`) and
        show it on every mounted StatusHeader."""
        self.header_state = state
        for screen in self.screen_stack:
            for header in screen.query(StatusHeader):
                self.apply_header(header)

    def apply_header(self, header: StatusHeader) -> None:
        header.show(self.header_state)

    # -- backend status ------------------------------------------------------------------------

    def check_backend(self) -> None:
        self.run_worker(self._check_backend(), group="backend-check", exit_on_error=False)

    async def _check_backend(self) -> None:
        backend = self.client.backend
        if not backend.is_local:
            try:
                cli = await self.client.acli_version()
            except RunaiError as error:
                self.report_error(error)
            else:
                label = dataclasses.replace(backend, version=cli.version).label
                self.set_header(dataclasses.replace(self.header_state, backend=label))
        try:
            user = await self.client.awhoami()
        except RunaiError as error:
            if error.kind is ErrorKind.NOT_LOGGED_IN:
                self.set_header(
                    dataclasses.replace(
                        self.header_state, login=not_logged_in(error), logged_in=False
                    )
                )
            else:
                self.set_header(
                    dataclasses.replace(self.header_state, login="login unknown", logged_in=None)
                )
                self.report_error(error)
        else:
            self.set_header(
                dataclasses.replace(
                    self.header_state, login=f"user {user.strip() or '?'}", logged_in=True
                )
            )

    def backend_ok(self) -> None:
        self._last_error = ""
        self._last_internal = ""
        self.set_header(
            dataclasses.replace(
                self.header_state, error="", refreshed=self.now().strftime("%H:%M:%S")
            )
        )
        if self.header_state.logged_in is False:  # logged in again: learn who
            self.check_backend()

    def backend_failed(self, error: RuntimeFailure) -> None:
        """A periodic call failed: keep a banner, notify only when the failure changes."""
        banner = describe_error(error)
        self.set_header(dataclasses.replace(self.header_state, error=banner))
        if isinstance(error, RunaiError) and error.kind is ErrorKind.NOT_LOGGED_IN:
            self.set_header(
                dataclasses.replace(self.header_state, login=not_logged_in(error), logged_in=False)
            )
        if banner != self._last_error:
            self._last_error = banner
            self.report_error(error)

    def report_error(self, error: Failure) -> None:
        """Show a failure with its fix; the app keeps running."""
        notify_failure(self, error)

    # -- global actions ------------------------------------------------------------------------

    def action_help(self) -> None:
        # off the first paint (docs/performance.md)
        from runai_tui.tui.screens.help import HelpScreen

        screen = self.screen
        title = getattr(screen, "HELP_TITLE", type(screen).__name__)
        self.push_screen(HelpScreen(screen, title))

    def run_interactive(self, argv: list[str]) -> int | None:
        """Hand the terminal to `argv` through the runner, pausing refreshes around it."""
        self.suspended_refresh = True
        try:
            return self.runner.run(argv)
        except RuntimeFailure as error:
            self.report_error(error)
            return None
        except SuspendNotSupported:
            self.notify(
                "This terminal cannot hand over to a shell (the app cannot suspend here).",
                severity="error",
                title="exec",
            )
            return None
        finally:
            self.suspended_refresh = False
            self.refresh(layout=True)

    suspended_refresh = False

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A bug in a worker must not take the app down: say what failed and carry on.
        (Screens forward their workers' events here: the message does not bubble.)"""
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            error = event.worker.error
            text = literal(f"{type(error).__name__}: {error}")
            if text == self._last_internal:  # a periodic task failing the same way: say it once
                return
            self._last_internal = text
            self.notify(
                text,
                title=f"internal error in {event.worker.name or 'a task'}",
                severity="error",
                timeout=10,
                markup=False,
            )

    def choose_project(self, on_switched: Callable[[], object] | None = None) -> None:
        """Pick the project from `runai project list`; every later call uses it (`-p`)."""
        # off the first paint (docs/performance.md)
        from runai_tui.tui.screens.projects import ProjectsDialog

        def answered(project: str | None) -> None:
            if project is not None:
                self.switch_project(project or None)
                if on_switched is not None:
                    on_switched()

        self.push_screen(
            ProjectsDialog(self.client, getattr(self.client, "project", None)), answered
        )

    # True once the user chose the project (-p, or P): it then beats a profile's own project.
    project_explicit = False

    def switch_project(self, project: str | None) -> None:
        """Use `project` (None: the CLI's default) for every call from now on."""
        self.client.project = project
        self.project_explicit = project is not None
        self.set_header(dataclasses.replace(self.header_state, project=project or "", error=""))
        self._last_error = ""
        self.notify(f"Project: {project or '(the CLI default)'}.", title="project", markup=False)

    def confirm_delete(self, job: Job, on_deleted: Callable[[], object] | None = None) -> None:
        """Ask (Cancel focused), then delete `job` and call `on_deleted`."""
        # off the first paint (docs/performance.md)
        from runai_tui.tui.screens.confirm import ConfirmDialog

        name = job.name

        async def delete() -> None:
            try:
                await self.client.adelete(name)
            except RuntimeFailure as error:
                self.report_error(error)
                return
            self.notify(f"Deleting {name}.", title="delete")
            if on_deleted is not None:
                on_deleted()

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(delete(), group="delete", exit_on_error=False)

        question = f"Delete job {name!r} (project {job.project or 'default'})?\nIts pods stop."
        self.push_screen(ConfirmDialog(question, "Delete", title="delete job"), answered)

    def confirm_bulk(
        self, verb: str, names: list[str], on_done: Callable[[], object] | None = None
    ) -> None:
        """Ask once, listing every job (Cancel focused); then run `verb` (delete, suspend,
        resume) on each, report each failure and what succeeded, and call `on_done`."""
        # off the first paint (docs/performance.md)
        from runai_tui.tui.screens.confirm import ConfirmDialog

        label = verb.capitalize()

        async def run() -> None:
            outcomes = await act(self.client, verb, names)
            done = [o.name for o in outcomes if o.ok]
            for outcome in outcomes:
                if not outcome.ok:
                    self.notify(
                        f"{outcome.name}: {outcome.message}",
                        title=f"{verb} failed",
                        severity="error",
                        markup=False,
                    )
            if done:
                past = {"delete": "Deleting", "suspend": "Suspending", "resume": "Resuming"}[verb]
                self.notify(f"{past} {', '.join(done)}.", title=verb, markup=False)
            if on_done is not None:
                on_done()

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(run(), group="bulk", exit_on_error=False)

        listed = "\n".join(f"  {name}" for name in names[:12])
        more = f"\n  … and {len(names) - 12} more" if len(names) > 12 else ""
        what = f"job {names[0]!r}" if len(names) == 1 else f"these {len(names)} jobs"
        question = f"{label} {what}?\n{listed}{more}"
        self.push_screen(ConfirmDialog(question, label, title=f"{verb} jobs"), answered)

    def exec_into(
        self, job: str, pod: str | None, after: Callable[[], object] | None = None
    ) -> None:
        """Open a shell in `pod` of `job` (the master when None) on the real terminal."""
        try:
            argv = self.client.exec_argv(job, pod=pod, tty=True)
        except RuntimeFailure as error:
            self.report_error(error)
            return
        code = self.run_interactive(argv)
        if code is not None:
            where = f"{job}/{pod}" if pod else job
            self.notify(f"Shell in {where} exited with code {code}.", title="exec")
        if after is not None:
            after()

    def show_submitted(self, name: str | None) -> None:
        """After a submit form (new, from a profile, or a resubmit from any screen): back on the
        jobs table, `name` selected once the table has it."""
        if not name:
            return
        self.select_after_refresh = name
        while len(self.screen_stack) > 1 and not isinstance(self.screen, JobsScreen):
            self.pop_screen()
        if isinstance(self.screen, JobsScreen):
            self.screen.refresh_jobs()


# The screens reach the app through TuiHost; mypy checks here that the app is one.
_HOST: type[TuiHost] = RunaiTuiApp


def describe_error(error: Failure) -> str:
    text = literal(str(error))
    return f"{text} — {literal(error.hint)}" if error.hint else text
