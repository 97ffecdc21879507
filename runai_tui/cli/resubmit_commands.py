"""`resubmit`: a job submitted again from what was submitted, with its findings' remedies and your
overrides, under the next free name (the sequence: runai_tui/workflows/resubmit.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from runai_tui.cli.common import add_set_argument, client_for, print_json, settings_for
from runai_tui.runai import runner
from runai_tui.runai.argv import display_argv
from runai_tui.shapes.errors import UsageError
from runai_tui.util.text import literal
from runai_tui.workflows import resubmit


def add_arguments(rs: argparse.ArgumentParser) -> None:
    rs.epilog = (
        "e.g. runai-tui resubmit JOB --apply-remedies --yes. The new job is NAME-2 (NAME-3, "
        "...) unless --name says otherwise; every override is shown before the submit."
    )
    rs.add_argument("job")
    rs.add_argument(
        "--apply-remedies",
        "--apply-fixes",  # the name it had first: scripts that use it keep working
        dest="apply_remedies",
        action="store_true",
        help="apply the remedies diagnose proposes (--apply-fixes is the same)",
    )
    add_set_argument(rs, "override a field (repeatable); it wins over a remedy for the same field")
    rs.add_argument("--name", metavar="NEW", help="the new job's name (default: the next NAME-N)")
    rs.add_argument("--dry-run", action="store_true", help="print the new command, submit nothing")
    rs.add_argument(
        "--json", action="store_true", help="the plan as JSON (with --dry-run or --yes)"
    )
    rs.add_argument("-y", "--yes", action="store_true", help="do not ask (required without a tty)")


def cmd_resubmit(args: argparse.Namespace) -> int:
    if args.json and not (args.dry_run or args.yes):
        raise UsageError("--json goes with --dry-run or --yes", "add --dry-run, or --yes")
    settings = settings_for(args)
    client = client_for(args)
    planned = runner.run_sync(
        resubmit.plan(
            client,
            args.job,
            apply_remedies=args.apply_remedies,
            sets=args.sets,
            name=args.name,
            project=settings.project.value,
            project_explicit=settings.project.from_flag,
        )
    )
    if planned.no_remedy:
        if args.json:
            print_json({**planned.to_dict(), "submitted": None})
        else:
            print(literal(planned.notes[0]))
        return 0
    resubmit.check(planned)  # the original runs in the same output dir and cannot be suspended
    if args.json:
        doc = planned.to_dict()
    else:
        for line in planned.lines():
            print(literal(line))
    if args.dry_run:
        if args.json:
            print_json({**doc, "submitted": None})
        else:
            print(display_argv(planned.prepared.argv))
        return 0
    if not args.yes and not _confirm(planned.name):
        print("Not submitted.")
        return 0
    step = planned.step()
    if step is not None and not args.json:
        print(f"Suspending {planned.job}; {planned.name} is submitted once its pods are gone.")
    result = runner.run_sync(resubmit.asubmit(client, planned))
    if args.json:
        print_json({**doc, "submitted": result.name, "suspended": planned.job if step else None})
        return 0
    where = " on the LOCAL cluster" if client.backend.is_local else ""
    print(f"Submitted job {result.name}{where}.")
    print(f"Compare it with the first: runai-tui compare {planned.job} {result.name}")
    return 0


def _confirm(name: str) -> bool:
    if not sys.stdin.isatty():
        raise UsageError(f"refusing to submit {name!r} without a terminal", "add --yes")
    return input(f"Submit {name}? [y/N] ").strip().lower() in ("y", "yes")


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"resubmit": cmd_resubmit}


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"resubmit": add_arguments}
