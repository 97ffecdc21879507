"""`watch`: follow jobs (or a sweep's) to their end and, with --recover, submit a failed one again
as the retry catalogue says (the watcher: runai_tui/workflows/watcher.py; one per job: watch_lock.py)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from runai_tui.cli.common import client_for, settings_for
from runai_tui.runai import runner
from runai_tui.shapes.errors import UsageError
from runai_tui.util.aio import gather_all
from runai_tui.util.duration import seconds_arg
from runai_tui.util.text import literal
from runai_tui.workflows import watch_lock, watch_state
from runai_tui.workflows.sweep import asweep_jobs
from runai_tui.workflows.watcher import (
    BACKOFF,
    INTERVAL,
    MAX_PENDING,
    Chain,
    ClientCluster,
    Policy,
    Report,
    Watcher,
    read_chains_patiently,
)

if TYPE_CHECKING:
    from runai_tui.runai.client import RunaiClient


def add_watch_arguments(wt: argparse.ArgumentParser) -> None:
    wt.epilog = (
        "e.g. runai-tui watch JOB --recover --max-attempts 3. On Failed the job is diagnosed; "
        "with --recover a fault that running again cures (a node lost, an eviction, an NCCL "
        "timeout, a stalled run) is submitted again as ROOT-rN, resuming from the checkpoints; a "
        "fault with a remedy only with --apply-remedies; anything else stops the watch with the "
        "reason, and so does a job Stopped by a person or Pending past --max-pending."
    )
    wt.add_argument("jobs", nargs="*", metavar="JOB", help="the jobs (or give --sweep)")
    wt.add_argument("--sweep", metavar="ID", help="every job of this sweep")
    wt.add_argument(
        "--recover",
        action="store_true",
        help="submit a failed job again when the catalogue says so",
    )
    wt.add_argument(
        "--max-attempts",
        type=int,
        default=3,
        metavar="N",
        help="attempts in all, the first submission counted (default 3)",
    )
    wt.add_argument(
        "--apply-remedies", action="store_true", help="apply a fault's remedies when submitting"
    )
    wt.add_argument(
        "--backoff",
        type=seconds_arg(),
        default=BACKOFF,
        metavar="S",
        help=f"seconds before attempt 2, doubled for each later one (default {BACKOFF:g})",
    )
    wt.add_argument(
        "--interval",
        type=seconds_arg(positive=True),
        default=INTERVAL,
        metavar="S",
        help="seconds between looks",
    )
    wt.add_argument(
        "--max-pending",
        type=seconds_arg(positive=True),
        default=MAX_PENDING,
        metavar="S",
        help="seconds an attempt may stay Pending before the watch says so and stops, never "
        f"submitting it again (default {MAX_PENDING:g})",
    )
    wt.add_argument("--json", action="store_true", help="one JSON object per event, per line")


def _policy(args: argparse.Namespace) -> Policy:
    if args.max_attempts < 1:
        raise UsageError(
            f"--max-attempts {args.max_attempts}: must be 1 or more (the first submission "
            "counts as one)",
            "e.g. --max-attempts 3",
        )
    if bool(args.jobs) == (args.sweep is not None):
        raise UsageError(
            "watch: give jobs or --sweep ID, one of them", "e.g. runai-tui watch JOB --recover"
        )
    return Policy(args.recover, args.max_attempts, args.apply_remedies, args.backoff,
                  args.interval, args.max_pending)  # fmt: skip


async def _chains(args: argparse.Namespace, client: RunaiClient) -> list[Chain]:
    """Every job's chain, once per chain; UsageError (exit 2) for an unknown job or an empty
    sweep, before anything is watched."""
    names = list(args.jobs)
    if args.sweep is not None:
        names = await asweep_jobs(client, args.sweep)
        if not names:
            raise UsageError(f"sweep {args.sweep} has no jobs", "see: runai-tui list")
    return await read_chains_patiently(
        client, names, lambda line: print(f"warning: {literal(line)}", file=sys.stderr)
    )


def cmd_watch(args: argparse.Namespace) -> int:
    policy = _policy(args)
    settings = settings_for(args)
    client = client_for(args)
    chains = runner.run_sync(_chains(args, client))
    # Keyed by the project the cluster put the job in: `-p p1` and a default that is p1 are one.
    projects = {c.root: c.project or settings.project.value for c in chains}
    locks = [watch_lock.take(projects[c.root], c.root) for c in chains]
    ring = settings.notify.value and sys.stderr.isatty()

    def say(report: Report) -> None:
        if args.json:
            print(json.dumps({"time": round(time.time(), 3), **report.to_dict()}), flush=True)
        else:
            stamp = time.strftime("%H:%M:%S")
            print(f"{stamp} {literal(report.line(policy.max_attempts))}", flush=True)
        if ring and report.kind in ("stopped", "failed"):
            sys.stderr.write("\a")
            sys.stderr.flush()

    for lock in locks:
        if lock.took_over:
            print(f"took over the watch lock of {lock.took_over} (gone): {lock.path}",
                  file=sys.stderr)  # fmt: skip
    cluster = ClientCluster(client, settings.project.value, settings.project.from_flag)
    watcher = Watcher(cluster, policy, say,
                      publish=lambda root: watch_state.writer(projects.get(root), root, "watch"))  # fmt: skip

    async def every() -> list[str]:
        return await gather_all(watcher.watch(c.root) for c in chains)

    try:
        outcomes = runner.run_sync(every())
    finally:
        for chain, lock in zip(chains, locks, strict=True):
            watch_state.clear(projects[chain.root], chain.root)  # before the lock goes
            lock.release()
    return 0 if all(o == "completed" for o in outcomes) else 1


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"watch": cmd_watch}

ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"watch": add_watch_arguments}
