"""Training progress from the trainer's JSON metric lines (`{"kind": "train", "step": …}`,
trainer/records.py).

Core (no Textual): the TUI's progress widget, diagnosis and the plan all read records through it.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from runai_tui.shapes.json_types import JSONObject
from runai_tui.trainer_flags import records

# Enough points for a sparkline as wide as any terminal.
LOSS_HISTORY = 400
# Step-time windows kept for a robust estimate (each record averages --log-every steps).
STEP_TIME_HISTORY = 200
# Train records kept for the curves (loss and every rank's images/s against step).
CURVE_HISTORY = 2000


@dataclass(frozen=True)
class RankFigures:
    """One rank's figures in one train record: seconds per step, seconds of data wait per
    step, images/s of this rank alone, seconds per step in the model's own forward pass (no
    wait for other ranks in it; None from a trainer that did not write it), the model's
    achieved TFLOP/s on this rank and its share of the chip's bf16 peak (None where the trainer
    did not count them, or knows no peak); `step` and `time` (unix seconds) are the record's."""

    rank: int
    step: int | None
    step_time: float | None
    data_time: float | None
    img_s: float | None
    time: float | None
    forward_time: float | None = None
    tflops: float | None = None
    mfu: float | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "rank": self.rank,
            "step": self.step,
            "step_time": self.step_time,
            "data_time": self.data_time,
            "img_s": self.img_s,
            "forward_time": self.forward_time,
            "tflops": self.tflops,
            "mfu": self.mfu,
            "time": self.time,
        }


@dataclass(frozen=True)
class TimeToTarget:
    """The trainer's `target` record (--target-map): the step, wall seconds, images and
    GPU-hours at which a run's evaluation reached its target mAP, or where it ended without
    (`reached` False, `value` the best evaluation); `eval_share` is evaluation's share of the
    wall time. run.json's `target` holds the same fields."""

    reached: bool
    metric: str  # map or map50
    target: float
    value: float | None
    step: int | None
    wall_time: float | None
    images: int | None
    gpu_hours: float | None  # None on a CPU
    eval_share: float | None
    gap_seconds: float | None = None  # of wall_time, when no attempt ran (between attempts)

    @classmethod
    def from_record(cls, record: Mapping[str, object]) -> TimeToTarget | None:
        """None when `record` is not a target record the trainer wrote."""
        metric, target = record.get("metric"), _float(record.get("target"), None)
        if not isinstance(metric, str) or target is None:
            return None
        return cls(
            record.get("status") == "reached", metric, target, _float(record.get("value"), None),
            _int(record.get("step"), None), _float(record.get("wall_time"), None),
            _int(record.get("images"), None), _float(record.get("gpu_hours"), None),
            _float(record.get("eval_share"), None), _float(record.get("gap_seconds"), None),
        )  # fmt: skip

    def to_dict(self) -> dict[str, object]:
        return {
            "status": "reached" if self.reached else "not reached",
            "metric": self.metric,
            "target": self.target,
            "value": self.value,
            "step": self.step,
            "wall_time": self.wall_time,
            "images": self.images,
            "gpu_hours": self.gpu_hours,
            "eval_share": self.eval_share,
            "gap_seconds": self.gap_seconds,
        }

    def text(self) -> str:
        """`map 0.3 reached at step 14500 after 1h 27m (464000 images, 11.58 GPU-h; evaluation
        4.1% of the time)`, or `map 0.9 not reached: best 0.0155, ended at step 12 after 27 s`."""
        goal = f"{self.metric} {self.target:g}"
        at = f"step {'-' if self.step is None else self.step} after {span_text(self.wall_time)}"
        if not self.reached:
            best = "-" if self.value is None else f"{self.value:.4f}"
            return f"{goal} not reached: best {best}, ended at {at}"
        notes = [f"{self.images} images"] if self.images is not None else []
        if self.gpu_hours is not None:
            notes.append(f"{self.gpu_hours:.2f} GPU-h")
        share = "" if self.eval_share is None else f"; evaluation {self.eval_share:.1%} of the time"
        if self.gap_seconds:
            share += f"; {span_text(self.gap_seconds)} between attempts"
        return f"{goal} reached at {at} ({', '.join(notes)}{share})"


def span_text(seconds: float | None) -> str:
    """Wall seconds for a person: 9.6 s, 27 s, 12m 05s, 1h 27m; "-" when unknown."""
    if seconds is None:
        return "-"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


@dataclass(frozen=True)
class CurvePoint:
    """What the curves plot from one train record."""

    step: int
    loss: float | None
    img_s: tuple[float | None, ...]  # per rank; empty when the record has no "ranks"


def rank_figures(record: Mapping[str, object]) -> list[RankFigures]:
    """Every rank's figures in a train record (empty when it carries no "ranks" object)."""
    ranks = record.get("ranks")
    if not isinstance(ranks, dict):
        return []
    # What the "ranks" object lists, one value per global rank (trainer/records.py); a
    # RankFigures field by each name.
    columns = [ranks.get(name) for name in records.RANK_FIGURES]
    lengths = {len(c) for c in columns if isinstance(c, list)}
    if len(lengths) != 1:
        return []
    size = lengths.pop()
    values = [c if isinstance(c, list) else [None] * size for c in columns]
    step, stamp = _int(record.get("step"), None), _float(record.get("time"), None)
    return [
        RankFigures(
            rank=rank,
            step=step,
            time=stamp,
            **{
                name: _float(column[rank], None)
                for name, column in zip(records.RANK_FIGURES, values, strict=True)
            },
        )
        for rank in range(size)
    ]


@dataclass(frozen=True)
class JobTotals:
    """The job's images/s and model TFLOP/s (every rank's summed) and MFU (the ranks' mean); None
    where a rank lacks the figure (a trainer that does not count FLOPs, a chip with no known
    peak)."""

    img_s: float | None
    tflops: float | None
    mfu: float | None

    def to_dict(self) -> dict[str, float | None]:
        return {"img_s": self.img_s, "tflops": self.tflops, "mfu": self.mfu}


def job_totals(ranks: list[RankFigures]) -> JobTotals:
    def every(values: list[float | None]) -> list[float] | None:
        known = [v for v in values if v is not None]
        return known if known and len(known) == len(values) else None

    img_s, tflops, mfu = (
        every([getattr(f, name) for f in ranks]) for name in ("img_s", "tflops", "mfu")
    )
    return JobTotals(
        sum(img_s) if img_s else None,
        sum(tflops) if tflops else None,
        sum(mfu) / len(mfu) if mfu else None,
    )


def tflops_text(value: float | None) -> str:
    """TFLOP/s as people read them: 194, 12.3, 0.000801; "-" when unknown."""
    if value is None:
        return "-"
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 1 else f"{value:.3g}"


def mfu_text(value: float | None) -> str:
    """An MFU as a percentage: 19.6%; "-" when unknown."""
    return "-" if value is None else f"{value:.1%}"


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
    # Gradient bytes each rank handed to the all-reduce per step (the trainer's hook counts them).
    allreduce_bytes: float | None = None
    epochs: int | None = None  # the --epochs asked for
    eval: dict[str, object] = field(default_factory=dict)
    losses: deque[float] = field(default_factory=lambda: deque(maxlen=LOSS_HISTORY))
    lines_parsed: int = 0
    finished: str = ""  # "done" or "stopped" once the trainer says so
    ranks: list[RankFigures] = field(default_factory=list)  # every rank, latest record
    curve: deque[CurvePoint] = field(default_factory=lambda: deque(maxlen=CURVE_HISTORY))
    target: TimeToTarget | None = None  # the run's --target-map record, once written
    # The newest resume record's totals: (resumes, steps trained again), once the run resumed
    resumed: tuple[int, int] | None = None

    @property
    def seen(self) -> bool:
        return self.lines_parsed > 0

    def feed(self, line: str) -> bool:
        """Take one log line; return True when it was a metric line that changed the progress."""
        record = parse_metric_line(line)
        if record is None:
            return False
        self.lines_parsed += 1
        kind = record.get(records.KIND)
        if kind == records.TRAIN:
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
            self.allreduce_bytes = _float(record.get("allreduce_bytes"), self.allreduce_bytes)
            loss = _float(record.get("loss"), None)
            if loss is not None:
                self.loss = loss
                self.losses.append(loss)
            figures = rank_figures(record)
            if figures:
                self.ranks = figures
            if self.step is not None:
                self.curve.append(CurvePoint(self.step, loss, tuple(f.img_s for f in figures)))
        elif kind == records.EVAL:
            self.eval = {
                k: v
                for k, v in record.items()
                if k not in (records.KIND, "step", "epoch", "eval_time")
            }
        elif kind == records.TARGET:
            self.target = TimeToTarget.from_record(record) or self.target
        elif kind == records.RESUME:
            resumes = _int(record.get(records.RESUME_COUNT), None)
            self.resumed = (resumes or 0, _int(record.get(records.RESUME_LOST_TOTAL), None) or 0)
        elif kind in records.FINISHED:
            self.finished = str(kind)
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
        job = job_totals(self.ranks)
        if job.tflops is not None:
            mfu = f" (MFU {mfu_text(job.mfu)})" if job.mfu is not None else ""
            parts.append(f"{tflops_text(job.tflops)} TFLOP/s{mfu}")
        if self.eval:
            shown = ", ".join(f"{k} {_fmt(v)}" for k, v in list(self.eval.items())[:3])
            parts.append(f"eval: {shown}")
        if self.resumed is not None:
            parts.append(f"resumed {self.resumed[0]}x, {self.resumed[1]} steps lost")
        if self.finished == records.DONE:
            parts.append("finished")
        elif self.finished == records.STOPPED:
            parts.append("stopped early (checkpoint saved)")
        return " · ".join(parts) if parts else "metrics seen, no values yet"


def parse_metric_line(line: str) -> JSONObject | None:
    """Return the JSON object on a metric line, or None for any other line: the trainer's
    schema reads it (trainer/records.py; a prefix such as torchrun's `[rank0]:` is allowed)."""
    return cast("JSONObject | None", records.parse_record_line(line))


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


def record_age(stamp: float | None, now: float) -> str:
    """How long ago a record was written, for a ranks table: 42s, 7m, 1.5h; "-" when unknown."""
    if stamp is None:
        return "-"
    seconds = max(0.0, now - stamp)
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def figure_text(value: float | None, fmt: str) -> str:
    """A rank's figure in `fmt`, "-" when that rank has not reported it."""
    return "-" if value is None else format(value, fmt)
