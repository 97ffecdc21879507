"""ProfilesScreen: list profiles with descriptions, show the resolved YAML, edit in $EDITOR
(re-validated on return; an invalid edit is never saved), duplicate, create, submit."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Static

from runai_tui.profiles import ProfileError
from runai_tui.shapes.errors import UsageError
from runai_tui.tui.screens.base import AppScreen
from runai_tui.tui.screens.confirm import ChoiceDialog
from runai_tui.tui.screens.prompt import PromptDialog
from runai_tui.tui.screens.submit import SubmitScreen
from runai_tui.tui.widgets.log_view import LogView
from runai_tui.util.text import literal

if TYPE_CHECKING:
    from runai_tui.profiles import ProfileEntry


class ProfilesScreen(AppScreen[str]):
    HELP_TITLE = "profiles"

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("enter,s", "submit", "Submit job", key_display="s/enter"),
        Binding("e", "edit", "Edit"),
        Binding("c", "duplicate", "Duplicate"),
        Binding("a", "new", "New profile"),
        Binding("r", "reload", "Reload"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[str, ProfileEntry] = {}

    def compose(self) -> ComposeResult:
        yield self.make_header()
        yield Static("profiles", id="profiles-title")
        with Horizontal(id="profiles-body"):
            yield DataTable(id="profiles-table", cursor_type="row")
            yield LogView(max_lines=10_000, id="profiles-yaml")
        yield Static("", id="profiles-detail", markup=False)
        yield Footer(compact=True)

    @property
    def table(self) -> DataTable[str]:
        return self.query_one("#profiles-table", DataTable)

    def on_mount(self) -> None:
        table = self.table
        table.add_column("NAME", key="name")
        table.add_column("ORIGIN", key="origin")
        table.add_column("DESCRIPTION", key="description")
        self.reload()
        table.focus()

    def reload(self, select: str | None = None) -> None:
        table = self.table
        keep = select or self.selected_name
        table.clear()
        try:
            entries = self.tui.store.entries()
        except UsageError as error:
            self.tui.report_error(error)
            entries = []
        self.entries = {entry.name: entry for entry in entries}
        for entry in entries:
            description = entry.description
            if entry.error:  # the path is shown below the table; keep the problem itself
                description = "INVALID: " + entry.error.replace(f"{entry.path}:", "line ", 1)
            origin = entry.origin + (" (shadows project)" if entry.shadows else "")
            table.add_row(entry.name, origin, literal(description), key=entry.name)
        if keep in self.entries:
            table.move_cursor(row=table.get_row_index(keep), animate=False)
        self.query_one("#profiles-title", Static).update(
            f"profiles ({len(entries)})  user dir: {self.tui.store.user_dir}"
        )
        self.show_selected()

    @property
    def selected_name(self) -> str | None:
        table = self.table
        if not table.row_count:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return row_key.value

    @on(DataTable.RowHighlighted, "#profiles-table")
    def _highlighted(self) -> None:
        self.show_selected()

    @on(DataTable.RowSelected, "#profiles-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_submit()

    def show_selected(self) -> None:
        view = self.query_one("#profiles-yaml", LogView)
        detail = self.query_one("#profiles-detail", Static)
        view.clear()
        name = self.selected_name
        self.refresh_bindings()
        if name is None:
            detail.update("No profiles: press a to create one.")
            return
        entry = self.entries[name]
        try:
            text = self.tui.store.resolved_yaml(name)
        except UsageError as error:
            view.write_lines(
                [f"# {name} is invalid:", *(f"# {line}" for line in str(error).splitlines())]
            )
            view.write_lines(self.tui.store.raw_text(name).splitlines())
        else:
            view.write_lines([f"# {name} (resolved)", *text.splitlines()])
        view.follow = False
        view.scroll_home(animate=False)
        detail.update(f"{entry.path}")

    # -- actions ---------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "submit" and self.tui.readonly:
            return False
        if action in {"submit", "edit", "duplicate"}:
            name = self.selected_name if self.is_mounted else None
            if name is None:
                return None
            if action == "submit" and getattr(self.entries.get(name), "error", None):
                return None
        return True

    def action_back(self) -> None:
        self.dismiss(None)

    def action_reload(self) -> None:
        self.reload()

    def action_submit(self) -> None:
        name = self.selected_name
        if name is None or self.tui.readonly:
            return

        def done(job: str | None) -> None:
            if job:
                self.dismiss(job)

        self.app.push_screen(SubmitScreen(profile=name), done)

    def action_edit(self) -> None:
        name = self.selected_name
        if name is None:
            return
        try:
            text = self.tui.store.raw_text(name)
        except UsageError as error:
            self.tui.report_error(error)
            return
        self.edit_text(name, text)

    def edit_text(self, name: str, text: str) -> None:
        """Open `text` in the editor; save it if valid, otherwise offer re-edit or discard."""

        workdir = Path(tempfile.mkdtemp(prefix="runai-tui-edit-"))
        path = workdir / f"{name}.yaml"
        try:
            path.write_text(text, encoding="utf-8")
            code = self.tui.runner.edit(path)
            edited = path.read_text(encoding="utf-8")
        except (OSError, UsageError) as error:
            self.notify(f"Editor failed: {error}", severity="error", title="edit")
            return
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if code != 0:
            self.notify(f"The editor exited with code {code}; nothing saved.", severity="warning")
            return
        if edited == text:
            self.notify(f"{name}: no changes.", title="edit")
            return
        try:
            saved = self.tui.store.save_text(name, edited)
        except ProfileError as error:
            problems = "\n".join(str(problem) for problem in error.problems)

            def decided(choice: str | None) -> None:
                if choice == "reedit":
                    self.edit_text(name, edited)
                else:
                    self.notify(f"{name}: the invalid edit was discarded.", title="edit")

            self.app.push_screen(
                ChoiceDialog(
                    f"The edited profile is invalid and was NOT saved:\n\n{problems}",
                    [("reedit", "Re-edit"), ("discard", "Discard")],
                    title=f"invalid profile {name}",
                    cancel_id="discard",
                ),
                decided,
            )
            return
        except UsageError as error:
            self.tui.report_error(error)
            return
        self.notify(f"Saved {name} to {saved}.", title="edit")
        self.reload(select=name)

    def action_duplicate(self) -> None:
        name = self.selected_name
        if name is None:
            return

        def chosen(new_name: str | None) -> None:
            if not new_name:
                return
            try:
                path = self.tui.store.duplicate(name, new_name)
            except UsageError as error:
                self.tui.report_error(error)
                return
            self.notify(f"Duplicated {name} as {new_name} ({path}).", title="duplicate")
            self.reload(select=new_name)

        self.app.push_screen(
            PromptDialog(f"Name for the copy of {name}:", f"{name}-copy", "duplicate"), chosen
        )

    def action_new(self) -> None:
        base = self.selected_name

        def chosen(new_name: str | None) -> None:
            if not new_name:
                return
            try:
                path = self.tui.store.new(new_name, base=base)
            except UsageError as error:
                self.tui.report_error(error)
                return
            self.notify(f"Created {new_name} ({path}); press e to edit it.", title="new")
            self.reload(select=new_name)

        question = f"Name of the new profile (it extends {base}):" if base else "Name:"
        self.app.push_screen(PromptDialog(question, "", "new profile"), chosen)
