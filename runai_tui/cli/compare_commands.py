"""`compare`: two or more runs side by side, one column each: the sweep's grid, the settings and
run.json fields that differ, the figures with the best marked."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from runai_tui.cli.common import client_for, print_json
from runai_tui.knowledge.compare import RunSide, render_table, run_table
from runai_tui.runai import runner
from runai_tui.runai.client import RunaiClient
from runai_tui.shapes.errors import RuntimeFailure, UsageError
from runai_tui.util.text import literal
from runai_tui.workflows import run_sources
from runai_tui.workflows.sweep import sweep_jobs


def add_compare_arguments(cp: argparse.ArgumentParser) -> None:
    cp.epilog = (
        "Each run may be a job or a saved run directory (the trainer's --output-dir), "
        "written with a / (./run-a) or with --run-dir. One column per run: the sweep's grid "
        "values, the submitted settings and run.json fields that differ (--all: every one), "
        "then final and best loss, images/s, step time and data wait, TFLOP/s and best mAP "
        "(where recorded), the best of each row marked `*` and BEST saying which way is "
        "better. e.g. runai-tui compare lr-1 lr-2, runai-tui compare --sweep ID --json"
    )
    cp.add_argument("runs", nargs="*", metavar="JOB|DIR", help="two or more runs")
    cp.add_argument("--sweep", metavar="ID", help="every job of this sweep (runai-tui sweep)")
    cp.add_argument(
        "--run-dir", action="store_true", help="the runs are run directories, never job names"
    )
    cp.add_argument("--json", action="store_true")
    cp.add_argument(
        "--all",
        action="store_true",
        help="also the settings and run.json fields that are the same on every run",
    )
    # Differences only is the default; --differences, its older switch, is still taken.
    cp.add_argument("--differences", action="store_true", help=argparse.SUPPRESS)


def _is_dir(text: str, forced: bool) -> bool:
    """A path has a `/` (`./run-a`, `/mnt/pvc/runs/a`); a job name never does. A bare word is a
    job even when a folder of that name is here (--run-dir says otherwise)."""
    return forced or "/" in text or text in (".", "..")


def _run_dir(text: str) -> RunSide:
    path = Path(text)
    if not path.is_dir():
        raise UsageError(f"{text}: no such run directory", "give the trainer's --output-dir")
    return run_sources.read_run_dir(path)


def _sides(args: argparse.Namespace, names: list[str], client: RunaiClient | None) -> list[RunSide]:
    """Every run's side, in the order given: the run directories read here, the jobs together
    (run_sources.gather_jobs; `client` is None when every run is a directory)."""
    dirs = {text: _run_dir(text) for text in names if _is_dir(text, args.run_dir)}
    jobs = [text for text in names if text not in dirs]
    gathered = runner.run_sync(run_sources.gather_jobs(client, jobs)) if client and jobs else []
    by_job = dict(zip(jobs, gathered, strict=True))
    return [dirs[text] if text in dirs else by_job[text] for text in names]


def _compare_names(args: argparse.Namespace, client: RunaiClient | None) -> list[str]:
    """The runs to compare: those given, or a sweep's jobs. Fewer than two, a name given twice,
    or a sweep with runs besides it is a usage error."""
    if args.sweep is not None:
        if args.runs:
            raise UsageError(
                f"compare --sweep {args.sweep} with runs besides it ({' '.join(args.runs)})",
                f"compare the sweep alone (runai-tui compare --sweep {args.sweep}) or name "
                "every run",
            )
        return sweep_job_names(client or client_for(args), args.sweep)
    if len(args.runs) < 2:
        raise UsageError(
            f"compare needs two or more runs, got {len(args.runs)}",
            "e.g. runai-tui compare JOB_A JOB_B [JOB_C …], or runai-tui compare --sweep ID",
        )
    twice = sorted({name for name in args.runs if args.runs.count(name) > 1})
    if twice:
        raise UsageError(f"compare: {', '.join(twice)} given more than once", "name each run once")
    return list(args.runs)


def sweep_job_names(client: RunaiClient, sweep: str) -> list[str]:
    """The jobs of a sweep, by the sweep ID in their submission records. Fewer than two left is
    the cluster's state, not the command's fault (exit 1, as for an unknown job); a malformed ID
    is a usage error (sweep_jobs says so)."""
    names = sweep_jobs(client, sweep)
    if len(names) < 2:
        found = ", ".join(names) or "no job"
        raise RuntimeFailure(
            f"sweep {sweep}: {found} found (compare needs two or more)",
            "runai-tui list shows the jobs; a sweep's ID is printed when it is submitted",
        )
    return names


def cmd_compare(args: argparse.Namespace) -> int:
    needs_client = args.sweep is not None or not all(
        _is_dir(text, args.run_dir) for text in args.runs
    )
    client = client_for(args) if needs_client else None
    names = _compare_names(args, client)
    sides = _sides(args, names, client)
    table = run_table(sides, args.sweep)
    if args.json:
        print_json(table.to_dict(differences_only=not args.all))
        return 0
    for line in render_table(table, differences_only=not args.all):
        print(literal(line))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"compare": cmd_compare}


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "compare": add_compare_arguments,
}
