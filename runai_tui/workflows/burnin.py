"""A burn-in job: the profile's pods with the wire check alone (`runai-tui burnin`).

The profile is submitted as the training would be, with the same image, network, NIC, env,
volumes and overrides, through the one submit sequence (runai/submission.py); only the trainer's
invocation becomes `python -m trainer comm-check` (the same flags, which size the check), under
the name JOB-burnin. Then it waits for the job to end, reads the master pod's `comm` record
(knowledge/records/wire.py) and deletes the job, whatever happened.

An action over the plumbing (the client): no Textual, no torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runai_tui.knowledge.records.wire import WireCheck
from runai_tui.knowledge.trainer_facts import trainer_args
from runai_tui.profiles import apply_overrides
from runai_tui.runai import runner, submission
from runai_tui.shapes.errors import RunaiError, RuntimeFailure, UsageError
from runai_tui.workflows.gather import read_job_check
from runai_tui.workflows.job_end import wait_for

if TYPE_CHECKING:
    from runai_tui.profiles import Profile
    from runai_tui.runai.client import RunaiClient

SUBCOMMAND = "comm-check"
SUFFIX = "-burnin"


@dataclass(frozen=True)
class BurnIn:
    job: str
    check: WireCheck | None
    phase: str  # the phase the job ended in ("" when it was deleted under us)
    outcome: str  # wait_for's: reached, failed, deleted or timeout
    tail: tuple[str, ...] = ()  # the master's last log lines when no record came


def pods_of(profile: Profile) -> int:
    return int(profile.workers or 0) + (0 if profile.no_master else 1)


def burnin_profile(profile: Profile, sets: Sequence[str]) -> Profile:
    """The profile with its overrides applied and the trainer's invocation turned into the comm
    check. UsageError: one pod (nothing to measure), a command that does not run the trainer."""
    if sets:
        profile = apply_overrides(profile, list(sets))
    pods = pods_of(profile)
    if pods < 2:
        raise UsageError(
            f"profile {profile.name!r} runs {pods} pod: a burn-in measures the wire between pods",
            "give it two pods or more: --set workers=N (the master pod is extra unless no_master)",
        )
    if profile.master_command or profile.master_args:
        raise UsageError(
            f"profile {profile.name!r} sets master_command/master_args: the burn-in cannot "
            "turn the master's own command into the comm check",
            "drop them for the burn-in: --set master_command= --set master_args=",
        )
    words = [*profile.command, *profile.args]
    rest = trainer_args(profile)
    if rest is None:
        raise UsageError(
            f"profile {profile.name!r}: its command does not run the trainer "
            "(.../train-retinanet-ddp.sh or -m trainer), so it has no comm check",
            "see: runai-tui profiles show " + profile.name,
        )
    start = len(words) - len(rest)
    if rest[:1] == [SUBCOMMAND]:
        return profile
    cut = len(profile.command)
    if start < cut:  # the trainer's words begin inside the command
        command = [*profile.command[:start], SUBCOMMAND, *profile.command[start:]]
        return dataclasses.replace(profile, command=command)
    at = start - cut
    return dataclasses.replace(profile, args=[*profile.args[:at], SUBCOMMAND, *profile.args[at:]])


def job_name(profile: Profile) -> str:
    return f"{profile.job_name or profile.name}{SUFFIX}"


def run_burnin(
    client: RunaiClient,
    prepared: submission.Submission,
    timeout: float | None,
    interval: float,
    say: Callable[[str], None],
) -> BurnIn:
    """Submit, wait for the end, read the record, delete (always, once submitted)."""
    result = submission.submit(client, prepared, warn=lambda m: say(f"warning: {m}"))
    name = result.name
    say(f"submitted {name}; waiting for it to end")
    try:
        return runner.run_sync(_wait_and_read(client, name, timeout, interval))
    finally:
        try:
            runner.run_sync(client.adelete(name))
            say(f"deleted {name}")
        except RunaiError as exc:
            say(f"warning: could not delete {name}: {exc.message}")


async def _wait_and_read(
    client: RunaiClient, name: str, timeout: float | None, interval: float
) -> BurnIn:
    waited = await wait_for(client, name, "done", timeout, interval)
    if waited.outcome == "deleted":
        raise RuntimeFailure(f"job {name} was deleted before it ended", "")
    check, tail = await read_job_check(client, name)
    return BurnIn(name, check, waited.phase, waited.outcome, tuple(tail))
