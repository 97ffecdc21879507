"""`wait`: block until a job (or every job of a sweep) is running, completed or done, for CI
scripts (the pass: runai_tui/workflows/job_end.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from runai_tui.cli.common import client_for, print_error, print_json
from runai_tui.runai import runner
from runai_tui.shapes.errors import UsageError
from runai_tui.util.aio import gather_all
from runai_tui.util.duration import seconds_arg
from runai_tui.util.text import literal
from runai_tui.workflows.job_end import TARGETS, WaitResult, wait_for
from runai_tui.workflows.sweep import asweep_jobs

if TYPE_CHECKING:
    from runai_tui.shapes.models import Phase

WAIT_INTERVAL = 2.0  # seconds between two looks at the job


def add_wait_arguments(wt: argparse.ArgumentParser) -> None:
    wt.add_argument("job", nargs="?", help="the job (or give --sweep)")
    wt.add_argument(
        "--sweep", metavar="ID", help="every job of this sweep, at once (runai-tui sweep prints it)"
    )
    wt.add_argument(
        "--for",
        dest="target",
        default="done",
        metavar="STATE",
        help="running (Running or already Completed), completed, or done (ended in any way; "
        "the default)",
    )
    wt.add_argument(
        "--timeout",
        dest="wait_timeout",
        type=seconds_arg(),
        default=None,
        metavar="S",
        help="give up after S seconds (exit 2); default: wait as long as it takes",
    )
    wt.add_argument(
        "--interval",
        type=seconds_arg(positive=True),
        default=WAIT_INTERVAL,
        metavar="S",
        help="seconds between looks",
    )
    wt.add_argument("--json", action="store_true", help='{"job", "for", "phase", "outcome", ...}')


def cmd_wait(args: argparse.Namespace) -> int:
    if args.target not in TARGETS:
        raise UsageError(
            f"--for {args.target!r}: not one of {', '.join(TARGETS)}",
            "e.g. runai-tui wait JOB --for completed",
        )
    if (args.job is None) == (args.sweep is None):
        raise UsageError("wait: give a job or --sweep ID, one of them", "e.g. runai-tui wait JOB")
    if args.sweep is not None:
        return _wait_sweep(args)

    def waiting(phase: Phase) -> None:
        print(f"waiting for job {literal(args.job)} ({phase.value}) to be {args.target}…",
              file=sys.stderr, flush=True)  # fmt: skip

    result = runner.run_sync(
        wait_for(
            client_for(args),
            args.job,
            args.target,
            args.wait_timeout,
            args.interval,
            on_waiting=waiting,
        )  # fmt: skip
    )
    if args.json:
        print_json(result.to_dict())
    elif result.outcome == "reached":
        print(result.text())
    else:
        print_error(literal(result.text()))
    return result.exit_code


def _wait_sweep(args: argparse.Namespace) -> int:
    """`wait --sweep ID`: every job of the sweep waited on together; one line each, and the
    worst exit of them (0 all reached, 1 one failed or was deleted, 2 one timed out)."""
    client = client_for(args)

    def waiting(name: str) -> Callable[[Phase], None]:
        def say(phase: Phase) -> None:
            print(f"waiting for job {literal(name)} ({phase.value}) to be {args.target}…",
                  file=sys.stderr, flush=True)  # fmt: skip

        return say

    async def every() -> tuple[list[str], list[WaitResult]]:
        names = await asweep_jobs(client, args.sweep)
        waits = (
            wait_for(
                client, n, args.target, args.wait_timeout, args.interval, on_waiting=waiting(n)
            )
            for n in names
        )
        return names, await gather_all(waits)

    names, results = runner.run_sync(every())
    if not names:
        raise UsageError(f"no job of sweep {args.sweep} is left", "see: runai-tui list")
    if args.json:
        print_json({"sweep": args.sweep, "jobs": [r.to_dict() for r in results]})
    for result in results:
        if args.json:
            continue
        if result.outcome == "reached":
            print(result.text())
        else:
            print_error(literal(result.text()))
    return max(r.exit_code for r in results)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "wait": cmd_wait,
}

ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "wait": add_wait_arguments,
}
