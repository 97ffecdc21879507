"""Submitting a profile, one sequence for `runai-tui submit` and the TUI's submit screen:
overrides → job name → the argv with the project → the installed CLI's flags → submit.

`prepare` is pure and raises the profile's own errors (exit 2); the submit twins add what needs
the cluster: what the installed `runai` accepts, from its own help (a flag it lacks stops the
submit, as does CLI v1) and the submit itself."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runai_tui.runai.capabilities import check_profile, missing_submit_flags
from runai_tui.runai.command import build_submit_argv, with_project

if TYPE_CHECKING:
    from runai_tui.profiles import Profile
    from runai_tui.runai.capabilities import Capabilities
    from runai_tui.runai.client import RunaiClient, SubmitResult


@dataclass(frozen=True)
class Submission:
    """A profile with its overrides applied and the exact command line that submits it."""

    profile: Profile
    argv: list[str]


def prepare(
    profile: Profile,
    sets: Sequence[str] = (),
    *,
    name: str | None = None,
    project: str | None = None,
    project_explicit: bool = False,
    cli: Capabilities | None = None,
) -> Submission:
    """Apply `--set` overrides, check the job name, build the argv with the project (an explicit
    `-p` beats the profile's own) and, when the CLI's capabilities are known, check its flags. Raises
    ProfileError or UsageError; nothing here touches the cluster."""
    from runai_tui.profiles import apply_overrides, check_job_name

    if sets:
        profile = apply_overrides(profile, list(sets))
    if name is not None:
        check_job_name(name)
    if cli is not None:
        check_profile(profile, cli)  # a field this runai lacks: said before anything runs
    argv = with_project(build_submit_argv(profile, name), project, override=project_explicit)
    return Submission(profile, argv)


def _no_warning(_: str) -> None:
    return None


def submit(
    client: RunaiClient, submission: Submission, warn: Callable[[str], None] = _no_warning
) -> SubmitResult:
    """Check the profile against what the installed CLI accepts, then submit (blocking)."""
    from runai_tui.runai import runner

    return runner.run_sync(asubmit(client, submission, warn))


async def asubmit(
    client: RunaiClient, submission: Submission, warn: Callable[[str], None] = _no_warning
) -> SubmitResult:
    """`submit` for the TUI: the same checks, the async client."""
    caps = await client.acapabilities("submit")
    while caps.warnings:
        warn(caps.warnings.pop(0))
    if missing_submit_flags(submission.profile, caps):
        await caps.aversion(client.probe)  # the refusal names the CLI's version
    check_profile(submission.profile, caps)
    return await client.asubmit(submission.argv)
