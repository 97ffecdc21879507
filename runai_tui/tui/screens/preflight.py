"""PreflightScreen: runs the core's preflight probe in every running pod of a job (a worker, so
the app stays live) and shows the checklist; `r` runs it again, escape closes."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from runai_tui.knowledge.probes.preflight import Preflight
from runai_tui.runai.client import RunaiClient
from runai_tui.shapes.errors import RunaiError
from runai_tui.shapes.models import Job
from runai_tui.tui.failure_notice import notify_failure
from runai_tui.tui.health_render import checklist_renderable
from runai_tui.util.text import literal
from runai_tui.workflows.preflight import preflight_job


class PreflightScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q", "close", "Close"),
        Binding("r", "rerun", "Run again"),
    ]

    DEFAULT_CSS = """
    PreflightScreen { align: center middle; }
    PreflightScreen > Vertical {
        width: 90%; height: 90%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    PreflightScreen #preflight-status { height: 1; color: $text-muted; }
    PreflightScreen VerticalScroll { height: 1fr; }
    """

    def __init__(self, client: RunaiClient, job: Job) -> None:
        super().__init__()
        self.client = client
        self.job = job
        self.report: Preflight | None = None

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = f"preflight {literal(self.job.name)}"
            box.border_subtitle = "r run again · esc close"
            yield Static("", id="preflight-status", markup=False)
            with VerticalScroll():
                yield Static("", id="preflight-checklist")

    def on_mount(self) -> None:
        self.run_checks()

    @work(exclusive=True, group="preflight", exit_on_error=False)
    async def run_checks(self) -> None:
        status = self.query_one("#preflight-status", Static)
        status.update("running the checks in each running pod…")
        try:
            report = await preflight_job(self.client, self.job.name)
        except RunaiError as error:
            status.update(f"preflight failed: {error.message}")
            notify_failure(self.app, error)
            return
        self.report = report
        if not report.pods:
            status.update("this job has no pods yet")
            return
        verdict = "some checks FAILED" if report.failed else "no check failed"
        status.update(f"{verdict} ({len(report.pods)} pod(s))")
        self.query_one("#preflight-checklist", Static).update(checklist_renderable(report))

    def action_rerun(self) -> None:
        self.run_checks()

    def action_close(self) -> None:
        self.dismiss(None)
