"""`delete`, `suspend` and `resume` on one job or many: names, or a selector by name glob
(`--selector`), status (`--status`) and age (`--older-than`). Each job gets its own line; the exit
is 1 when any failed, and a failure never stops the rest. A selector that matches nothing says so
and exits 0."""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from runai_tui.cli.common import client_for, print_error
from runai_tui.runai import runner
from runai_tui.runai.bulk import Outcome, Selector, act, select
from runai_tui.shapes.errors import RunaiError, UsageError
from runai_tui.shapes.models import VERB_PHASES, Phase, normalize_phase
from runai_tui.util.duration import parse_duration
from runai_tui.workflows.sweep import sweep_jobs

if TYPE_CHECKING:
    from runai_tui.runai.bulk import Outcome, Selector
    from runai_tui.shapes.models import Job

_DONE = {"delete": "Deleted", "suspend": "Suspended", "resume": "Resumed"}


def add_arguments(p: argparse.ArgumentParser, verb: str) -> None:
    """The arguments of VERB (delete, suspend or resume)."""
    p.epilog = (
        f"e.g. runai-tui {verb} sweep-3 sweep-4;  "
        f"runai-tui {verb} --selector 'sweep-*' --status Completed --older-than 7d"
    )
    p.add_argument("jobs", nargs="*", metavar="JOB", help="job names")
    p.add_argument("--selector", metavar="GLOB", help="every job whose name matches GLOB")
    p.add_argument(
        "--sweep", metavar="ID", help="every job of this sweep (runai-tui sweep prints its ID)"
    )
    p.add_argument(
        "--status",
        action="append",
        default=[],
        metavar="STATUS",
        help="only jobs in this status (repeat, or comma-separate: Completed,Failed)",
    )
    p.add_argument(
        "--older-than",
        metavar="DURATION",
        help="only jobs created longer ago than DURATION (30m, 12h, 7d, 2w)",
    )
    if verb == "delete":
        p.add_argument(
            "-y", "--yes", action="store_true", help="do not ask (required without a tty)"
        )


def _selector(args: argparse.Namespace) -> Selector | None:
    statuses = tuple(s.strip() for given in args.status for s in given.split(",") if s.strip())
    if args.selector is None and not statuses and args.older_than is None and args.sweep is None:
        if not args.jobs:
            raise UsageError(
                f"{args.command}: name at least one job, or give "
                "--selector/--sweep/--status/--older-than",
                f"e.g. runai-tui {args.command} JOB, or --selector 'sweep-*'",
            )
        return None
    if args.jobs:
        raise UsageError(
            f"{args.command}: give job names or a selector, not both",
            "drop the names, or drop --selector/--sweep/--status/--older-than",
        )

    for status in statuses:
        if normalize_phase(status) is Phase.UNKNOWN and status.lower() != "unknown":
            known = ", ".join(p.value for p in Phase)
            raise UsageError(f"--status {status!r} is not a job status", f"use one of: {known}")
    older = parse_duration(args.older_than, "--older-than") if args.older_than else None
    return Selector(args.selector or "*", statuses, older)


def _confirm(names: list[str]) -> bool:
    listed = ", ".join(names)
    if not sys.stdin.isatty():
        what = repr(names[0]) if len(names) == 1 else f"{len(names)} jobs ({listed})"
        raise UsageError(f"refusing to delete {what} without a terminal", "add --yes")
    question = (
        f"Delete job {names[0]!r}?" if len(names) == 1 else f"Delete {len(names)} jobs: {listed}?"
    )
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def cmd_bulk(args: argparse.Namespace) -> int:
    verb = args.command
    selector = _selector(args)
    client = client_for(args)
    names = list(dict.fromkeys(args.jobs))
    jobs = None
    if verb in ("suspend", "resume"):
        client.offers(verb)  # exit 2 where the installed runai lacks the verb
    if selector is not None:
        jobs = client.list_jobs()
    elif verb in ("suspend", "resume"):
        try:  # to say which named jobs are in a state the verb does not apply to
            jobs = client.list_jobs()
        except RunaiError:
            jobs = None  # runai answers for each job
    if selector is not None:
        names = select(jobs or [], selector)
        if args.sweep is not None:
            names = [n for n in sweep_jobs(client, args.sweep, jobs) if n in set(names)]
        if not names:
            what = selector.describe() + (f", sweep {args.sweep}" if args.sweep else "")
            print(f"no job matches ({what}); nothing to {verb}", file=sys.stderr)
            return 0
    if verb == "delete" and not args.yes and not _confirm(names):
        print("Not deleted.")
        return 0
    skipped = _not_applicable(verb, names, jobs or [])
    names = [name for name in names if name not in {o.name for o in skipped}]
    outcomes = [*skipped, *runner.run_sync(act(client, verb, names))]
    for outcome in outcomes:
        if outcome.ok:
            print(outcome.message or f"{_DONE[verb]} {outcome.name}.")
            continue
        text = (
            outcome.message
            if outcome.name in outcome.message
            else f"{outcome.name}: {outcome.message}"
        )
        print_error(text, outcome.hint)
    failed = [o.name for o in outcomes if not o.ok]
    if len(outcomes) > 1:
        done = len(outcomes) - len(failed)
        tail = f"; failed: {', '.join(failed)}" if failed else ""
        print(f"{_DONE[verb].lower()} {done} of {len(outcomes)} jobs{tail}", file=sys.stderr)
    return 1 if failed else 0


def _not_applicable(verb: str, names: list[str], jobs: list[Job]) -> list[Outcome]:
    """A failed Outcome for each named job whose state `verb` does not apply to (suspending a
    Failed job, resuming a Running one); a name the list lacks is left to runai."""
    by_name = {job.name: job for job in jobs}
    return [
        Outcome(name, False, f"{name} is {by_name[name].status}: {VERB_PHASES[verb]}")
        for name in names
        if name in by_name and not by_name[name].phase.allows(verb)
    ]


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "delete": cmd_bulk,
    "suspend": cmd_bulk,
    "resume": cmd_bulk,
}


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    verb: functools.partial(add_arguments, verb=verb) for verb in _DONE
}
