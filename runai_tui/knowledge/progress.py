"""Training progress from the trainer's JSON metric lines (`{"kind": "train", "step": …}`).

Core (no Textual): the TUI's progress widget, diagnosis and the plan all read records through it.
"""

from __future__ import annotations

import json
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

# Enough points for a sparkline as wide as any terminal.
LOSS_HISTORY = 400
# Step-time windows kept for a robust estimate (each record averages --log-every steps).
STEP_TIME_HISTORY = 200


@dataclass
class TrainingProgress:
    """The latest training metrics seen in a log, plus a bounded loss history."""

    step: int | None = None
    epoch: int | None = None
    loss: float | None = None
    lr: float | None = None
    images_per_sec: float | None = None
    # Mean seconds per optimiser step of the latest record, and of the recent records.
    step_time: float | None = None
    step_times: deque[float] = field(default_factory=lambda: deque(maxlen=STEP_TIME_HISTORY))
    total_steps: int | None = None  # the trainer writes the run's length in every train record
    epochs: int | None = None  # the --epochs asked for
    eval: dict[str, Any] = field(default_factory=dict)
    losses: deque[float] = field(default_factory=lambda: deque(maxlen=LOSS_HISTORY))
    lines_parsed: int = 0
    finished: str = ""  # "done" or "stopped" once the trainer says so

    @property
    def seen(self) -> bool:
        return self.lines_parsed > 0

    def feed(self, line: str) -> bool:
        """Take one log line; return True when it was a metric line that changed the progress."""
        record = parse_metric_line(line)
        if record is None:
            return False
        self.lines_parsed += 1
        kind = record.get("kind")
        if kind == "train":
            self.step = _int(record.get("step"), self.step)
            self.epoch = _int(record.get("epoch"), self.epoch)
            self.lr = _float(record.get("lr"), self.lr)
            self.images_per_sec = _float(record.get("images_per_sec"), self.images_per_sec)
            self.total_steps = _int(record.get("total_steps"), self.total_steps)
            step_time = _float(record.get("step_time"), None)
            if step_time is not None and step_time > 0:
                self.step_time = step_time
                self.step_times.append(step_time)
            self.epochs = _int(record.get("epochs"), self.epochs)
            loss = _float(record.get("loss"), None)
            if loss is not None:
                self.loss = loss
                self.losses.append(loss)
        elif kind == "eval":
            self.eval = {
                k: v for k, v in record.items() if k not in ("kind", "step", "epoch", "eval_time")
            }
        elif kind in ("done", "stopped"):
            self.finished = kind
            self.step = _int(record.get("step"), self.step)
            self.epoch = _int(record.get("epoch"), self.epoch)
        return True

    def summary(self) -> str:
        """One line: `step 120/500 · epoch 1 · loss 0.8123 · lr 1.0e-03 · 42.1 img/s`."""
        if not self.seen:
            return "no training metrics yet"
        parts = []
        if self.step is not None:
            total = f"/{self.total_steps}" if self.total_steps else ""
            parts.append(f"step {self.step}{total}")
        if self.epoch is not None:
            parts.append(f"epoch {self.epoch}")
        if self.loss is not None:
            parts.append(f"loss {self.loss:.4f}")
        if self.lr is not None:
            parts.append(f"lr {self.lr:.1e}")
        if self.images_per_sec is not None:
            parts.append(f"{self.images_per_sec:.1f} img/s")
        if self.eval:
            shown = ", ".join(f"{k} {_fmt(v)}" for k, v in list(self.eval.items())[:3])
            parts.append(f"eval: {shown}")
        if self.finished == "done":
            parts.append("finished")
        elif self.finished == "stopped":
            parts.append("stopped early (checkpoint saved)")
        return " · ".join(parts) if parts else "metrics seen, no values yet"


def parse_metric_line(line: str) -> dict[str, Any] | None:
    """Return the JSON object on a metric line, or None for any other line.

    The trainer prints one JSON object per line with a "kind" key; lines may carry a prefix
    (a timestamp or a torchrun `[rank0]:` tag), so the object is taken from the first `{`.
    """
    start = line.find('{"')
    if start < 0 or '"kind"' not in line:
        return None
    try:
        record = json.loads(line[start:].strip())
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
        return None
    return record


def _float(value: object, default: float | None) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    number = float(value)
    return number if math.isfinite(number) else default


def _int(value: object, default: int | None) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return int(value)


def _fmt(value: object) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)
