"""JobsScreen (home): the job table, refreshed in a worker, and the k9s-style keys."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Input, Static

from runai_tui.shapes.errors import Failure, RunaiError
from runai_tui.shapes.models import VERB_PHASES, Job, Phase
from runai_tui.tui.gpu_util import GpuUtilReader
from runai_tui.tui.health_view import BACKGROUND_TAIL
from runai_tui.tui.screens.base import AppScreen
from runai_tui.tui.widgets.job_table import JobTable
from runai_tui.workflows import watch_state

if TYPE_CHECKING:
    from runai_tui.tui.armed import ArmedWatches

# Actions that change the cluster; --readonly hides them.
MUTATING = {"shell", "delete", "suspend", "resume", "new_job", "resubmit", "arm_watch"}
# Actions that need a selected job.
NEEDS_JOB = {
    "describe",
    "logs",
    "shell",
    "delete",
    "preflight",
    "forward_tensorboard",
    "resubmit",
    "mark_sweep",
}
# Actions on the marked jobs (else the selected one).
ON_MARKED = {"delete", "suspend", "resume"}
# The background diagnosis reads at most this many jobs per refresh (tui/health_view.py says which).
HEALTH_JOBS_PER_PASS = 3


def watched_cells(watched: dict[str, watch_state.Shown]) -> dict[str, tuple[str, str]]:
    """Each watched job's (project, WATCH cell): its chain's first job and its latest attempt.
    O(watched): the table matches them to its rows by name."""
    return {
        name: (shown.project, ("watching " if name != shown.job else "") + shown.cell)
        for name, shown in watched.items()
    }


class JobsScreen(AppScreen[None]):
    HELP_TITLE = "jobs"

    BINDINGS = [
        Binding("d,enter", "describe", "Describe", key_display="d/enter"),
        Binding("l", "logs", "Logs"),
        Binding("s", "shell", "Shell"),
        Binding("c", "preflight", "Preflight"),
        Binding("F", "forward_tensorboard", "TensorBoard", show=False),
        Binding("equals_sign", "compare", "Compare", key_display="=", show=False),
        Binding("ctrl+d", "delete", "Delete"),
        Binding("M", "mark_sweep", "Mark the selected job's sweep", show=False),
        Binding("z", "suspend", "Suspend", show=False),
        Binding("u", "resume", "Resume", show=False),
        Binding("n", "new_job", "New job"),
        Binding("R", "resubmit", "Resubmit", show=False),
        Binding("W", "arm_watch", "Watch and recover the marked jobs", show=False),
        Binding("p", "profiles", "Profiles"),
        Binding("P", "projects", "Switch project", show=False),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("r", "refresh", "Refresh"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("N", "sort('name')", "Sort by name", show=False),
        Binding("A", "sort('age')", "Sort by age", show=False),
        Binding("S", "sort('status')", "Sort by status", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._timer: Timer | None = None
        self._fetching = False
        self._again = False
        self.loaded = False  # at least one successful refresh
        self._diagnosing = False
        self._reading_gpus = False
        self.gpu_util = GpuUtilReader()
        # `=` without two marked rows compares the selected job with the one selected before.
        self._highlighted: str | None = None
        self.previous_job: str | None = None
        self.armed: ArmedWatches | None = None  # `W`: the watches armed while the app is open

    def compose(self) -> ComposeResult:
        yield self.make_header()
        yield Static("jobs", id="jobs-title")
        yield JobTable(id="jobs-table")
        yield Input(
            placeholder="filter jobs by name or status (enter to apply, esc to clear)",
            id="jobs-filter",
        )
        yield Footer(compact=True)

    @property
    def table(self) -> JobTable:
        return self.query_one(JobTable)

    def on_mount(self) -> None:
        self.query_one("#jobs-filter", Input).display = False
        self.table.health = self.tui.health
        self.table.marking = not self.tui.readonly  # marks only feed the bulk verbs
        self.table.focus()
        self.refresh_jobs()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        if self.loaded:  # show what describe diagnosed meanwhile (no fetch)
            self.table.update_jobs(list(self.table.jobs.values()), self.tui.now())

    # -- refresh loop: one fetch at a time, render, re-arm ------------------------------------

    def refresh_jobs(self) -> None:
        """Fetch now; if a fetch is in flight, fetch again right after it (never two at once)."""
        if self._fetching:
            self._again = True
            return
        self._fetching = True
        self._stop_timer()
        self._fetch_jobs()

    @work(group="jobs-refresh", exit_on_error=False)
    async def _fetch_jobs(self) -> None:
        first, self.tui.first_list = self.tui.first_list, None
        try:
            if first is not None:  # fetched while the app loaded (tui/launch.py)
                jobs = await asyncio.wrap_future(first)
            else:
                jobs = await self.tui.client.alist_jobs()
        except RunaiError as error:
            self.tui.backend_failed(error)
        else:
            self.show_jobs(jobs)
            self.tui.backend_ok()
        finally:
            self._fetching = False
            self.after_paint(self.tui.first_fetch_done)  # the backend check
            if self._again:
                self._again = False
                self.refresh_jobs()
            else:
                self._arm_timer()

    def _arm_timer(self) -> None:
        interval = self.tui.refresh_interval
        if interval > 0:
            self._stop_timer()
            self._timer = self.set_timer(interval, self._tick)

    def _tick(self) -> None:
        if self.tui.suspended_refresh:
            self._arm_timer()
        else:
            self.refresh_jobs()

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def show_jobs(self, jobs: list[Job]) -> None:
        table = self.table
        table.watched = watched_cells(watch_state.watched(watch_state.watch_folder()))
        table.update_jobs(jobs, self.tui.now())
        self.tui.announce_job_ends(jobs)
        wanted = self.tui.select_after_refresh
        if wanted and table.select_name(wanted):
            self.tui.select_after_refresh = None
        self.loaded = True
        self._update_title()
        self.refresh_bindings()
        if not self._diagnosing and self.tui.health.next_to_diagnose(jobs) is not None:
            self._diagnosing = True
            self.after_paint(self._diagnose_in_background, jobs)
        if not self._reading_gpus and self.gpu_util.due(jobs):
            self._reading_gpus = True
            self.after_paint(self._read_gpus_in_background, jobs)

    def after_paint(self, callback: Callable[..., object], *args: object) -> None:
        """Run background work once the rows are on the screen (after the next refresh)."""
        self.call_after_refresh(callback, *args)

    @work(group="jobs-gpu-util", exit_on_error=False)
    async def _read_gpus_in_background(self, jobs: list[Job]) -> None:
        """The GPU UTIL cells of a few running jobs (tui/gpu_util.py says which)."""
        try:
            await self.gpu_util.read(self.tui.client, jobs, self.table.set_gpu_util)
        finally:
            self._reading_gpus = False

    @work(group="jobs-health", exit_on_error=False)
    async def _diagnose_in_background(self, jobs: list[Job]) -> None:
        """Read the tail of the logs of a few jobs not yet diagnosed, newest first, one at a
        time, and mark their rows; the next refresh continues with the next few."""

        # off the first paint (docs/performance.md)
        from runai_tui.workflows.diagnose_job import diagnose_job, diagnose_waiting

        newest_first = sorted(jobs, key=lambda j: j.created.timestamp() if j.created else 0.0)
        newest_first.reverse()
        try:
            for _ in range(HEALTH_JOBS_PER_PASS):
                job = self.tui.health.next_to_diagnose(newest_first)
                if job is None:
                    break
                try:
                    if job.phase is Phase.PENDING:  # no logs yet: describe says why it waits
                        report = await diagnose_waiting(self.tui.client, job.name)
                    else:
                        report = await diagnose_job(self.tui.client, job.name, tail=BACKGROUND_TAIL)
                except RunaiError:
                    report = None  # gone, or no logs: left unmarked
                if report is not None:
                    self.tui.health.put(job, report)
                else:
                    self.tui.health.give_up(job)
                self.table.update_jobs(list(self.table.jobs.values()), self.tui.now())
        finally:
            self._diagnosing = False

    def _update_title(self) -> None:
        table = self.table
        text = f"jobs ({table.row_count}"
        if table.filter_text:
            text += f" matching /{table.filter_text}"
        text += f")  sort: {table.sort_by}{' ↓' if table.sort_reverse else ''}"
        self.query_one("#jobs-title", Static).update(text)

    # -- bindings state --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.tui.readonly and action in MUTATING:
            return False
        if (
            action in ("suspend", "resume")
            and self.tui.client.capabilities.has("pytorch", action) is False
        ):
            return False  # the installed runai has no `training pytorch suspend/resume`
        if action == "mark_sweep" and self.is_mounted and not self.table.marking:
            return False
        if action in ON_MARKED and self.is_mounted and self.table.marked():
            return True
        if action in NEEDS_JOB | ON_MARKED:
            job = self.table.selected_job if self.is_mounted else None
            if job is None:
                return None
            if action in ("shell", "preflight") and not job.phase.is_active:
                return None
            if action in ("suspend", "resume") and not job.phase.allows(action):
                return None  # e.g. suspend a Failed job
        return True

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self) -> None:
        job = self.table.selected_job
        if job is not None and job.name != self._highlighted:
            self.previous_job, self._highlighted = self._highlighted, job.name
        self.refresh_bindings()

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_describe()

    # -- actions ---------------------------------------------------------------------------------

    def _selected(self) -> Job | None:
        job = self.table.selected_job
        if job is None:
            self.notify("No job selected.", severity="warning")
        return job

    def action_refresh(self) -> None:
        self.refresh_jobs()

    def action_projects(self) -> None:
        self.tui.choose_project(on_switched=self.refresh_jobs)

    def action_sort(self, column: str) -> None:
        self.table.set_sort(column)
        self._update_title()

    def action_describe(self) -> None:
        # off the first paint (docs/performance.md)
        from runai_tui.tui.screens.describe import DescribeScreen

        job = self._selected()
        if job is not None:
            self.app.push_screen(DescribeScreen(job))

    def action_logs(self) -> None:
        # off the first paint (docs/performance.md)
        from runai_tui.tui.screens.logs import LogsScreen

        job = self._selected()
        if job is not None:
            self.app.push_screen(LogsScreen(job))

    def action_shell(self) -> None:
        job = self._selected()
        if job is None:
            return
        if not job.phase.is_active:
            self.notify(
                f"{job.name} is {job.status}: no running pod to exec into.", severity="warning"
            )
            return
        self.tui.exec_into(job.name, None, after=self.refresh_jobs)

    def action_preflight(self) -> None:
        # off the first paint (docs/performance.md)
        from runai_tui.tui.screens.preflight import PreflightScreen

        job = self._selected()
        if job is not None:
            self.app.push_screen(PreflightScreen(self.tui.client, job))

    def action_forward_tensorboard(self) -> None:
        job = self._selected()
        if job is not None:
            self.tui.forwards.tensorboard(job.name)

    def action_compare(self) -> None:
        # off the first paint (docs/performance.md)
        from runai_tui.tui.screens.compare import CompareScreen

        marked = self.table.marked()
        if len(marked) >= 2:
            jobs, how = list(marked), f"the {len(marked)} marked jobs"
        else:
            job = self.table.selected_job
            if job is None or not self.previous_job or self.previous_job == job.name:
                self.notify(
                    "Mark two or more jobs (space), or select one job, then another, and press =.",
                    severity="warning",
                    markup=False,
                )
                return
            jobs, how = [self.previous_job, job.name], "the previously selected job and this one"
        self.app.push_screen(CompareScreen(self.tui.client, jobs, how))

    def action_mark_sweep(self) -> None:
        job = self._selected()
        if job is not None:
            self._mark_sweep(job.name)

    @work(exclusive=True, group="jobs-sweep", exit_on_error=False)
    async def _mark_sweep(self, name: str) -> None:
        """Mark every job of the sweep `name` belongs to (its record says which), through the
        one lookup `list/delete/wait --sweep` use."""
        # off the first paint (docs/performance.md)
        from runai_tui.workflows.sweep import asweep_of_job

        try:
            jobs = list(self.table.jobs.values())
            found, names = await asweep_of_job(self.tui.client, name, jobs)
        except Failure as exc:  # a runai error, a timeout, an ID this version cannot read
            self.notify(exc.message, severity="error", markup=False)
            return
        if found is None:
            self.notify(f"{name} is not a job of a sweep", severity="warning", markup=False)
            return
        for job in names:
            if not self.table.is_marked(job):
                self.table.toggle_mark(job)
        self.notify(f"marked the {len(names)} jobs of sweep {found}", markup=False)
        self.refresh_bindings()

    def action_delete(self) -> None:
        if self.table.marked():
            self._on_marked("delete")
            return
        job = self._selected()
        if job is not None:
            self.tui.confirm_delete(job, on_deleted=self.refresh_jobs)

    def action_suspend(self) -> None:
        self._on_marked("suspend")

    def action_resume(self) -> None:
        self._on_marked("resume")

    def _on_marked(self, verb: str) -> None:
        """`verb` on every marked job (else the selected one), after one confirmation listing
        them; the marks go once it has run."""
        names = self.table.marked()
        if not names:
            job = self._selected()
            if job is None:
                return
            names = [job.name]
        if verb in ("suspend", "resume"):
            jobs = [self.table.jobs[n] for n in names if n in self.table.jobs]
            skipped = [j for j in jobs if not j.phase.allows(verb)]
            if skipped:
                listed = ", ".join(f"{j.name} ({j.status})" for j in skipped)
                self.notify(f"{verb} skips {listed}: {VERB_PHASES[verb]}", severity="warning")
                names = [n for n in names if n not in {j.name for j in skipped}]
            if not names:
                return

        def done() -> None:
            self.table.clear_marks()
            self.refresh_jobs()

        self.tui.confirm_bulk(verb, names, on_done=done)

    def action_arm_watch(self) -> None:
        """`runai-tui watch --recover` on the marked jobs (else the selected one), each step a
        notification, while the app is open."""
        names = self.table.marked() or [j.name for j in [self._selected()] if j is not None]
        if not names:
            return
        if self.armed is None:
            # off the first paint: the watcher brings resubmit and diagnose (docs/performance.md)
            from runai_tui.tui.armed import ArmedWatches

            self.armed = ArmedWatches(
                self.tui.client, self.tui.client.project, self.tui.project_explicit
            )
        armed = self.armed

        def notify(message: str, severity: str) -> None:
            self.notify(message, severity=severity, markup=False)  # type: ignore[arg-type]

        for name in names:
            self.run_worker(armed.watch(name, notify), group="armed-watch", exit_on_error=False)

    def action_new_job(self) -> None:
        # off the first paint (docs/performance.md)
        from runai_tui.tui.screens.submit import SubmitScreen

        self.app.push_screen(SubmitScreen(), self.tui.show_submitted)

    def action_resubmit(self) -> None:
        """The submit form filled from the selected job's submission, remedies applied."""
        job = self.table.selected_job
        if job is not None:
            self._open_resubmit_form(job.name)

    @work(exclusive=True, group="jobs-resubmit", exit_on_error=False)
    async def _open_resubmit_form(self, name: str) -> None:
        # off the first paint (docs/performance.md)
        from runai_tui.tui.screens.remedies import open_resubmit_form

        await open_resubmit_form(self, name)

    def action_profiles(self) -> None:
        # off the first paint (docs/performance.md)
        from runai_tui.tui.screens.profiles import ProfilesScreen

        self.app.push_screen(ProfilesScreen(), self.tui.show_submitted)

    # -- filter ----------------------------------------------------------------------------------

    def action_filter(self) -> None:
        box = self.query_one("#jobs-filter", Input)
        box.display = True
        box.focus()

    @on(Input.Changed, "#jobs-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._apply_filter(event.value.strip())

    @on(Input.Submitted, "#jobs-filter")
    def _filter_submitted(self) -> None:
        self.table.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#jobs-filter", Input)
        box.value = ""
        box.display = False
        self._apply_filter("")
        self.table.focus()

    def _apply_filter(self, text: str) -> None:
        table = self.table
        if text == table.filter_text:
            return
        table.filter_text = text
        table.update_jobs(list(table.jobs.values()), self.tui.now())
        self._update_title()
