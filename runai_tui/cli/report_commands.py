"""`report`: the morning report, per job or chain of attempts: outcome, attempts, restarts in
place, preemptions, steps lost, wall time, GPU-hours used and lost, best loss and mAP; totals at
the end, and cost where config.toml names `gpu_hour_price` (logic: runai_tui/workflows/chain_report.py)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from runai_tui.cli.common import client_for, print_json, settings_for, table
from runai_tui.runai import runner
from runai_tui.shapes.errors import UsageError
from runai_tui.util.duration import parse_duration
from runai_tui.util.text import literal
from runai_tui.workflows import chain_report
from runai_tui.workflows.attempt_chain import Chain, read_chains
from runai_tui.workflows.sweep import asweep_jobs

if TYPE_CHECKING:
    from runai_tui.runai.client import RunaiClient

DEFAULT_SINCE = "12h"


def add_report_arguments(rp: argparse.ArgumentParser) -> None:
    rp.add_argument(
        "--since",
        metavar="DURATION",
        default=None,
        help=f"jobs created in this last while (30m, 12h, 2d; default {DEFAULT_SINCE}; with "
        "--sweep: every job of the sweep)",
    )
    rp.add_argument("--sweep", metavar="ID", help="the jobs of this sweep, with their attempts")
    rp.add_argument(
        "--json", action="store_true", help='{"price_per_gpu_hour", "jobs": [...], "total"}'
    )


async def _sweep_chains(client: RunaiClient, sweep: str) -> list[Chain]:
    names = await asweep_jobs(client, sweep)
    if not names:
        raise UsageError(f"sweep {sweep} has no jobs", "see: runai-tui list")
    return await read_chains(client, names, skip_missing=True)  # deleted since the list


def _hours(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{seconds / 60:.1f}m"


def _number(value: object, fmt: str) -> str:
    return format(value, fmt) if isinstance(value, (int, float)) else "-"


def _rows(doc: dict[str, object], priced: bool) -> list[list[str]]:
    jobs = doc["jobs"]
    assert isinstance(jobs, list)
    rows = []
    for job in [*jobs, {"job": "total", "outcome": "", **doc["total"]}]:  # type: ignore[dict-item]
        row = [
            literal(str(job["job"])),
            str(job.get("outcome", "")),
            str(job["attempts"]),
            str(job["restarts"]),
            str(job["preemptions"]),
            str(job["steps_lost"]),
            _hours(float(job["wall_seconds"])),
            _number(job["gpu_hours"], ".2f"),
            _number(job["gpu_hours_lost"], ".2f"),
            _number(job.get("best_loss"), ".4f"),
            _number(job.get("best_map"), ".4f"),
            _target(job.get("target")),
        ]
        if priced:
            row += [_number(job["cost"], ".2f"), _number(job["cost_lost"], ".2f")]
        rows.append(row)
    return rows


def _target(record: object) -> str:
    """`step 14, 27 s` where the run reached its --target-map, `not reached`, or `-` (none set)."""
    if not isinstance(record, dict):
        return "-"
    if record.get("status") != "reached":
        return "not reached"
    wall = record.get("wall_time")
    return f"step {record.get('step')}, " + (
        _hours(float(wall)) if isinstance(wall, (int, float)) else "-"
    )


def cmd_report(args: argparse.Namespace) -> int:
    if args.since is not None or args.sweep is None:
        since = parse_duration(args.since or DEFAULT_SINCE, "--since")
        if since <= 0:
            raise UsageError(f"--since {args.since!r}: must be more than 0", "e.g. --since 12h")
    price = settings_for(args).gpu_hour_price.value
    client = client_for(args)

    async def gather() -> chain_report.Report:
        if args.sweep is not None:
            chains = await _sweep_chains(client, args.sweep)
            if args.since is not None:
                chains = [c for c in chains if _recent(c, since)]
        else:
            chains = await chain_report.recent_chains(client, since, _now())
        return await chain_report.build(client, chains, price)

    report = runner.run_sync(gather())
    doc = report.to_dict()
    if args.json:
        print_json(doc)
        return 0
    if not report.rows:
        print("no jobs in the report's window (--since, --sweep)")
        return 0
    header = ["JOB", "OUTCOME", "ATTEMPTS", "RESTARTS", "PREEMPTED", "STEPS LOST", "WALL",
              "GPU-H", "GPU-H LOST", "BEST LOSS", "MAP", "TARGET"]  # fmt: skip
    if price is not None:
        header += [f"COST (@{price:g}/GPU-h)", "COST LOST"]
    print(table(_rows(doc, price is not None), header))
    for basis in dict.fromkeys(b for row in report.rows for b in row.bases):
        print(f"GPU-H from {basis}: {chain_report.BASIS_SAID[basis]}")
    return 0


def _now() -> float:
    return time.time()


def _recent(chain: Chain, since: float) -> bool:
    now = _now()
    return any(a.created is None or a.created.timestamp() >= now - since for a in chain.attempts)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"report": cmd_report}

ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"report": add_report_arguments}
