"""ProjectsDialog: pick the Run:ai project every call uses (`-p`), from `runai project list`."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from runai_tui.runai.client import RunaiClient
from runai_tui.shapes.errors import RuntimeFailure
from runai_tui.tui.failure_notice import notify_failure
from runai_tui.util.text import literal

# The option that drops `-p`, so the CLI uses its own default project.
CLI_DEFAULT = ""


class ProjectsDialog(ModalScreen[str | None]):
    """Answers a project name, CLI_DEFAULT for the CLI's default project, or None (escape)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    ProjectsDialog { align: center middle; }
    ProjectsDialog > Vertical {
        width: 64; height: auto; max-height: 80%; padding: 1 2;
        border: thick $accent; background: $surface;
    }
    ProjectsDialog #projects-status { height: auto; margin-bottom: 1; }
    ProjectsDialog OptionList { height: auto; max-height: 20; }
    """

    def __init__(self, client: RunaiClient, current: str | None) -> None:
        super().__init__()
        self.client = client
        self.current = current or CLI_DEFAULT
        self.projects: list[str] | None = None  # None until loaded

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "switch project"
            yield Static("loading projects…", id="projects-status", markup=False)
            yield OptionList(id="projects-list", markup=False)

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()
        self.load_projects()

    @work(group="projects", exit_on_error=False)
    async def load_projects(self) -> None:
        options = self.query_one(OptionList)
        status = self.query_one("#projects-status", Static)
        try:
            projects = await self.client.aprojects()
        except RuntimeFailure as error:
            projects = []
            fix = f" — {error.hint}" if error.hint else ""
            status.update(f"could not list the projects: {error}{fix}")
            notify_failure(self.app, error)
        else:
            status.update(f"{len(projects)} project(s); enter to switch, escape to keep")
        self.projects = projects
        names = [CLI_DEFAULT, *projects]
        if self.current not in names:
            names.append(self.current)
        for name in names:
            label = "(the CLI's default project: no -p)" if name == CLI_DEFAULT else literal(name)
            mark = "● " if name == self.current else "  "
            options.add_option(Option(mark + label, id=name or "-"))
        options.highlighted = names.index(self.current)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id or "-"
        self.dismiss(CLI_DEFAULT if option_id == "-" else option_id)

    def action_cancel(self) -> None:
        self.dismiss(None)
