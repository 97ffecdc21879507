"""RemediesScreen (`f` on a job): the overrides its findings' remedies propose and the
command-line difference they make against the first submission, as `runai-tui resubmit JOB
--apply-remedies --dry-run` prints them (runai_tui/workflows/resubmit.py), gathered in a worker. `R` goes on to the submit
form filled with them; nothing is submitted from here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from runai_tui.shapes.errors import Failure
from runai_tui.tui.screens.submit import SubmitScreen
from runai_tui.util.text import literal
from runai_tui.workflows import resubmit

if TYPE_CHECKING:
    from runai_tui.runai.client import RunaiClient
    from runai_tui.tui.screens.base import AppScreen
    from runai_tui.workflows.resubmit import Plan


async def plan_for_form(screen: AppScreen[Any], job: str) -> Plan | None:
    """The plan `R` fills the submit form with: the remedies applied, or (with a notification)
    the submission as it was when no finding has one; None after reporting a failure."""

    tui = screen.tui
    client = tui.client
    try:
        planned = await resubmit.plan(client, job, apply_remedies=True, project=client.project,
                                      project_explicit=tui.project_explicit)  # fmt: skip
        if planned.no_remedy:
            screen.notify(planned.notes[0], title="resubmit", markup=False)
            planned = await resubmit.plan(client, job, project=client.project,
                                          project_explicit=tui.project_explicit)  # fmt: skip
    except Failure as error:
        tui.report_error(error)
        return None
    return planned


async def open_resubmit_form(screen: AppScreen[Any], job: str) -> None:
    """The resubmit form of `job` (`R` on the jobs table, the describe screen and the remedies):
    the submit form filled by plan_for_form; a job it submits is shown selected on the jobs
    table."""
    planned = await plan_for_form(screen, job)
    if planned is not None:
        screen.app.push_screen(SubmitScreen(resubmit=planned), screen.tui.show_submitted)


class RemediesScreen(ModalScreen[bool]):
    """Dismisses with True when the user asks for the resubmit form (`R`)."""

    BINDINGS = [
        Binding("escape,q", "close", "Close"),
        Binding("R", "resubmit", "Resubmit with these"),
    ]

    DEFAULT_CSS = """
    RemediesScreen { align: center middle; }
    RemediesScreen > Vertical {
        width: 95%; height: 80%;
        border: thick $success; background: $surface; padding: 0 1;
    }
    RemediesScreen #remedies-status { height: auto; color: $text-muted; }
    RemediesScreen VerticalScroll { height: 1fr; }
    """

    def __init__(self, client: RunaiClient, job: str, project_explicit: bool = False) -> None:
        super().__init__()
        self.client, self.job, self.project_explicit = client, job, project_explicit
        self.plan: Plan | None = None

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = f"remedies for {literal(self.job)}"
            box.border_subtitle = "R resubmit with these · esc close"
            yield Static("reading the job's findings…", id="remedies-status", markup=False)
            with VerticalScroll():
                yield Static("", id="remedies-plan", markup=False)

    def on_mount(self) -> None:
        self.gather()

    @work(exclusive=True, group="remedies", exit_on_error=False)
    async def gather(self) -> None:
        status = self.query_one("#remedies-status", Static)
        client = self.client
        try:
            self.plan = await resubmit.plan(client, self.job, apply_remedies=True,
                                            project=client.project,
                                            project_explicit=self.project_explicit)  # fmt: skip
        except Failure as error:
            text = f"no remedies: {error.message}" + (f" — {error.hint}" if error.hint else "")
            status.update(Text(literal(text)))
            return
        if self.plan.no_remedy:
            status.update(Text(literal(self.plan.notes[0])))
            return
        count = len(self.plan.remedies)
        status.update(Text(f"{count} override(s) from the findings' remedies; R opens the form"))
        self.query_one("#remedies-plan", Static).update(
            Text("\n".join(literal(line) for line in self.plan.lines()))
        )

    def action_resubmit(self) -> None:
        self.dismiss(True)

    def action_close(self) -> None:
        self.dismiss(False)
