"""Submitting a profile, one sequence for `runai-tui submit`, `runai-tui resubmit` and the TUI's
submit screen: overrides → job name → the argv with the project and the submission record → the
installed CLI's flags → submit.

`prepare` is pure and raises the profile's own errors (exit 2); it builds, in `final_argv`, the one
argv that every face shows, copies and sends: the backend's executable (`Backend.argv`, the
function the client runs every command through) and the profile's command with the project and
the submission record (runai_tui/profiles/submission_record.py: the profile, the overrides and the
resolved profile, as the `runai-tui.io/submission` annotation). The submit twins add what needs
the cluster: what the installed `runai` accepts, from its own help (a flag it lacks stops the
submit, as does CLI v1), and the submit itself, of exactly `argv`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runai_tui.profiles import (
    BY_NAME,
    FIELDS,
    Problem,
    ProfileError,
    apply_overrides,
    check_job_name,
    is_shipped,
    submission_record,
)
from runai_tui.profiles.overrides import effective_sets
from runai_tui.runai.argv import with_project
from runai_tui.runai.command import build_submit_argv, field_argv, master_copies

if TYPE_CHECKING:
    from runai_tui.profiles import Profile
    from runai_tui.runai.backend import Backend
    from runai_tui.runai.client import RunaiClient, SubmitResult
    from runai_tui.runai.installed import Capabilities


@dataclass(frozen=True)
class Submission:
    """A profile with its overrides applied and the exact command line that submits it (what the
    dry run prints and the submit sends); `sets` are every override applied since the profile
    file (a resubmit adds its own to the first submission's), `name`, `project` and
    `project_explicit` what built `argv`, and `record` the submission record it carries."""

    profile: Profile
    argv: list[str]
    sets: tuple[str, ...] = ()
    name: str | None = None
    project: str | None = None
    project_explicit: bool = False
    record: submission_record.Record | None = None
    warnings: tuple[str, ...] = ()  # what the submit goes without (`degrade`)


def final_argv(
    backend: Backend,
    profile: Profile,
    record: submission_record.Record,
    name: str | None = None,
    project: str | None = None,
    project_explicit: bool = False,
) -> list[str]:
    """The argv that `backend` executes to submit, its executable first and the submission
    record included as one more `--annotation` after the profile's own: the one builder behind
    the dry run, the TUI's preview and copy, and the submit. RecordTooLarge (exit 2) when the
    record passes its budget."""
    value = submission_record.annotation_value(record)
    recorded = dataclasses.replace(
        profile, annotations={**profile.annotations, submission_record.ANNOTATION: value}
    )
    words = build_submit_argv(recorded, name)[1:]  # the backend names the program
    return backend.argv(with_project(words, project, override=project_explicit))


def missing_submit_flags(profile: Profile, caps: Capabilities) -> list[tuple[str, str, str]]:
    """(field, flag, note) for every flag the profile emits that the CLI lacks; the note says
    when the flag carries a worker setting to the master."""

    missing = []
    for row in FIELDS:
        value = getattr(profile, row.name)
        words = field_argv(row, value) if value is not None else []
        for word in words:
            if word in row.flags and caps.has("submit", word) is False:
                missing.append((row.name, word, ""))
                break
    seen = {flag for _name, flag, _note in missing}
    for name, flag, _value in master_copies(profile):
        if flag not in seen and caps.has("submit", flag) is False:
            missing.append((name, flag, " (the master gets it as master settings are set)"))
            seen.add(flag)
    return missing


def check_profile(profile: Profile, caps: Capabilities) -> None:
    """Raise ProfileError (exit 2) naming every field whose flag the installed CLI lacks, but
    those the submit may go without (`degradable`)."""

    spared = {name for name, _flag in degradable(profile, caps)}
    problems = []
    for name, flag, note in missing_submit_flags(profile, caps):
        if name in spared:
            continue
        file, line = profile.origins.get(name, (str(profile.source or profile.name), None))
        said = f"{flag}{note} is not in {caps.label}: {caps.why('submit')}"
        problems.append(Problem(file, line, name, said))
    if problems:
        fields = " ".join(f"--set {p.field}=" for p in problems)
        raise ProfileError(
            problems, f"drop the field for this CLI ({fields}) or update the runai CLI"
        )


# What still protects a job whose restart policies an older CLI goes without (docs/profiles.md
# "Older CLIs").
STILL_PROTECTED = (
    "torchrun's restarts inside each pod (the entry script's --max-restarts) and "
    "`runai-tui watch JOB --recover`, which submits a failed job again"
)


def degradable(profile: Profile, caps: Capabilities) -> list[tuple[str, str]]:
    """(field, flag) of each flag the installed CLI lacks whose field is a protection the
    submit may go without (the field table's `degrades_on_older_cli`) and that a shipped
    profile set, unchanged: not a `--set`, not the user's own profile (those are refused)."""
    out = []
    for name, flag, note in missing_submit_flags(profile, caps):
        origin = profile.origins.get(name, ("", None))[0]
        if not note and BY_NAME[name].degrades_on_older_cli and is_shipped(origin):
            out.append((name, flag))
    return out


def degrade(prepared: Submission, caps: Capabilities, backend: Backend) -> tuple[Submission, str]:
    """`prepared` without the fields `degradable` names (its argv and record rebuilt, so the
    record says what was sent), and the one warning naming what is lost and what still
    protects the job ("" when nothing is dropped)."""
    lost = degradable(prepared.profile, caps)
    if not lost:
        return prepared, ""
    names = [name for name, _flag in lost]
    shipped = dict.fromkeys(Path(prepared.profile.origins[n][0]).stem for n in names)
    profile = apply_overrides(prepared.profile, [f"{name}=" for name in names])
    record = prepared.record or submission_record.make(prepared.profile, prepared.sets)
    record = dataclasses.replace(
        record, data={k: v for k, v in record.data.items() if k not in names}
    )
    argv = final_argv(
        backend, profile, record, prepared.name, prepared.project, prepared.project_explicit
    )
    said = (
        f"{caps.label} has no {', '.join(flag for _name, flag in lost)}: submitting without "
        f"{', '.join(names)} (set by the shipped profile {', '.join(shipped)}), so Run:ai "
        f"restarts no failed pod; still protecting the job: {STILL_PROTECTED}"
    )
    degraded = dataclasses.replace(prepared, profile=profile, argv=argv, record=record)
    return degraded, said


def prepare(
    profile: Profile,
    sets: Sequence[str] = (),
    *,
    backend: Backend,
    name: str | None = None,
    project: str | None = None,
    project_explicit: bool = False,
    cli: Capabilities | None = None,
    prior_sets: Sequence[str] = (),
    sweep: str | None = None,
    values: Mapping[str, str] | None = None,
    parent: str | None = None,
    attempt: int | None = None,
    root: str | None = None,
) -> Submission:
    """Apply `--set` overrides, check the job name, build the argv that `backend` executes, with
    the project (an explicit `-p` beats the profile's own) and the submission record and, when
    the CLI's capabilities are known, check its flags. `prior_sets`: the overrides `profile`
    already has (a resubmit's first submission), recorded before `sets`, one per field
    (`effective_sets`); `sweep` and `values`: the sweep's ID and this job's combination of its
    grid, for the record; `parent`, `attempt` and `root`: the job this one submits again, its
    number in that chain (the first is 1) and the chain's first job, for the record. Raises ProfileError or
    UsageError (RecordTooLarge among them); nothing here touches the cluster."""

    if sets:
        profile = apply_overrides(profile, list(sets))
    if name is not None:
        check_job_name(name)
    if cli is not None:
        check_profile(profile, cli)  # a field this runai lacks: said before anything runs
    every = effective_sets((*prior_sets, *sets))
    record = submission_record.make(profile, every, name, sweep, values, parent, attempt, root)
    argv = final_argv(backend, profile, record, name, project, project_explicit)
    prepared = Submission(profile, argv, every, name, project, project_explicit, record)
    if cli is not None:  # the protections this runai lacks, dropped before the preview
        prepared, said = degrade(prepared, cli, backend)
        prepared = dataclasses.replace(prepared, warnings=(said,) if said else ())
    return prepared


def _no_warning(_: str) -> None:
    return None


def submit(
    client: RunaiClient, submission: Submission, warn: Callable[[str], None] = _no_warning
) -> SubmitResult:
    """Check the profile against what the installed CLI accepts, then submit (blocking)."""
    # off the dry run (docs/performance.md)
    from runai_tui.runai import runner

    return runner.run_sync(asubmit(client, submission, warn))


async def asubmit(
    client: RunaiClient, submission: Submission, warn: Callable[[str], None] = _no_warning
) -> SubmitResult:
    """`submit` for the TUI: the same checks, the async client."""
    executable = client.backend.executable
    if submission.argv[: len(executable)] != executable:  # what was shown is not what would run
        raise ValueError(
            f"the submission was prepared for {submission.argv[0]}, not for {executable[0]}:"
            " prepare it with the client's backend"
        )
    caps = await client.acapabilities("submit")
    while caps.warnings:
        warn(caps.warnings.pop(0))
    if missing_submit_flags(submission.profile, caps):
        await caps.aversion(client.probe)  # the refusal names the CLI's version
    check_profile(submission.profile, caps)
    submission, said = degrade(submission, caps, client.backend)
    for warning in (*submission.warnings, said):
        if warning:
            warn(warning)
    return await client.asubmit(submission.argv)
