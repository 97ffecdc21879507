"""InsightPanel: the submit screen's profile checks (each with its fix) and distributed plan,
recomputed from the core (runai_tui/knowledge/lint/checks.py, runai_tui/knowledge/plan.py) whenever the overrides change.

The measured step time needs the log of a job of the same name: it is read once per job name,
in a worker, after typing pauses, and kept for the life of the panel.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.timer import Timer
from textual.widgets import Label, Static

from runai_tui.knowledge.findings import Finding
from runai_tui.knowledge.lint.registry import lint
from runai_tui.knowledge.plan import MEASURE_TAIL, apply_measure, make_plan
from runai_tui.knowledge.records.progress import TrainingProgress
from runai_tui.profiles import Profile
from runai_tui.shapes.errors import RunaiError, UsageError
from runai_tui.util.text import literal
from runai_tui.workflows.job_records import read_progress
from runai_tui.workflows.sources import StreamsLogs

SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}
# Seconds of quiet after the last change before a job's log is read.
MEASURE_DELAY = 0.6


def findings_text(findings: list[Finding]) -> Text:
    """Each finding on three lines: severity, code and field; the message; the fix."""
    if not findings:
        return Text("no findings", style="green")
    text = Text()
    for n, finding in enumerate(findings):
        if n:
            text.append("\n\n")
        text.append(finding.severity, style=SEVERITY_STYLE[finding.severity])
        text.append(f" {finding.code}", style="bold")
        text.append(f"  {literal(finding.field)}\n", style="dim")
        text.append(literal(finding.message) + "\n")
        text.append("fix: ", style="bold")
        text.append(literal(finding.fix))
    return text


def count_text(findings: list[Finding]) -> str:
    counts = [
        f"{n} {severity}{'s' if n > 1 and severity != 'info' else ''}"
        for severity in ("error", "warning", "info")
        if (n := sum(1 for f in findings if f.severity == severity))
    ]
    return "Checks: " + (", ".join(counts) if counts else "none")


class InsightPanel(VerticalScroll):
    DEFAULT_CSS = """
    InsightPanel {
        padding: 0 1;
    }
    InsightPanel > Label {
        text-style: bold;
        margin-top: 1;
    }
    InsightPanel > Static {
        height: auto;
    }
    """

    def __init__(self, client: StreamsLogs, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.client = client
        self.findings: list[Finding] = []
        self.plan_error = ""
        self.measures: dict[str, tuple[TrainingProgress | None, RunaiError | None]] = {}
        self._profile: Profile | None = None
        self._wanted = ""
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Label("Checks", id="insight-checks-title")
        yield Static("", id="insight-checks")
        yield Label("Plan", id="insight-plan-title")
        yield Static("", id="insight-plan")

    def show(self, profile: Profile | None) -> None:
        """Recompute for profile (overrides applied), or blank out while the form is invalid."""
        self._profile = profile
        checks = self.query_one("#insight-checks", Static)
        plan_box = self.query_one("#insight-plan", Static)
        if profile is None:
            self.findings = []
            self.query_one("#insight-checks-title", Label).update("Checks")
            checks.update("(fix the errors in the form first)")
            plan_box.update("")
            return
        self.findings = lint(profile)
        self.query_one("#insight-checks-title", Label).update(count_text(self.findings))
        checks.update(findings_text(self.findings))
        try:
            plan = make_plan(profile)
        except UsageError as error:
            self.plan_error = error.message
            plan_box.update(Text(literal(f"no plan: {error.message}"), style="dim"))
            return
        self.plan_error = ""
        job = profile.job_name or profile.name
        if job in self.measures:
            apply_measure(plan, job, *self.measures[job])
        else:
            plan.measure_note = f"looking for job {job}…"
            self._want(job)
        plan_box.update("\n".join(literal(line) for line in plan.lines()))

    def _want(self, job: str) -> None:
        self._wanted = job
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(MEASURE_DELAY, self._start_measure)

    def _start_measure(self) -> None:
        self.run_worker(
            self._measure(self._wanted),
            group="insight-measure",
            exclusive=True,
            exit_on_error=False,
        )

    async def _measure(self, job: str) -> None:
        try:
            self.measures[job] = (await read_progress(self.client, job, tail=MEASURE_TAIL), None)
        except RunaiError as error:
            self.measures[job] = (None, error)
        if self.is_mounted:
            self.show(self._profile)
