"""Time to a target mAP, each trainer measured as a whole process (MLPerf's figure): torchvision's
references/detection `train.py` against `python -m trainer`, on one learnable COCO-format
fixture, with the same recipe on both sides.

The fixture is the trainer's synthetic set written out as COCO 2017 (JPEGs, instances JSON with
box-shaped polygons, since the reference's loader turns every polygon into a mask): class-coloured
rectangles on dark noise, so a detector learns it in a few epochs, unlike the random boxes of
fig_trainer's speed fixture.

The recipe both sides run: SGD, momentum 0.9, weight decay 1e-4, the reference's warmup (linear
from 0.001 over the first epoch's steps less one, engine.py's rule), then a constant rate (its
MultiStepLR milestones put past the last epoch; ours `--lr-schedule constant`), horizontal flips,
aspect-ratio grouping, an evaluation of the whole validation split after every epoch (pycocotools,
both). The clock runs from the process's start to the line that prints the first evaluation at or
above the target; the process is then stopped. A run that ends, or reaches `limit_s`, without it
says "not reached" and its best.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# pycocotools' summary lines, as the reference's CocoEvaluator prints them
REFERENCE_AP = re.compile(
    rb"Average Precision\s+\(AP\) @\[ IoU=0\.50:0\.95 \| area=\s*all \| maxDets=100 \] = (-?[\d.]+)"
)
REFERENCE_AP50 = re.compile(
    rb"Average Precision\s+\(AP\) @\[ IoU=0\.50\s*\| area=\s*all \| maxDets=100 \] = (-?[\d.]+)"
)


def write_learnable_coco(
    root: Path, train_images: int, val_images: int, classes: int = 3, base_size: int = 240
) -> None:
    """The trainer's synthetic set (seed 0) as a COCO 2017 layout under `root`."""
    from PIL import Image

    from trainer.data.synthetic import make_synthetic_index, render

    categories = [{"id": k, "name": f"class{k}", "supercategory": "x"} for k in range(1, classes + 1)]  # fmt: skip
    for split, count in (("train", train_images), ("val", val_images)):
        index = make_synthetic_index(count, classes, 0, base_size, split)
        (root / f"{split}2017").mkdir(parents=True, exist_ok=True)
        images: list[dict[str, Any]] = []
        annotations: list[dict[str, Any]] = []
        for i in range(len(index)):
            height, width = int(index.heights[i]), int(index.widths[i])
            name = f"{i + 1:012d}.jpg"
            Image.fromarray(render(index, i, 0)).save(root / f"{split}2017" / name, quality=90)
            images.append({"id": i + 1, "file_name": name, "width": width, "height": height})
            rows = index.box_slice(i)
            for (x1, y1, x2, y2), label in zip(index.boxes[rows], index.labels[rows], strict=True):
                left, top = float(x1) * width, float(y1) * height
                w, h = (float(x2) - float(x1)) * width, (float(y2) - float(y1)) * height
                polygon = [left, top, left + w, top, left + w, top + h, left, top + h]
                annotations.append({
                    "id": len(annotations) + 1, "image_id": i + 1, "category_id": int(label),
                    "bbox": [left, top, w, h], "area": w * h, "iscrowd": 0,
                    "segmentation": [polygon],
                })  # fmt: skip
        (root / "annotations").mkdir(exist_ok=True)
        document = {"images": images, "annotations": annotations, "categories": categories}
        path = root / "annotations" / f"instances_{split}2017.json"
        path.write_text(json.dumps(document), encoding="utf-8")


@dataclass
class Recipe:
    """What both sides train with; `steps_per_epoch` sets the warmup (the reference's rule)."""

    model: str
    batch: int
    lr: float
    epochs: int
    steps_per_epoch: int
    workers: int
    device: str
    size: tuple[int, int] | None = None  # (min, max) resize; None: the models' 800/1333
    score_thresh: float | None = None  # None: the models' 0.05
    ours_extra: list[str] = field(default_factory=list)

    @property
    def warmup(self) -> int:
        return max(1, min(1000, self.steps_per_epoch - 1))


def reference_argv(python: str, wrapper: Path, reference_dir: Path, data: Path, out: Path,
                   recipe: Recipe, amp: bool) -> list[str]:  # fmt: skip
    """train.py's command line for the recipe (its size, if any, goes through the wrapper's
    environment: reference_env)."""
    return [
        python, str(wrapper), str(reference_dir.resolve()), "--data-path", str(data),
        "--dataset", "coco", "--model", recipe.model, "--device", recipe.device,
        "--batch-size", str(recipe.batch), "--workers", str(recipe.workers),
        "--epochs", str(recipe.epochs), "--lr", str(recipe.lr), "--lr-steps", "100000",
        "--print-freq", "10", "--output-dir", str(out), *(["--amp"] if amp else []),
    ]  # fmt: skip


def reference_env(env: dict[str, str], recipe: Recipe) -> dict[str, str]:
    """The wrapper's model arguments: the recipe's resize and score threshold, where set."""
    extra: dict[str, float] = {}
    if recipe.size is not None:
        extra.update(min_size=recipe.size[0], max_size=recipe.size[1])
    if recipe.score_thresh is not None:
        extra["score_thresh"] = recipe.score_thresh
    return {**env, "REFERENCE_MODEL_KWARGS": json.dumps(extra)} if extra else env


def ours_argv(python: str, data: Path, out: Path, recipe: Recipe, seed: int = 0) -> list[str]:
    size = ["--min-size", str(recipe.size[0]), "--max-size", str(recipe.size[1])] if recipe.size else []  # fmt: skip
    if recipe.score_thresh is not None:
        size += ["--score-thresh", str(recipe.score_thresh)]
    return [
        python, "-m", "trainer", "--dataset", "coco", "--data-root", str(data),
        "--model", recipe.model, "--device", recipe.device, "--batch-size", str(recipe.batch),
        "--workers", str(recipe.workers), "--epochs", str(recipe.epochs),
        "--lr", str(recipe.lr), "--lr-base-batch", str(recipe.batch),
        "--warmup-steps", str(recipe.warmup), "--warmup-factor", "0.001",
        "--lr-schedule", "constant", "--eval-every", "1", "--log-every", "10",
        "--checkpoint-every", "0", "--resume", "none", "--seed", str(seed),
        "--output-dir", str(out), *size, *recipe.ours_extra,
    ]  # fmt: skip


def parse_ours(line: bytes) -> tuple[float, float] | None:
    """(map, map50) of one of our eval records, else None."""
    if not line.startswith(b'{"kind": "eval"'):
        return None
    record = json.loads(line)
    return float(record["map"]), float(record["map50"])


class ReferenceEvals:
    """The reference prints AP, then AP50, a line each: a pair once both are read."""

    def __init__(self) -> None:
        self.ap: float | None = None

    def __call__(self, line: bytes) -> tuple[float, float] | None:
        if found := REFERENCE_AP.search(line):
            self.ap = max(float(found.group(1)), 0.0)
        elif (found := REFERENCE_AP50.search(line)) and self.ap is not None:
            pair, self.ap = (self.ap, max(float(found.group(1)), 0.0)), None
            return pair
        return None


def time_to_target(
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    parse: Any,
    target: float,
    metric: str = "map",
    limit_s: float = 3600.0,
) -> dict[str, Any]:
    """Run `argv` (a whole process, its own process group), timestamp each evaluation `parse`
    reads from its output, stop it at the first that reaches `target` (or at `limit_s`)."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    evals: list[dict[str, float]] = []
    tail: list[bytes] = []
    reached: float | None = None
    assert proc.stdout is not None
    for line in proc.stdout:
        tail = [*tail[-40:], line]
        now = time.perf_counter() - started
        pair = parse(line)
        if pair is not None:
            evals.append({"s": round(now, 2), "map": pair[0], "map50": pair[1]})
            if pair[0 if metric == "map" else 1] >= target:
                reached = now
                break
        if now > limit_s:
            break
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    code = proc.wait()
    proc.stdout.close()
    best = max((e[metric] for e in evals), default=None)
    return {
        "reached": reached is not None, "seconds": reached, "evals": evals, "best": best,
        "wall_s": time.perf_counter() - started, "exit": code if reached is None else None,
        "tail": b"".join(tail).decode(errors="replace")[-3000:],
    }  # fmt: skip


def describe(name: str, run: dict[str, Any], target: float, metric: str) -> str:
    """One line: the time to the target, or that it was not reached (and the best, the exit)."""
    if run["reached"]:
        return (f"{name}: {metric} {target:g} reached after {run['seconds']:.1f} s "
                f"({len(run['evals'])} evaluation(s))")  # fmt: skip
    best = "none" if run["best"] is None else f"{run['best']:.4f}"
    return (f"{name}: {metric} {target:g} NOT reached in {run['wall_s']:.0f} s (best {best}, "
            f"{len(run['evals'])} evaluation(s), exit {run['exit']})")  # fmt: skip


def verdict(runs: dict[str, dict[str, Any]], goal: float, metric: str) -> list[str]:
    """Ours against the reference: at the target, and at the best mAP both reached (the first
    evaluation of each at or above the lower of their bests), so a target neither side reached
    still gives a figure."""
    ours, ref = runs.get("ours"), runs.get("reference")
    if ours is None or ref is None:
        return [f"time to target >= {goal:g}x faster than the reference: NOT MEASURED (no --reference-dir)"]  # fmt: skip
    lines = []
    if ours["reached"] and ref["reached"]:
        ratio = ref["seconds"] / ours["seconds"]
        met = "met" if ratio >= goal else "NOT met"
        lines.append(f"time to target: {ratio:.2f}x faster than the reference: goal >= {goal:g}x {met}")  # fmt: skip
    if ours["best"] is not None and ref["best"] is not None and min(ours["best"], ref["best"]) > 0:
        common = min(ours["best"], ref["best"])
        first = [next(e["s"] for e in run["evals"] if e[metric] >= common) for run in (ours, ref)]
        lines.append(
            f"time to the best {metric} both reached ({common:.4f}): ours {first[0]:.1f} s, the "
            f"reference {first[1]:.1f} s: {first[1] / first[0]:.2f}x"
        )
    return lines
