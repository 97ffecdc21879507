"""SubmitScreen: pick a profile, adjust overrides with live validation, see the exact command,
submit. Dismisses with the new job's name so the jobs screen can select it.

Given a resubmit plan (runai_tui/workflows/resubmit.py: `R` on a job), the form starts from the job's
submission with the remedies applied, shown highlighted above the fields, under the next free
name; the profile list is hidden (the submission is the profile)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Footer, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from runai_tui.profiles import ProfileError
from runai_tui.profiles.submission_record import RecordTooLarge
from runai_tui.runai import submission
from runai_tui.runai.argv import display_argv
from runai_tui.shapes.errors import RunaiError, RuntimeFailure, UsageError
from runai_tui.tui.screens.base import AppScreen
from runai_tui.tui.widgets.insight import InsightPanel
from runai_tui.util.redaction import redact_argv
from runai_tui.util.text import literal
from runai_tui.workflows import resubmit as resubmit_flow

if TYPE_CHECKING:
    from runai_tui.profiles import Profile
    from runai_tui.runai.installed import Capabilities
    from runai_tui.runai.submission import Submission
    from runai_tui.workflows.resubmit import Plan

# Form inputs and the profile field each one overrides.
FIELDS: list[tuple[str, str, str]] = [
    ("job_name", "Job name", "DNS-1123 label, e.g. retinanet-try2"),
    ("workers", "Workers", "worker pods (the master pod is extra)"),
    ("gpus", "GPUs per worker", "whole GPUs per worker pod"),
    ("image", "Image", "container image"),
    ("env", "Extra env", "K=V K2=V2 (shell quoting allowed)"),
    ("trainer", "Trainer flags", "NAME=VALUE …, e.g. lr=0.01 batch-size=4 (--set trainer.NAME)"),
]

# The preview cuts a word longer than this (the submission record) with `…(+N chars)`.
PREVIEW_FOLD = 160


def parse_env(text: str, field: str = "env") -> tuple[list[str], str]:
    """`K=V K2="a b"` -> (["env.K=V", "env.K2=a b"], error text or ""); `field` "trainer" for the
    trainer's flags (`lr=0.01` -> `trainer.lr=0.01`)."""
    try:
        words = shlex.split(text)
    except ValueError as error:
        return [], f"cannot split: {error}"
    sets = []
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            return [], f"{word!r}: expected {'NAME' if field == 'trainer' else 'KEY'}=VALUE"
        sets.append(f"{field}.{key}={value}")
    return sets, ""


class SubmitScreen(AppScreen[str]):
    HELP_TITLE = "submit"

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "submit", "Submit"),
        Binding("ctrl+y", "copy_command", "Copy command"),
    ]

    # Below 120 columns the checks and the plan go under the form, else beside it.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]

    DEFAULT_CSS = """
    SubmitScreen #submit-remedies { height: auto; color: $success; border: round $success; }
    """

    def __init__(self, profile: str | None = None, resubmit: Plan | None = None) -> None:
        super().__init__()
        self.profile_name = profile
        self.resubmit = resubmit  # the plan of `R`: the form starts from its submission
        self.base: Profile | None = None  # the loaded profile
        self.prepared: Submission | None = None  # the form's profile and command, when valid
        self.errors: dict[str, str] = {}
        self.submitting = False
        self.cli: Capabilities | None = None  # what the runai CLI accepts, once known

    @property
    def argv(self) -> list[str] | None:
        """The exact command a submit runs now; None while the form has errors."""
        return None if self.prepared is None else self.prepared.argv

    def compose(self) -> ComposeResult:
        yield self.make_header()
        with Horizontal(id="submit-body"):
            with Vertical(id="submit-left"):
                yield Label("Profile", classes="section")
                yield OptionList(id="submit-profiles")
            with Container(id="submit-right"):
                with VerticalScroll(id="submit-form"):
                    yield Static("", id="submit-description", markup=False)
                    yield Static("", id="submit-remedies", markup=False)
                    for field, label, hint in FIELDS:
                        yield Label(label, classes="field-label")
                        yield Input(placeholder=hint, id=f"in-{field}", classes="field")
                        yield Static("", id=f"err-{field}", classes="field-error", markup=False)
                    yield Static("", id="submit-problems", classes="field-error", markup=False)
                    yield Label("Command", classes="section")
                    yield Static("", id="submit-command", markup=False)
                    with Horizontal(id="submit-buttons"):
                        yield Button("Submit", id="submit-go", variant="primary")
                        yield Button("Copy command", id="submit-copy")
                        yield Button("Cancel", id="submit-cancel")
                yield InsightPanel(self.tui.client, id="submit-insight")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.detect_cli()
        remedies = self.query_one("#submit-remedies", Static)
        remedies.display = self.resubmit is not None
        if self.resubmit is not None:
            self.query_one("#submit-left").display = False
            self.load_resubmit(self.resubmit)
            self.query_one("#in-job_name", Input).focus()
            return
        options = self.query_one("#submit-profiles", OptionList)
        try:
            entries = self.tui.store.entries()
        except UsageError as error:
            self.tui.report_error(error)
            entries = []
        for entry in entries:
            text = entry.name if not entry.error else f"{entry.name} (invalid)"
            options.add_option(Option(text, id=entry.name, disabled=bool(entry.error)))
        names = [e.name for e in entries if not e.error]
        chosen = self.profile_name if self.profile_name in names else (names[0] if names else None)
        if chosen is None:
            self.query_one("#submit-problems", Static).update(
                "No valid profile: create one on the profiles screen (p)."
            )
            return
        options.highlighted = options.get_option_index(chosen)
        self.load_profile(chosen)
        if self.profile_name:
            self.query_one("#in-job_name", Input).focus()
        else:
            options.focus()

    @work(exclusive=True, group="detect-cli", exit_on_error=False)
    async def detect_cli(self) -> None:
        """Learn what the runai CLI accepts (its help, cached per executable), then re-check the
        form."""
        try:
            self.cli = await self.tui.client.acapabilities("submit")
        except (RunaiError, UsageError) as error:
            self.tui.report_error(error)
            return
        while self.cli.warnings:
            self.notify(self.cli.warnings.pop(0), severity="warning", title="runai --help")
        if self.base is not None:
            self.validate_form()

    @on(OptionList.OptionHighlighted, "#submit-profiles")
    def _profile_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id and event.option.id != self.profile_name:
            self.load_profile(event.option.id)

    @on(OptionList.OptionSelected, "#submit-profiles")
    def _profile_selected(self) -> None:
        self.query_one("#in-job_name", Input).focus()

    def load_profile(self, name: str) -> None:
        """Fill the form from profile `name`."""
        try:
            profile = self.tui.store.load(name)
        except UsageError as error:
            self.tui.report_error(error)
            return
        self.profile_name = name
        self.base = profile
        self.query_one("#submit-description", Static).update(
            f"{name}: {profile.description or '(no description)'}"
        )
        self.fill_form(profile, profile.job_name or name)

    def load_resubmit(self, plan: Plan) -> None:
        """Fill the form from a resubmit plan: its profile (the submission with every override
        applied), its new name; the overrides listed, highlighted."""
        profile = plan.prepared.profile
        self.profile_name = profile.name
        self.base = profile
        self.query_one("#submit-description", Static).update(
            f"resubmit {plan.job} (from {plan.how})"
        )
        shown = plan.lines()[1:]  # the overrides, notes and command-line difference
        self.query_one("#submit-remedies", Static).update("\n".join(shown))
        self.fill_form(profile, plan.name)

    def show_plan(self, prepared: Submission) -> None:
        """A resubmit's plan as this form's command makes it: the overrides, the notes (the
        original suspended first when the form writes its output dir) and the difference."""
        if self.resubmit is not None:
            said = self.resubmit.lines(prepared)[1:]
            self.query_one("#submit-remedies", Static).update(literal("\n".join(said)))

    def fill_form(self, profile: Profile, job_name: str) -> None:
        """The form's inputs from `profile` (no Changed events while filling), then the checks."""
        values = {
            "job_name": job_name,
            "workers": "" if profile.workers is None else str(profile.workers),
            "gpus": "" if profile.gpus is None else str(profile.gpus),
            "image": profile.image or "",
            "env": "",
            "trainer": "",
        }
        for field, value in values.items():
            box = self.query_one(f"#in-{field}", Input)
            with box.prevent(Input.Changed):
                box.value = value
        self.validate_form()

    # -- validation ------------------------------------------------------------------------------

    def overrides(self, profile: Profile) -> tuple[list[str], dict[str, str]]:
        """The --set overrides the form asks for over `profile`, and form-level errors by field."""
        sets: list[str] = []
        errors: dict[str, str] = {}
        current = {
            "job_name": profile.job_name or profile.name,
            "workers": "" if profile.workers is None else str(profile.workers),
            "gpus": "" if profile.gpus is None else str(profile.gpus),
            "image": profile.image or "",
        }
        for field, base_value in current.items():
            value = self.query_one(f"#in-{field}", Input).value.strip()
            if value == base_value:
                continue
            if not value:
                errors[field] = "required (the profile sets it)"
                continue
            sets.append(f"{field}={value}")
        for field in ("env", "trainer"):
            field_sets, error = parse_env(self.query_one(f"#in-{field}", Input).value, field)
            if error:
                errors[field] = error
            sets += field_sets
        return sets, errors

    def validate_form(self) -> bool:
        """Re-check the form; show each problem under its field; update the command."""

        base = self.base
        if base is None:
            return False
        sets, errors = self.overrides(base)
        general: list[str] = []
        prepared = None
        # Validate whatever parsed, so every field's problem shows at once.
        try:
            # The project the app uses (-p) is part of the command shown and run.
            name = None
            if self.resubmit is not None:  # the job name is the form's, never a --set
                name = self.query_one("#in-job_name", Input).value.strip() or None
                sets = [item for item in sets if not item.startswith("job_name=")]
            prepared = submission.prepare(
                base,
                sets,
                backend=self.tui.client.backend,  # its executable, as the submit runs it
                name=name,
                project=self.tui.client.project,
                project_explicit=self.tui.project_explicit,
                cli=self.cli,  # a field this runai lacks: said before submit
                prior_sets=self.resubmit.prepared.sets if self.resubmit is not None else (),
                # the job it submits again, and its number in the chain, as `resubmit` records
                parent=self.resubmit.job if self.resubmit is not None else None,
                attempt=_attempt(self.resubmit),
                root=_root(self.resubmit),
            )
        except ProfileError as error:
            known = {field for field, _, _ in FIELDS}
            for problem in error.problems:
                field = problem.field.split(".")[0]
                if field == "trainer":  # one input holds several flags: name the one
                    errors.setdefault(field, f"{problem.field}: {problem.message}")
                elif field in known:
                    errors.setdefault(field, problem.message)
                else:
                    general.append(str(problem))
        except RecordTooLarge as error:  # the record of the whole form: no one field's fault
            general.append(error.message)
        except UsageError as error:  # the resubmit form's job name
            errors.setdefault("job_name", error.message)
        for field, _, _ in FIELDS:
            message = errors.get(field, "")
            self.query_one(f"#err-{field}", Static).update(message)
            self.query_one(f"#in-{field}", Input).set_class(bool(message), "-invalid")
        self.query_one("#submit-problems", Static).update("\n".join(general))
        self.errors = errors | ({"": "\n".join(general)} if general else {})
        command = self.query_one("#submit-command", Static)
        insight = self.query_one(InsightPanel)
        if self.errors or prepared is None:
            self.prepared = None
            command.update("(fix the errors above to see the command)")
            insight.show(None)
        else:
            self.prepared = prepared
            self.show_plan(prepared)
            # Folded for the screen, with a marker, a secret's value redacted; ctrl+y copies the
            # whole command as it runs.
            shown = display_argv(redact_argv(prepared.argv), fold=PREVIEW_FOLD)
            command.update(literal(shown, max_chars=100_000))
            insight.show(prepared.profile)
        self.refresh_bindings()
        return not self.errors

    @on(Input.Changed, ".field")
    def _field_changed(self) -> None:
        self.validate_form()

    @on(Input.Submitted, ".field")
    def _field_submitted(self) -> None:
        self.action_submit()

    # -- actions ---------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in {"submit", "copy_command"}:
            if action == "submit" and self.tui.readonly:
                return False
            return None if self.argv is None or self.submitting else True
        return True

    @on(Button.Pressed, "#submit-go")
    def _go(self) -> None:
        self.action_submit()

    @on(Button.Pressed, "#submit-copy")
    def _copy(self) -> None:
        self.action_copy_command()

    @on(Button.Pressed, "#submit-cancel")
    def _cancel(self) -> None:
        self.action_cancel()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_copy_command(self) -> None:
        if self.argv is None:
            self.notify("Fix the errors first.", severity="warning")
            return
        self.app.copy_to_clipboard(display_argv(self.argv))
        self.notify("Command copied to the clipboard.", title="copy")

    def action_submit(self) -> None:
        if self.tui.readonly:
            self.notify("Read-only mode: submitting is disabled.", severity="warning")
            return
        if not self.validate_form() or self.prepared is None:
            self.notify("Fix the errors shown in the form first.", severity="error", title="submit")
            return
        if not self.submitting:
            self.submitting = True
            self.refresh_bindings()
            self.submit_job(self.prepared)

    def _warn(self, message: str) -> None:
        self.notify(message, severity="warning", title="submit", timeout=15)

    @work(exclusive=True, group="submit", exit_on_error=False)
    async def submit_job(self, prepared: Submission) -> None:
        try:
            if self.resubmit is None:  # what this runai goes without (2.18-2.20): said
                result = await submission.asubmit(self.tui.client, prepared, warn=self._warn)
            else:  # the original suspended first when it runs in the same output dir
                result = await resubmit_flow.asubmit(self.tui.client, self.resubmit, prepared)
        except ProfileError:
            # Submitted before the generation was known, and it lacks a field's flag: the form
            # shows which, under the field, as it would have while typing.
            self.cli = await self.tui.client.acapabilities("submit")
            self.validate_form()
            self.notify("Fix the errors shown in the form first.", severity="error")
        except RuntimeFailure as error:  # runai's, or the original not suspended: not submitted
            self.tui.report_error(error)
            self.query_one("#submit-problems", Static).update(
                f"submit failed: {literal(str(error))}"
            )
        else:
            self.notify(f"Submitted {result.name}.", title="submit")
            self.dismiss(result.name)
        finally:
            self.submitting = False
            if self.is_mounted:
                self.refresh_bindings()


def _attempt(planned: Plan | None) -> int | None:
    """The attempt number a resubmit's plan recorded (None: a new submission)."""
    record = planned.prepared.record if planned is not None else None
    return record.attempt if record is not None else None


def _root(planned: Plan | None) -> str | None:
    """The chain's first job, as a resubmit's plan recorded it (None: a new submission)."""
    record = planned.prepared.record if planned is not None else None
    return record.root if record is not None else None
