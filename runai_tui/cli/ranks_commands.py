"""`ranks` (every rank's latest figures) and `metrics` (every trainer record of every pod), read
from the pods' logs (the pass: runai_tui/workflows/job_records.py)."""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from runai_tui.cli.common import client_for, print_json, table
from runai_tui.knowledge.records.progress import (
    figure_text,
    job_totals,
    mfu_text,
    record_age,
    tflops_text,
)
from runai_tui.runai import runner
from runai_tui.shapes.errors import RuntimeFailure
from runai_tui.trainer_flags import records
from runai_tui.util.text import literal
from runai_tui.workflows.job_records import (
    master_progress,
    metric_columns,
    metric_rows,
    read_job_records,
)

if TYPE_CHECKING:
    pass

WAIT_INTERVAL = 2.0  # seconds between two looks at the job


def add_ranks_arguments(rk: argparse.ArgumentParser) -> None:
    rk.add_argument("job")
    rk.add_argument(
        "--json",
        action="store_true",
        help='{"job", "pod", "now", "ranks": [...], "total": {...}, "target": {...} or null}',
    )


def add_metrics_arguments(mt: argparse.ArgumentParser) -> None:
    mt.add_argument("job")
    fmt = mt.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="CSV, one row per record and rank")
    fmt.add_argument("--json", action="store_true", help="a JSON list of the same rows")


def cmd_ranks(args: argparse.Namespace) -> int:
    pod, progress = runner.run_sync(master_progress(client_for(args), args.job))
    if not progress.ranks:
        why = "it has no pods yet" if pod is None else f"no per-rank record in {pod}'s log yet"
        raise RuntimeFailure(
            f"job {args.job!r}: {why}",
            "the trainer writes them every --log-every steps once training starts",
        )
    now = time.time()
    job = job_totals(progress.ranks)
    if args.json:
        print_json(
            {
                "job": args.job,
                "pod": pod,
                "now": round(now, 3),
                "ranks": [f.to_dict() for f in progress.ranks],
                "total": job.to_dict(),  # the job's img/s and TFLOP/s (summed), MFU (mean)
                # --target-map: where the run reached its target mAP, or that it did not
                "target": progress.target.to_dict() if progress.target else None,
            }
        )
        return 0
    rows = [
        [
            str(f.rank),
            "-" if f.step is None else str(f.step),
            figure_text(f.img_s, ".2f"),
            figure_text(f.data_time, ".3f"),
            figure_text(f.step_time, ".3f"),
            figure_text(f.forward_time, ".3f"),
            tflops_text(f.tflops),
            mfu_text(f.mfu),
            record_age(f.time, now),
        ]
        for f in progress.ranks
    ]
    rows.append(
        ["job", "", figure_text(job.img_s, ".2f"), "", "", "", tflops_text(job.tflops),
         mfu_text(job.mfu), ""]
    )  # fmt: skip
    print(f"job {literal(args.job)}, records from pod {literal(pod or '-')}")
    header = ["RANK", "STEP", "IMG/S", "DATA WAIT S", "STEP S", "FORWARD S", "TFLOP/S", "MFU"]
    print(table(rows, [*header, "AGE"]))
    if progress.target is not None:
        print(f"time to target: {progress.target.text()}")
    return 0


def cmd_metrics(args: argparse.Namespace) -> int:
    rows = metric_rows(runner.run_sync(read_job_records(client_for(args), args.job)))
    if args.json:
        print_json(rows)
        return 0
    if args.csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=metric_columns(rows), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {k: (v if isinstance(v, (str, int, float)) or v is None else _json(v))
                 for k, v in row.items()}
            )  # fmt: skip
        return 0
    if not rows:
        print(f"no trainer records in job {literal(args.job)}'s logs yet")
        return 0
    shown = [
        [
            literal(str(r["pod"])),
            str(r["rank"]),
            literal(str(r.get(records.KIND, ""))),
            str(r.get("step", "-")),
            _cell(r.get("loss"), ".4f"),
            _cell(r.get("rank_img_s", r.get("images_per_sec")), ".2f"),
            _cell(r.get("rank_data_time", r.get("data_time")), ".3f"),
        ]
        for r in rows
    ]
    print(table(shown, ["POD", "RANK", "KIND", "STEP", "LOSS", "IMG/S", "DATA WAIT S"]))
    return 0


def _cell(value: object, fmt: str) -> str:
    return format(value, fmt) if isinstance(value, (int, float)) else "-"


def _json(value: object) -> str:
    return json.dumps(value)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "ranks": cmd_ranks,
    "metrics": cmd_metrics,
}


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "ranks": add_ranks_arguments,
    "metrics": add_metrics_arguments,
}
