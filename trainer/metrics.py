"""What the run reports: metrics.jsonl, the same JSON lines on stdout, run.json, and with
--tensorboard TensorBoard event files next to metrics.jsonl (torch.utils.tensorboard, only when
the tensorboard package is importable).

Only rank 0 writes. Each record is one line, flushed at once, so `runai logs` and the TUI see
progress as it happens.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from typing import Any, TypeAlias

from trainer import records
from trainer.files import atomic_write

METRICS_FILE = "metrics.jsonl"
RUN_FILE = "run.json"
# A JSON value as the records and run.json hold it (and as json.loads gives it back).
JSON: TypeAlias = "None | bool | int | float | str | list[JSON] | dict[str, JSON]"


# The record fields drawn in TensorBoard, by record kind (tag: `kind/field`).
TENSORBOARD_FIELDS = {
    records.TRAIN: ("loss", "lr", "images_per_sec", "data_time", "step_time", "tflops", "mfu"),
    records.EVAL: ("map", "map50", "oid_map"),
}


def open_tensorboard(output_dir: str) -> tuple[Any, str]:
    """A SummaryWriter on OUTPUT_DIR, or (None, why not) when tensorboard is not importable."""
    try:  # an optional dependency: only --tensorboard needs it
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:  # torch raises it when the tensorboard package is missing
        return None, f"--tensorboard: no event files ({exc}); metrics.jsonl has every record"
    return SummaryWriter(log_dir=output_dir), f"--tensorboard: event files in {output_dir}"


class MetricsLog:
    def __init__(self, output_dir: str, enabled: bool, writer: Any = None) -> None:
        self.path = os.path.join(output_dir, METRICS_FILE)
        self.enabled = enabled
        self.writer = writer  # a SummaryWriter (rank 0 with --tensorboard), else None

    def truncate_after(self, step: int) -> float | None:
        """On resume, forget records past the checkpoint: those steps are about to run again.
        A resume (STEP > 0) then writes a `resume` record: the steps trained again (`lost`: the
        last step recorded before, less STEP), and the run's resumes and steps lost so far.
        Returns the time of the newest record before (None: none), where the last attempt
        stopped."""
        if not self.enabled or not os.path.isfile(self.path):
            return None
        kept, last, newest = [], step, None
        resumes, lost_total = 0, 0
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a line cut short by a kill
                when = record.get("time")
                if isinstance(when, (int, float)) and (newest is None or when > newest):
                    newest = float(when)
                at = record.get("step", 0)
                if at > step:
                    last = max(last, at) if record.get(records.KIND) == records.TRAIN else last
                    continue
                kept.append(line)
                if record.get(records.KIND) == records.RESUME:
                    lost_total += int(record.get(records.RESUME_LOST, 0))
                    resumes += 1
        atomic_write(self.path, "".join(kept))
        if step > 0:
            lost = last - step
            self.write(
                {
                    records.KIND: records.RESUME,
                    "step": step,
                    records.RESUME_LOST: lost,
                    records.RESUME_COUNT: resumes + 1,
                    records.RESUME_LOST_TOTAL: lost_total + lost,
                }
            )
        return newest

    def write(self, record: Mapping[str, JSON]) -> None:
        if not self.enabled:
            return
        record = {**record, "time": round(time.time(), 3)}  # unix seconds, for rates and ETAs
        line = records.record_line(record)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        if self.writer is not None:
            kind = str(record.get(records.KIND))
            for name in TENSORBOARD_FIELDS.get(kind, ()):
                value = record.get(name)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    self.writer.add_scalar(f"{kind}/{name}", value, record.get("step", 0))
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def write_run_json(output_dir: str, info: Mapping[str, object]) -> None:
    atomic_write(
        os.path.join(output_dir, RUN_FILE), json.dumps(info, indent=2, sort_keys=True) + "\n"
    )


def add_to_run_json(output_dir: str, fields: Mapping[str, JSON]) -> None:
    """Add or replace top-level fields of the run.json record_start wrote (rank 0 only)."""
    with open(os.path.join(output_dir, RUN_FILE), encoding="utf-8") as f:
        info = json.load(f)
    write_run_json(output_dir, {**info, **fields})
