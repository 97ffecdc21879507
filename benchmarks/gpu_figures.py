#!/usr/bin/env python3
"""The GPU figures, in one run on one GPU, printed as one table: whole processes on one synthetic
COCO-style fixture (640 training images of 320x240, 90 categories, resized by the models to
800x1066; batch 8, 8 loader workers, one epoch of 80 steps), the rows most wanted first:

- torchvision's references/detection `train.py --amp` (given --reference-dir, a checkout of it;
  run unmodified through benchmarks/fig_trainer.py's wrapper), steady s/it from its log lines;
- `python -m trainer` as shipped: no speed flags, so --amp, --channels-last and --compile auto
  decide (an 80-step run does not repay a cold compile, so it runs eager);
- `python -m trainer --compile on`, the best flags, with an empty compile cache, then the same
  command again: the second start, from the warm cache beside the output dir;
- the trainer with the best flags at batch 16 (40 steps), the whole-trainer MFU goal;
- time to a target mAP (benchmarks/fig_target.py): train.py --amp against our shipped defaults
  on a learnable COCO-format fixture (512 images, 3 classes, the same recipe both sides,
  evaluated every epoch; v2 ResNet-50 at 800/1333), each a whole process, from its start to
  its first evaluation at --target-map (default mAP@.5 0.5), and to the best both reached;
- benchmarks/gpu_step.py (one fixed batch, batch 8 and 16, compiled rows only), whose MFU is
  compared with what the trainer's records report (`tflops`, `mfu`).

Our img/s is the median of the train records' windows after the first (which holds the start
and the compile), with the slowest and fastest window beside it; peak memory is the records'
peak_memory_mb (the reference's: its `max mem`). The goals: shipped defaults at least 3x the
reference's img/s at no more memory, at least 3x faster to the same mAP, and the whole trainer
at batch 16 at least 25% of the chip's datasheet bf16 peak.

A row that fails prints its own last lines and the others are still measured (exit 1 at the
end); no row starts after --budget-s (540 s: one 10-minute command; --only picks row groups);
--out is rewritten after each row, so a run stopped from outside keeps what it measured.

    python benchmarks/gpu_figures.py --reference-dir DIR --out FILE
    python benchmarks/gpu_figures.py --quick --device cpu --reference-dir DIR  # the script's check

--quick checks the script, not the figures: 8 images, ResNet-18 at 64/96 in fp32, batch 2 and 4,
and our compiled runs through the test hook's "eager" backend (trainer/test_hooks.py), since an
inductor compile takes many minutes on a CPU; the reference row with retinanet_resnet50_fpn
(train.py has no ResNet-18) at 64/96 through the wrapper; time to target at 64/96 on 16 images
with every detection kept, to a toy mAP@.5 of 0.002; gpu_step.py's eager rows; budget 3600 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import fig_target  # noqa: E402
from benchmarks.fig_target import Recipe, write_learnable_coco  # noqa: E402
from benchmarks.fig_trainer import (  # noqa: E402
    REFERENCE_ITERATION,
    WRAPPER,
    timed_iterations,
    trainer_env,
    write_coco_fixture,
)
from trainer.test_hooks import COMPILE_ENV  # noqa: E402

SPEED_GOAL = 3.0  # shipped defaults over the reference, whole processes, at no more memory
MFU_GOAL = 0.25  # whole trainer at batch 16, of the datasheet bf16 peak
TARGET_GOAL = 3.0  # shipped defaults over train.py --amp in time to the same mAP, whole processes
REFERENCE_MEMORY = re.compile(rb"max mem: (\d+)")  # MB, torch.cuda.max_memory_allocated


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference-dir", type=Path, default=None,
                        help="a checkout of torchvision's references/detection (else no reference row)")  # fmt: skip
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--images", type=int, default=640, help="training images in the fixture")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--big-batch", type=int, default=16)
    parser.add_argument("--workers", type=int, default=8, help="loader workers, both sides")
    parser.add_argument("--log-every", type=int, default=10, help="our records' window in steps")
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="the chip's dense bf16 peak (default: trainer/flops.py's table)")  # fmt: skip
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes, ResNet-18: checks the script, not the figures")  # fmt: skip
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the fixture, outputs and compile cache here (default: a temp dir)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=None,
                        help="write the figures as JSON here (rewritten after each row)")  # fmt: skip
    parser.add_argument("--budget-s", type=float, default=540.0,
                        help="start no row after this many seconds (it says NOT MEASURED); the "
                        "time-to-target runs stop at it")  # fmt: skip
    parser.add_argument("--only", default="reference,ours,target,step",
                        help="comma list of the row groups to measure: reference (train.py's "
                        "speed), ours (our speed rows), target (time to target), step (gpu_step.py)")  # fmt: skip
    parser.add_argument("--target-map", type=float, default=0.5,
                        help="time to target: the evaluation to reach (--target-metric)")  # fmt: skip
    parser.add_argument("--target-metric", default="map50", choices=("map", "map50"))
    parser.add_argument("--target-epochs", type=int, default=8,
                        help="time to target: the most epochs each side trains")  # fmt: skip
    parser.add_argument("--target-images", type=int, default=512,
                        help="time to target: training images in its learnable fixture")  # fmt: skip
    args = parser.parse_args()
    if args.quick:
        args.images, args.batch, args.big_batch, args.workers, args.log_every = 8, 2, 4, 0, 2
        args.target_images, args.target_epochs = 16, 2
        # untrained detectors keeping every detection score about 0.01 mAP@.5: a toy target
        if args.target_map == 0.5 and args.target_metric == "map50":
            args.target_map = 0.002
        if args.budget_s == 540.0:  # a 2-core CPU takes about 20 minutes for every row
            args.budget_s = 3600.0
    return args


def ours(
    name: str, args: argparse.Namespace, root: Path, options: list[str], batch: int, cache: Path
) -> dict[str, Any]:
    """One whole `python -m trainer` process: its records' windows, memory, FLOP rate, start."""
    out = root / name.replace(" ", "-")
    steps = args.images // batch
    # --quick: fp32 stated, so no precision measurement at start (a script check on a CPU)
    size = ["--min-size", "64", "--max-size", "96", "--amp", "none"] if args.quick else []
    model = ["--model", "retinanet_resnet18_fpn"] if args.quick else []
    peak = ["--peak-tflops", str(args.peak_tflops)] if args.peak_tflops else []
    argv = [
        sys.executable, "-m", "trainer", "--dataset", "coco", "--data-root", str(root / "coco"),
        "--batch-size", str(batch), "--workers", str(args.workers), "--epochs", "1",
        "--max-steps", str(steps), "--log-every", str(args.log_every), "--eval-every", "0",
        "--checkpoint-every", "0", "--resume", "none", "--device", args.device,
        "--output-dir", str(out), "--compile-cache-dir", str(cache), *model, *size, *peak,
        *options,
    ]  # fmt: skip
    started = time.perf_counter()
    first: float | None = None
    records: list[dict[str, Any]] = []
    lines: list[str] = []
    env = trainer_env(threads())
    if args.quick:  # checks the script: compile's wiring without minutes of code generation
        env[COMPILE_ENV] = "eager"
    proc = subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        lines = [*lines[-60:], line]
        if line.startswith('{"kind": "train"'):
            first = first if first is not None else time.perf_counter() - started
            records.append(json.loads(line))
    code = proc.wait()
    wall = time.perf_counter() - started
    if code != 0 or not records:
        raise RuntimeError(f"{name}: exit {code}:\n{''.join(lines)}")
    steady = records[1:] or records  # the first window holds the start and the compile
    rates = [r["images_per_sec"] for r in steady]
    said = [line.strip() for line in lines if line.startswith(("trainer: compile ", "trainer: channels-last "))]  # fmt: skip
    return {
        "name": name, "side": "ours", "argv": argv[3:], "batch": batch,
        "img_per_s": statistics.median(rates), "windows": [min(rates), max(rates)],
        "peak_gb": max(r["peak_memory_mb"] for r in records) / 1024,
        "tflops": _median(steady, "tflops"), "mfu": _median(steady, "mfu"),
        "start_s": first, "first_window_s": records[0]["step_time"] * args.log_every,
        "wall_s": wall, "host_timeline": records[-1].get("host_timeline"),
        "path": json.loads((out / "run.json").read_text()).get("compile"), "said": said,
    }  # fmt: skip


def _median(records: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in records if isinstance(r.get(key), (int, float))]
    return statistics.median(values) if values else None


def reference(args: argparse.Namespace, root: Path) -> dict[str, Any] | None:
    """torchvision's train.py --amp (fp16 autocast; on a CPU without --amp), steady s/it."""
    if args.reference_dir is None:
        return None
    wrapper = root / "reference_wrapper.py"
    wrapper.write_text(WRAPPER, encoding="utf-8")
    # --quick: a model train.py knows (it has no ResNet-18), at our rows' tiny resize, which
    # train.py has no flag for: the wrapper passes it to the builder (REFERENCE_MODEL_KWARGS)
    model = "retinanet_resnet50_fpn" if args.quick else "retinanet_resnet50_fpn_v2"
    env = trainer_env(threads())
    if args.quick:
        env["REFERENCE_MODEL_KWARGS"] = json.dumps({"min_size": 64, "max_size": 96})
    argv = [
        sys.executable, str(wrapper), str(args.reference_dir.resolve()), "--data-path",
        str(root / "coco"), "--dataset", "coco", "--model", model, "--device", args.device,
        "--batch-size", str(args.batch), "--workers", str(args.workers), "--epochs", "1",
        "--print-freq", "1", "--output-dir", str(root / "reference"),
        *(["--amp"] if args.device == "cuda" else []),
    ]  # fmt: skip
    iterations = args.images // args.batch
    run = timed_iterations(
        argv, env, args.reference_dir, REFERENCE_ITERATION, iterations,
        steady_from=min(10, iterations - 2),
    )  # fmt: skip
    memory = REFERENCE_MEMORY.search(run["last_line"].encode())
    return {
        "name": f"torchvision train.py{' --amp' if args.device == 'cuda' else ''} ({model})",
        "side": "reference", "batch": args.batch, "img_per_s": args.batch / run["s_per_it"],
        "windows": None, "peak_gb": int(memory.group(1)) / 1024 if memory else None,
        "tflops": None, "mfu": None, "start_s": run["first_s"], "wall_s": None,
    }  # fmt: skip


def target_figures(args: argparse.Namespace, root: Path, done: Rows) -> dict[str, Any]:
    """Time to --target-map, whole processes, one learnable COCO-format fixture, one recipe
    (benchmarks/fig_target.py): torchvision's train.py (--amp on a GPU), then our shipped
    defaults. --quick: the ResNet-50 train.py knows, at 64/96, keeping every detection."""
    data = root / "target-coco"
    write_learnable_coco(data, args.target_images, 8 if args.quick else 64)
    batch = 4 if args.quick else args.batch
    recipe = Recipe(
        model="retinanet_resnet50_fpn" if args.quick else "retinanet_resnet50_fpn_v2",
        batch=batch, lr=0.02 * batch / 16, epochs=args.target_epochs,
        steps_per_epoch=args.target_images // batch, workers=args.workers, device=args.device,
        size=(64, 96) if args.quick else None, score_thresh=0.0 if args.quick else None,
        ours_extra=["--amp", "none"] if args.quick else [],
    )  # fmt: skip
    if trainer_knows_targets():  # the trainer stops itself and records it too
        recipe.ours_extra += ["--target-map", str(args.target_map), "--target-metric", args.target_metric]  # fmt: skip
    goal = (args.target_map, args.target_metric)
    runs: dict[str, dict[str, Any]] = {}
    if args.reference_dir is not None:
        wrapper = root / "reference_wrapper.py"
        wrapper.write_text(WRAPPER, encoding="utf-8")
        argv = fig_target.reference_argv(sys.executable, wrapper, args.reference_dir, data,
                                         root / "target-reference", recipe, amp=args.device == "cuda")  # fmt: skip
        env = fig_target.reference_env(trainer_env(threads()), recipe)
        runs["reference"] = fig_target.time_to_target(
            argv, env, args.reference_dir, fig_target.ReferenceEvals(), *goal, limit_s=max(done.left_s(), 60)
        )  # fmt: skip
    argv = fig_target.ours_argv(sys.executable, data, root / "target-ours", recipe)
    env = trainer_env(threads())
    runs["ours"] = fig_target.time_to_target(argv, env, REPO, fig_target.parse_ours, *goal,
                                             limit_s=max(done.left_s(), 60))  # fmt: skip
    lines = [fig_target.describe(f"time to target, {side}", run, *goal) for side, run in runs.items()]  # fmt: skip
    lines += fig_target.verdict(runs, TARGET_GOAL, args.target_metric)
    for side, run in runs.items():
        if run["exit"] not in (None, 0):
            lines.append(f"time to target, {side}: its last lines:\n{run['tail']}")
    print("\n".join(lines), flush=True)
    return {"recipe": vars(recipe), "target": args.target_map, "metric": args.target_metric,
            "runs": runs, "lines": lines}  # fmt: skip


def threads() -> int:
    """Threads a side (both alike): OMP_NUM_THREADS where set, else 8."""
    return int(os.environ.get("OMP_NUM_THREADS", "8"))


def trainer_knows_targets() -> bool:
    from dataclasses import fields

    from trainer.config import TrainConfig

    return "target_map" in {f.name for f in fields(TrainConfig)}


def step_benchmark(args: argparse.Namespace, root: Path, cache: Path) -> dict[str, Any] | None:
    """benchmarks/gpu_step.py's compiled rows, batch --batch and --big-batch, warm cache."""
    out = root / "gpu_step.json"
    argv = [
        sys.executable, str(REPO / "benchmarks" / "gpu_step.py"), "--device", args.device,
        "--batch", str(args.batch), "--out", str(out),
        # --quick: its eager rows at a tiny size (compiling the ResNet-50 on a CPU takes long)
        *(["--quick", "--no-compile", "--big-batch", "0"] if args.quick
          else ["--big-batch", str(args.big_batch), "--only-compiled"]),
        *(["--peak-tflops", str(args.peak_tflops)] if args.peak_tflops else []),
    ]  # fmt: skip
    env = {**trainer_env(8), "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
           "TRITON_CACHE_DIR": str(cache / "triton")}  # fmt: skip
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    print(proc.stdout, end="", flush=True)
    if proc.returncode != 0 or not out.is_file():
        raise RuntimeError(f"gpu_step.py: exit {proc.returncode}; its last lines:\n{proc.stderr[-2000:]}")  # fmt: skip
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def step_rows(report: dict[str, Any] | None) -> list[dict[str, Any]]:
    """gpu_step.py's rows in the table's shape, each with its own TFLOP/s and MFU."""
    if not report:
        return []
    per_image, peak = report["flops_per_image"], report.get("peak_tflops")
    rows = []
    for config in report["configs"]:
        tflops = per_image * config["img_per_s"] / 1e12
        batch = int(config["name"].rsplit("batch ", 1)[1]) if "batch " in config["name"] else report["batch"]  # fmt: skip
        rows.append({
            "name": f"gpu_step.py: {config['name']}", "side": "step", "batch": batch,
            "img_per_s": config["img_per_s"], "windows": None, "peak_gb": config["peak_gb"],
            "tflops": tflops, "mfu": tflops / peak if peak else None, "start_s": None,
        })  # fmt: skip
    return rows


def table(rows: list[dict[str, Any]], ref: dict[str, Any] | None) -> str:
    head = f"{'run':58s} {'batch':>5s} {'img/s':>8s} {'windows':>13s} {'x ref':>6s} {'peak GB':>8s} {'TFLOP/s':>8s} {'MFU':>6s} {'start s':>8s}"  # fmt: skip
    out = [head, "-" * len(head)]
    for r in rows:
        windows = f"{r['windows'][0]:.1f}-{r['windows'][1]:.1f}" if r.get("windows") else ""
        ratio = f"{r['img_per_s'] / ref['img_per_s']:.2f}" if ref and r is not ref else ""
        out.append(
            f"{r['name'][:58]:58s} {r['batch']:5d} {r['img_per_s']:8.2f} {windows:>13s} "
            f"{ratio:>6s} {_fmt(r.get('peak_gb'), '.2f'):>8s} {_fmt(r.get('tflops'), '.2f'):>8s} "
            f"{_fmt(r.get('mfu'), '.1%'):>6s} {_fmt(r.get('start_s'), '.1f'):>8s}"
        )
    return "\n".join(out)


def _fmt(value: float | None, spec: str) -> str:
    return "" if value is None else format(value, spec)


def goals(rows: list[dict[str, Any]], ref: dict[str, Any] | None, big_batch: int) -> list[str]:
    """The goals, each met, not met, or not measured (and why)."""
    by_name = {r["name"]: r for r in rows}
    shipped, cold, warm = (by_name.get(n) for n in ("shipped defaults", "best flags, cold cache", "best flags, second start"))  # fmt: skip
    lines = []
    if ref is None or shipped is None:
        lines.append(f"shipped defaults >= {SPEED_GOAL:g}x the reference at no more memory: NOT MEASURED (no reference row: no --reference-dir, or it failed)")  # fmt: skip
    else:
        ratio = shipped["img_per_s"] / ref["img_per_s"]
        memory = ref["peak_gb"] is None or shipped["peak_gb"] <= ref["peak_gb"]
        met = "met" if ratio >= SPEED_GOAL and memory else "NOT met"
        lines.append(
            f"shipped defaults vs reference: {ratio:.2f}x img/s, {shipped['peak_gb']:.2f} vs "
            f"{_fmt(ref['peak_gb'], '.2f') or '?'} GB: goal >= {SPEED_GOAL:g}x at no more memory {met}"
        )
    big = by_name.get(f"best flags, batch {big_batch}")
    if big is None or big.get("mfu") is None:
        lines.append(f"whole trainer at batch {big_batch} >= {MFU_GOAL:.0%} of the bf16 peak: NOT MEASURED (no mfu in the records: no known peak; --peak-tflops)")  # fmt: skip
    else:
        met = "met" if big["mfu"] >= MFU_GOAL else "NOT met"
        lines.append(f"whole trainer at batch {big_batch}: {big['mfu']:.1%} of the bf16 peak: goal >= {MFU_GOAL:.0%} {met}")  # fmt: skip
    if cold and warm and cold.get("start_s") and warm.get("start_s"):
        lines.append(
            f"second start with a warm compile cache: first record after {warm['start_s']:.1f} s "
            f"against {cold['start_s']:.1f} s cold ({cold['start_s'] - warm['start_s']:.1f} s saved)"
        )
    steps = {r["batch"]: r for r in rows if r["side"] == "step" and "ours" in r["name"]}
    for batch, step in sorted(steps.items()):
        mine = next((r for r in rows if r["side"] == "ours" and r["batch"] == batch and r["name"].startswith("best")), None)  # fmt: skip
        if mine:
            lines.append(
                f"batch {batch}: the trainer's records {_fmt(mine.get('tflops'), '.2f')} TFLOP/s "
                f"(mfu {_fmt(mine.get('mfu'), '.1%') or 'n/a'}) against gpu_step.py's "
                f"{step['tflops']:.2f} (mfu {_fmt(step.get('mfu'), '.1%') or 'n/a'}): the whole "
                f"trainer at {mine['img_per_s'] / step['img_per_s']:.0%} of its step"
            )
    return lines


class Rows:
    """The rows measured so far: each measured in turn, a failed one printed with its own last
    lines (the others still measured), none started after the budget; --out rewritten after
    each, so a run stopped from outside keeps what it measured."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args, self.started = args, time.perf_counter()
        self.rows: list[dict[str, Any]] = []
        self.failed: list[str] = []
        self.skipped: list[str] = []
        self.extra: dict[str, Any] = {}

    def left_s(self) -> float:
        return self.args.budget_s - (time.perf_counter() - self.started)

    def measure(self, name: str, run: Callable[[], Any]) -> Any:
        if self.left_s() <= 0:
            self.skipped.append(name)
            print(f"gpu_figures: {name}: NOT MEASURED (past --budget-s {self.args.budget_s:g})", flush=True)  # fmt: skip
            return None
        try:
            result = run()
        except Exception as error:  # a failed side: its own words, then the next row
            self.failed.append(name)
            print(f"gpu_figures: {name}: FAILED: {error}", flush=True)
            self.save()
            return None
        self.save()
        return result

    def save(self) -> None:
        if self.args.out:
            self.args.out.parent.mkdir(parents=True, exist_ok=True)
            document = {"rows": self.rows, **self.extra, "failed": self.failed, "skipped": self.skipped}  # fmt: skip
            self.args.out.write_text(json.dumps(document, indent=2, default=str) + "\n")


def measure_all(args: argparse.Namespace, root: Path, done: Rows) -> dict[str, Any] | None:
    """Every row --only names, most wanted first; the reference's speed row, or None."""
    only = set(args.only.split(","))
    ref = None
    if only & {"reference", "ours"}:
        write_coco_fixture(root / "coco", args.images, portrait_every=0, size=(320, 240))
    if "reference" in only:
        ref = done.measure("reference speed", lambda: reference(args, root))
    if ref:
        done.rows.append(ref)
        print(f"gpu_figures: {ref['name']}: {ref['img_per_s']:.2f} img/s", flush=True)
    cache = root / ".compile-cache"
    plan = [
        ("shipped defaults", [], args.batch, root / ".compile-cache-shipped"),
        ("best flags, cold cache", ["--compile", "on"], args.batch, cache),
        ("best flags, second start", ["--compile", "on"], args.batch, cache),
        (f"best flags, batch {args.big_batch}", ["--compile", "on"], args.big_batch, cache),
    ]
    for name, options, batch, cache_dir in plan if "ours" in only else []:
        row = done.measure(name, lambda: ours(name, args, root, options, batch, cache_dir))  # noqa: B023
        if row:
            done.rows.append(row)
            print(f"gpu_figures: {name}: {row['img_per_s']:.2f} img/s, first record after "
                  f"{row['start_s']:.1f} s; {'; '.join(row['said'])}", flush=True)  # fmt: skip
    if "target" in only:
        done.extra["target"] = done.measure("time to target", lambda: target_figures(args, root, done))  # fmt: skip
    if "step" in only:
        report = done.measure("gpu_step.py", lambda: step_benchmark(args, root, cache))
        done.extra["gpu_step"] = report
        done.rows += step_rows(report)
    done.save()
    return ref


def main() -> int:
    args = parse_args()
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("gpu_figures: no CUDA device is visible; --quick --device cpu checks the script")
            return 2
    done = Rows(args)
    with tempfile.TemporaryDirectory(prefix="gpu-figures-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        ref = measure_all(args, root, done)
    print()
    print(table(done.rows, ref))
    print()
    print("\n".join(goals(done.rows, ref, args.big_batch)))
    if done.extra.get("target"):
        print("\n".join(done.extra["target"]["lines"]))
    for name in done.failed + done.skipped:
        print(f"gpu_figures: {name}: NOT MEASURED ({'failed, above' if name in done.failed else 'out of time'})")  # fmt: skip
    print(f"gpu_figures: {time.perf_counter() - done.started:.0f} s in all")
    return 1 if done.failed else 0


if __name__ == "__main__":
    sys.exit(main())
