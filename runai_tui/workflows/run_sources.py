"""Where a run's facts live, for `compare`: a job (through the client) or a saved run directory.

- The submission: the local cluster records the submit argv in its jobspec (`spec.submitArgv` in
  describe); a cluster's describe does not, so the master pod's command stands in when describe
  shows one, else the side lacks it.
- The trainer's records: the metric lines in the master's log (the trainer prints every record;
  rank 0 runs in the master), or `metrics.jsonl` in a run directory.
- run.json: in the trainer's --output-dir. Local pods run on this machine, so that directory is a
  local path (the pod command's paths are already the PVC's local ones); on a cluster it is read
  with `cat` in the running master; a finished cluster job's run.json is on the PVC, which only a
  saved run directory reaches (`compare DIR_A DIR_B`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
from pathlib import Path
from typing import Any

from runai_tui.knowledge.compare import RunSide
from runai_tui.knowledge.records.progress import parse_metric_line
from runai_tui.knowledge.submitted import JobSubmission, read_submission
from runai_tui.shapes.errors import RunaiError
from runai_tui.trainer_flags import DEFAULT_OUTPUT_DIR, value_of
from runai_tui.util.aio import gather_all
from runai_tui.workflows.sources import JobSource

METRICS_FILE = "metrics.jsonl"
RUN_FILE = "run.json"


def read_run_dir(path: Path) -> RunSide:
    """A saved run directory (the trainer's --output-dir, e.g. copied from the PVC)."""
    side = RunSide(label=str(path), argv_source="")
    side.lacks.append(
        "the submission (a run directory does not record it; run.json's config "
        "says what the trainer was given)"
    )
    run_file = path / RUN_FILE
    try:
        side.run_info = _json_object(run_file.read_text(encoding="utf-8"))
    except OSError as exc:
        side.lacks.append(f"run.json ({run_file}: {exc.strerror or exc})")
    except ValueError as exc:
        side.lacks.append(f"run.json ({run_file}: not a JSON object: {exc})")
    metrics_file = path / METRICS_FILE
    side.records_source = str(metrics_file)
    try:
        with open(metrics_file, encoding="utf-8", errors="replace") as fh:
            side.records = [r for line in fh if (r := parse_metric_line(line)) is not None]
    except OSError as exc:
        side.records_source = f"{metrics_file}: {exc.strerror or exc}"
    return side


def _json_object(text: str) -> dict[str, Any]:
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("top level is not an object")
    return data


def output_dir(found: JobSubmission, argv: list[str] | None) -> str:
    """The trainer's --output-dir from the master's command (else the argv), made absolute
    against the working directory; the trainer's default when neither says."""
    base = found.working_dir
    where = value_of(found.pod_command, "output-dir") or value_of(argv or [], "output-dir")
    where = where or DEFAULT_OUTPUT_DIR
    return os.path.join(base, where) if base and not os.path.isabs(where) else where


async def gather_job(client: JobSource, name: str) -> RunSide:
    """A job's side: describe, the master's log, and run.json where it can be reached.
    An unknown job raises RunaiError (not found)."""
    detail = await client.adescribe(name)
    found = read_submission(detail)
    side = RunSide(label=name)
    side.sweep, side.values = found.sweep_of()  # the N-way table's title and first rows
    side.argv, side.argv_source = found.shown_argv()
    if side.argv is None:
        side.lacks.append("the submission (describe shows neither a submit argv nor a command)")
    side.records_source = "the master's log"
    try:
        # Closed here, in this task, even when a cancel (another job's failure) ends the read.
        async with contextlib.aclosing(client.stream_logs(name, follow=False)) as lines:
            async for line in lines:
                record = parse_metric_line(line)
                if record is not None:
                    side.records.append(record)
    except RunaiError as error:
        side.records_source = f"the master's log: {error.message}"
    if not side.records and side.records_source == "the master's log":
        side.records_source = "no metric lines in the master's log"
    where = output_dir(found, side.argv)
    run_file = os.path.join(where, RUN_FILE)
    if client.backend.is_local:  # local pods run here: their output dir is a local path
        try:
            side.run_info = _json_object(Path(run_file).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            side.lacks.append(f"run.json ({run_file}: {getattr(exc, 'strerror', None) or exc})")
        return side
    if detail.job.phase.is_active:
        try:
            text = await client.aexec_output(name, None, ["cat", run_file])
            side.run_info = _json_object(text)
        except (RunaiError, ValueError) as exc:
            side.lacks.append(f"run.json (cat {shlex.quote(run_file)} in the master: {exc})")
        return side
    side.lacks.append(
        f"run.json ({run_file} is on the cluster's PVC and the job has ended; compare the saved "
        "run directories: runai-tui compare DIR_A DIR_B)"
    )
    return side


# Jobs read at once: each read runs `runai` (describe, logs) as processes of its own.
GATHER_AT_ONCE = 8


async def gather_jobs(client: JobSource, names: list[str]) -> list[RunSide]:
    """Many jobs' sides, in the order given, GATHER_AT_ONCE read at a time: N jobs take about
    as long as the slowest few, not the sum (benchmarks/compare_gather.py). An unknown job
    raises RunaiError, as gather_job does, once the other reads are cancelled and ended."""
    limit = asyncio.Semaphore(GATHER_AT_ONCE)

    async def one(name: str) -> RunSide:
        async with limit:
            return await gather_job(client, name)

    return await gather_all(one(name) for name in names)
