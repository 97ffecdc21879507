"""`runai-tui burnin`: the profile's pods with the wire check alone, its table, the job deleted."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable

from runai_tui.cli.common import add_set_argument, backend_for, client_for, print_json, settings_for
from runai_tui.knowledge.records.wire import table
from runai_tui.profiles import ProfileStore
from runai_tui.runai import submission
from runai_tui.shapes.errors import RuntimeFailure
from runai_tui.util.duration import seconds_arg
from runai_tui.util.text import literal
from runai_tui.workflows import burnin


def add_burnin_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", required=True, help="the profile whose pods are measured")
    add_set_argument(p, "override a profile field for the burn-in, as submit does (repeatable)")
    p.add_argument("--name", default=None, help="the job's name (default: JOB-burnin)")
    p.add_argument(
        "--wait-timeout",
        type=seconds_arg(positive=True),
        default=900.0,
        metavar="SECONDS",
        help="give up waiting after this long (the job is deleted all the same)",
    )
    p.add_argument(
        "--interval",
        type=seconds_arg(positive=True),
        default=2.0,
        help="seconds between status checks",
    )
    p.add_argument("--json", action="store_true", help="the comm record as read, in JSON")


def cmd_burnin(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    profile = burnin.burnin_profile(ProfileStore().load(args.profile), args.sets)
    name = args.name or burnin.job_name(profile)
    prepared = submission.prepare(
        profile,
        (),
        backend=backend_for(args),
        name=name,
        project=settings.project.value,
        project_explicit=settings.project.from_flag,
        prior_sets=args.sets,
    )
    done = burnin.run_burnin(client_for(args), prepared, args.wait_timeout, args.interval, _say)
    if done.check is None:
        tail = "\n".join(f"  {literal(line)}" for line in done.tail)
        raise RuntimeFailure(
            f"job {done.job} ended {done.phase or done.outcome} without a comm record"
            + (f"; the master's last lines:\n{tail}" if tail else ""),
            f"see why: runai-tui submit --profile {args.profile} --dry-run (the burn-in runs "
            "its pods with `comm-check` as the trainer's first word)",
        )
    if args.json:
        print_json(_as_dict(done))
    else:
        print(table(done.check))
    return 0


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _as_dict(done: burnin.BurnIn) -> dict[str, object]:
    assert done.check is not None
    return {"job": done.job, "phase": done.phase, **dataclasses.asdict(done.check)}


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"burnin": cmd_burnin}
ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"burnin": add_burnin_arguments}
