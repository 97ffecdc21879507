"""DescribeScreen: a readable summary of one job (status, pods, resources, events, training
progress from the master pod's metric lines) and the raw describe output."""

from __future__ import annotations

import json
import time

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.timer import Timer
from textual.widgets import Footer, Static, TabbedContent, TabPane
from textual.worker import get_current_worker

from runai_tui.knowledge.remedies import attach_for_job
from runai_tui.shapes.errors import RunaiError
from runai_tui.shapes.models import Job, JobDetail, format_age, format_pods, master_pod
from runai_tui.tui.job_cells import status_text
from runai_tui.tui.screens.base import AppScreen
from runai_tui.tui.screens.logs import LogsScreen
from runai_tui.tui.screens.preflight import PreflightScreen
from runai_tui.tui.widgets.health import HealthPanel
from runai_tui.tui.widgets.log_view import LogView
from runai_tui.tui.widgets.progress import TrainingPanel
from runai_tui.tui.widgets.ranks import CurvesPanel, RanksPanel
from runai_tui.tui.widgets.resources import ResourcesPanel, events_timeline
from runai_tui.util.redaction import redact_document
from runai_tui.util.text import literal
from runai_tui.workflows import watch_state
from runai_tui.workflows.attempt_chain import Chain, Records, read_chain
from runai_tui.workflows.diagnose_job import diagnose_job
from runai_tui.workflows.pod_probes import top_job

# Records read per visit to find the job's chain (the jobs created nearest after its first job
# first; the app keeps them, so a later visit reads on from there).
CHAIN_READS = 100
# How much of the master's log to read for the metrics (the sparkline keeps fewer points).
METRICS_TAIL = 2000
RESOURCES_EVERY = 5.0  # seconds between two reads of a running job's pods (one exec per pod)


def summary_renderable(detail: JobDetail, now_text: str) -> Group:
    job = detail.job
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold")
    facts.add_column()
    facts.add_row("Name", Text(literal(job.name)))
    facts.add_row("Status", status_text(job.phase))
    facts.add_row("Project", Text(literal(job.project or "-")))
    facts.add_row("Type", Text(literal(job.type or "-")))
    facts.add_row("Pods (running/requested)", format_pods(job))
    facts.add_row("GPUs", "-" if job.gpus is None else f"{job.gpus:g}")
    facts.add_row("Age", now_text)

    parts: list[object] = [facts]
    pods = Table(title="Pods", title_justify="left", expand=True, show_edge=False)
    for column in ("NAME", "ROLE", "STATUS", "NODE", "MESSAGE"):
        pods.add_column(column)
    for pod in detail.pods:
        pods.add_row(
            Text(literal(pod.name)),
            Text(literal(pod.role or "-")),
            status_text(pod.phase),
            Text(literal(pod.node or "-")),
            Text(literal(pod.message or "")),
        )
    parts.append(Text(""))
    parts.append(pods if detail.pods else Text("Pods: none reported", style="dim"))

    rows = detail.resource_rows()
    if rows:
        resources = Table(title="Resources", title_justify="left", show_edge=False)
        resources.add_column("RESOURCE")
        resources.add_column("VALUE")
        for key, value in rows:
            resources.add_row(Text(literal(key)), Text(literal(value)))
        parts += [Text(""), resources]

    if detail.notes:
        parts.append(Text(""))
        parts.append(Text("Notes", style="bold"))
        for note in detail.notes:
            parts.append(Text(f"• {literal(note)}", style="yellow"))

    parts += [Text(""), events_timeline(detail)]
    return Group(*parts)  # type: ignore[arg-type]


def attempts_text(chain: Chain, shown: str) -> str:
    """`Attempts: 1 kt (Failed) → 2 kt-r2 (Completed)`, the job on screen marked."""
    steps = [
        f"{a.number} {a.name} ({a.phase.value})" + (" ◀" if a.name == shown else "")
        for a in chain.attempts
    ]
    return "Attempts: " + " → ".join(steps)


def raw_lines(detail: JobDetail) -> list[str]:
    if detail.raw:  # as every display of a submission: its secrets redacted
        shown = redact_document(dict(detail.raw), scan=True)
        return json.dumps(shown, indent=2, sort_keys=True, default=str).splitlines()
    return json.dumps(detail.to_dict(), indent=2, default=str).splitlines()


class DescribeScreen(AppScreen[None]):
    HELP_TITLE = "describe"

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("l", "logs", "Logs"),
        Binding("s", "shell", "Shell"),
        Binding("c", "preflight", "Preflight"),
        Binding("h", "health", "Diagnose again"),
        Binding("f", "remedies", "Remedies"),
        Binding("R", "resubmit", "Resubmit"),
        Binding("ctrl+d", "delete", "Delete"),
        Binding("r", "refresh", "Refresh"),
        Binding("w", "toggle_raw", "Summary/raw"),
        Binding("g", "ranks_tab", "Ranks"),
        Binding("y", "log_scale", "Log y"),
    ]

    def __init__(self, job: Job) -> None:
        super().__init__()
        self.job = job
        self.detail: JobDetail | None = None
        self._timer: Timer | None = None
        self._metrics_pod: str | None = None
        self._diagnosed = False
        self._resources_at = -RESOURCES_EVERY  # monotonic time of the last read
        self._ranks_stale = False  # records arrived since the curves were drawn

    def compose(self) -> ComposeResult:
        yield self.make_header()
        yield Static(f"describe {literal(self.job.name)}", id="describe-title", markup=False)
        yield TrainingPanel(id="describe-training")
        with TabbedContent(id="describe-tabs"):
            with TabPane("Summary", id="tab-summary"), VerticalScroll(id="summary-scroll"):
                yield Static("", id="describe-attempts", markup=False)
                yield HealthPanel(id="describe-health")
                yield ResourcesPanel(id="describe-resources")
                yield Static("loading…", id="describe-summary")
            with TabPane("Ranks & curves", id="tab-ranks"), VerticalScroll(id="ranks-scroll"):
                yield RanksPanel("no per-rank figures yet", id="describe-ranks")
                yield CurvesPanel(id="describe-curves")
            with TabPane("Raw", id="tab-raw"):
                yield LogView(max_lines=50_000, id="describe-raw")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#describe-attempts", Static).display = False
        self.load()
        self.read_attempts()
        self.set_interval(1.0, self.show_ranks)  # the age column moves; new records batch up

    @work(exclusive=True, group="describe", exit_on_error=False)
    async def load(self) -> None:
        worker = get_current_worker()
        if self._timer is not None:
            self._timer.stop()
        try:
            detail = await self.tui.client.adescribe(self.job.name)
        except RunaiError as error:
            self.tui.backend_failed(error)
        else:
            self.show_detail(detail)
        finally:
            interval = self.tui.refresh_interval
            if interval > 0 and not worker.is_cancelled:
                self._timer = self.set_timer(interval, self._tick)

    @work(exclusive=True, group="describe-attempts", exit_on_error=False)
    async def read_attempts(self) -> None:
        """The job's chain of attempts (watch --recover, resubmit), read from the records once
        per visit, and the watcher that watches it; shown when the job is one of several, or
        watched."""
        if not isinstance(self.tui.chain_records, Records):
            self.tui.chain_records = Records()
        try:
            chain = await read_chain(self.tui.client, self.job.name,
                                     records=self.tui.chain_records, budget=CHAIN_READS)  # fmt: skip
        except RunaiError:
            return  # describe's own load says what is wrong
        shown = watch_state.watched(watch_state.watch_folder()).get(chain.root)
        if len(chain.attempts) < 2 and shown is None:
            return
        text = attempts_text(chain, self.job.name)
        if shown is not None:  # a watcher on this machine (the app's W, or `watch`)
            text += "\n" + shown.line
        panel = self.query_one("#describe-attempts", Static)
        panel.update(text)
        panel.display = True

    def _tick(self) -> None:
        if not self.tui.suspended_refresh:
            self.load()

    def show_detail(self, detail: JobDetail) -> None:
        self.detail = detail
        self.job = detail.job
        age = format_age(detail.job.created, self.tui.now())
        self.query_one("#describe-summary", Static).update(summary_renderable(detail, age))
        raw = self.query_one("#describe-raw", LogView)
        lines = raw_lines(detail)
        if lines != list(raw.lines):  # a periodic reload must not reset the reader's place
            raw.clear()
            raw.write_lines(lines)
            raw.follow = False
            raw.scroll_home(animate=False)
        pod = master_pod(detail.pods)
        if pod is not None and pod.name != self._metrics_pod:
            self._metrics_pod = pod.name
            self.read_metrics(pod.name, follow=detail.job.phase.is_active)
        if not self._diagnosed:  # once per visit (h again): a whole log is not re-read every tick
            self._diagnosed = True
            self.diagnose_health(detail)
        self._read_resources_when_due(detail)
        self.refresh_bindings()

    def _read_resources_when_due(self, detail: JobDetail) -> None:
        panel = self.query_one(ResourcesPanel)
        panel.display = detail.job.phase.is_active
        now = time.monotonic()
        if panel.display and now - self._resources_at >= RESOURCES_EVERY:
            self._resources_at = now
            self.read_resources(detail)

    @work(exclusive=True, group="describe-resources", exit_on_error=False)
    async def read_resources(self, detail: JobDetail) -> None:
        """Every running pod's CPU, memory and GPUs (the core's exec probe, about a second)."""

        panel = self.query_one(ResourcesPanel)
        try:
            report = await top_job(self.tui.client, detail.job.name, detail=detail)
        except RunaiError as error:
            panel.failed(error.message)
            return
        panel.show(report)

    @work(exclusive=True, group="describe-health", exit_on_error=False)
    async def diagnose_health(self, detail: JobDetail) -> None:
        """Every pod's whole log through the core's diagnosis (streamed: memory stays flat)."""
        panel = self.query_one(HealthPanel)
        try:
            report = await diagnose_job(self.tui.client, detail.job.name, detail=detail)
        except RunaiError as error:
            panel.failed(error.message)
            return
        attach_for_job(report.findings, detail, local=self.tui.client.backend.is_local)
        panel.show(report)
        self.tui.health.put(detail.job, report)

    @work(exclusive=True, group="describe-metrics", exit_on_error=False)
    async def read_metrics(self, pod: str, follow: bool) -> None:
        """Feed the master's metric lines into the training panel (quietly: logs may not exist)."""
        panel = self.query_one(TrainingPanel)
        stream = self.tui.client.stream_logs(
            self.job.name, pod=pod, follow=follow, tail=METRICS_TAIL
        )
        try:
            async for line in stream:
                if panel.feed_lines([line]):
                    self._ranks_stale = True
        except RunaiError:
            pass
        finally:
            await stream.aclose()
            self.show_ranks()

    def show_ranks(self) -> None:
        """The ranks panel (its ages move every second) and, on new records, the curves."""
        progress = self.query_one(TrainingPanel).progress
        self.query_one(RanksPanel).show(progress, self.tui.now().timestamp())
        if self._ranks_stale:
            self._ranks_stale = False
            self.query_one(CurvesPanel).show(progress)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.tui.readonly and action in {"shell", "delete", "resubmit"}:
            return False
        if action in ("shell", "preflight") and not self.job.phase.is_active:
            return None
        return True

    def action_preflight(self) -> None:
        self.app.push_screen(PreflightScreen(self.tui.client, self.job))

    def action_health(self) -> None:
        if self.detail is not None:
            self.query_one(HealthPanel).update("reading the pods' logs…")
            self.diagnose_health(self.detail)

    def action_remedies(self) -> None:
        """The remedies' overrides and the command-line difference they make."""
        # on demand: the remedies screen loads resubmit (docs/performance.md)
        from runai_tui.tui.screens.remedies import RemediesScreen

        remedies = RemediesScreen(self.tui.client, self.job.name, self.tui.project_explicit)
        self.app.push_screen(remedies, self._resubmit_chosen)

    def action_resubmit(self) -> None:
        """The submit form, filled from the job's submission with the remedies applied."""
        self._open_resubmit_form()

    def _resubmit_chosen(self, resubmit: bool | None) -> None:
        if resubmit:
            self._open_resubmit_form()

    @work(exclusive=True, group="describe-resubmit", exit_on_error=False)
    async def _open_resubmit_form(self) -> None:
        # on demand: the remedies screen loads resubmit (docs/performance.md)
        from runai_tui.tui.screens.remedies import open_resubmit_form

        await open_resubmit_form(self, self.job.name)

    def action_back(self) -> None:
        self.dismiss()

    def action_refresh(self) -> None:
        self.load()

    def action_toggle_raw(self) -> None:
        tabs = self.query_one(TabbedContent)
        tabs.active = "tab-raw" if tabs.active == "tab-summary" else "tab-summary"

    def action_ranks_tab(self) -> None:
        tabs = self.query_one(TabbedContent)
        tabs.active = "tab-summary" if tabs.active == "tab-ranks" else "tab-ranks"

    def action_log_scale(self) -> None:
        self.query_one(CurvesPanel).toggle_log_scale()

    def action_logs(self) -> None:
        self.app.push_screen(LogsScreen(self.job))

    def action_shell(self) -> None:
        self.tui.exec_into(self.job.name, None, after=self.load)

    def action_delete(self) -> None:
        self.tui.confirm_delete(self.job, on_deleted=self.dismiss)
