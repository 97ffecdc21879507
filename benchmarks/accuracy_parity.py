#!/usr/bin/env python3
"""Accuracy parity: does the default (fast) path learn what the reference numerics learn?

Two sides, whole `python -m trainer` processes, on the same learnable data (the trainer's
synthetic set: class-coloured rectangles on noise), the same seeds, the same steps and recipe,
scored by COCO mAP through pycocotools (the trainer's own evaluation):

- fast: the default path (batched focal loss, channels-last and compile as `auto` decides, the
  non-finite guard, fused optimizers on CUDA); on a CPU with `--amp bf16` forced, so that bf16's
  numerics are exercised where `auto` would pick fp32; on a GPU its auto precision (bf16), and
  `--compile on` with --compile;
- reference: `--loss torchvision --amp none --channels-last off --compile off` (eager fp32,
  torchvision's per-image loss loop). The non-finite guard is on for both, and on CUDA both use
  the fused optimizer (the trainer has no switch for it).

For each seed and side: the final mAP and mAP@.5; per side the mean, the sample standard
deviation and the range (min-max: the seed spread); and the gap between the loss curves (the
trainer's per-step loss, mean over seeds, fast minus reference). The goal: the fast side's mean
mAP within the reference's seed spread (at or above its lowest seed) and never more than 1 mAP
point (0.01) below the reference's mean. --ablate then runs the reference with one part of the
fast path turned on at a time (the culprit hunt when parity fails).

    python benchmarks/accuracy_parity.py                     # CPU: ResNet-18, 128 px, 3 seeds
    python benchmarks/accuracy_parity.py --device cuda --compile   # v2 ResNet-50, 800 px
    python benchmarks/accuracy_parity.py --quick             # checks the script: a toy size

Runs go one at a time, the sides alternating within each seed, so a change of load over the
bench falls on both.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
REFERENCE = ["--loss", "torchvision", "--amp", "none", "--channels-last", "off", "--compile", "off"]  # fmt: skip
# --ablate: the reference with one part of the fast path on
PARTS = {
    "batched loss": ["--loss", "batched"],
    "bf16": ["--amp", "bf16"],
    "channels-last": ["--channels-last", "on"],
    "compile": ["--compile", "on"],
}
GAP_GOAL = 0.01  # one mAP point


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--seeds", type=int, default=3, help="seeds a side (0..N-1)")
    parser.add_argument("--steps", type=int, default=None, help="optimizer steps a run")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--images", type=int, default=None, help="synthetic training images")
    parser.add_argument("--val-images", type=int, default=None, help="synthetic validation images")
    parser.add_argument("--size", type=int, default=None, help="--min-size and --max-size")
    parser.add_argument("--model", default=None)
    parser.add_argument("--lr", type=float, default=None, help="AdamW's rate at --batch")
    parser.add_argument("--compile", action="store_true", help="fast side: --compile on")
    parser.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS a run")
    parser.add_argument("--ablate", action="store_true",
                        help="also the reference with each part of the fast path on, one at a time")  # fmt: skip
    parser.add_argument("--sides", default=None,
                        help="comma list: run only these sides (e.g. the --ablate ones, to set "
                        "beside an earlier run's fast and reference)")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="a toy size: checks the script")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    cuda = args.device == "cuda"
    defaults: dict[str, Any] = {  # CPU: minutes on 2 cores; GPU: the real model and size
        "steps": 300 if cuda else 60, "batch": 8 if cuda else 4, "images": 512 if cuda else 240,
        "val_images": 64 if cuda else 24, "size": 800 if cuda else 128,
        "model": "retinanet_resnet50_fpn_v2" if cuda else "retinanet_resnet18_fpn",
        "lr": 2e-4 if cuda else 3e-4, "threads": 8 if cuda else 1,
    }  # fmt: skip
    if args.quick:
        defaults.update(steps=4, batch=2, images=8, val_images=4, size=64, seeds=1)
        args.seeds = min(args.seeds, 2)
    for key, value in defaults.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    return args


def sides(args: argparse.Namespace) -> dict[str, list[str]]:
    """Each side's own flags (on top of the common ones)."""
    fast = ["--amp", "bf16"] if args.device == "cpu" else []
    if args.compile:
        fast += ["--compile", "on"]
    plan = {"fast": fast, "reference": REFERENCE}
    if args.ablate:
        for part, flags in PARTS.items():
            if part == "compile" and not args.compile:
                continue
            plan[f"reference + {part}"] = [*REFERENCE, *flags]
    if args.sides:
        wanted = [side.strip() for side in args.sides.split(",")]
        if unknown := [side for side in wanted if side not in plan]:
            raise SystemExit(f"accuracy_parity: --sides {', '.join(unknown)}: not one of {', '.join(plan)}")  # fmt: skip
        plan = {side: plan[side] for side in wanted}
    return plan


def run_one(args: argparse.Namespace, out: Path, seed: int, flags: list[str]) -> dict[str, Any]:
    """One whole trainer process; its per-step losses, final evaluation and what it chose."""
    epochs = math.ceil(args.steps * args.batch / args.images)
    argv = [
        sys.executable, "-m", "trainer", "--dataset", "synthetic",
        "--synthetic-train-images", str(args.images), "--synthetic-val-images", str(args.val_images),
        "--model", args.model, "--min-size", str(args.size), "--max-size", str(args.size),
        "--batch-size", str(args.batch), "--workers", "0", "--device", args.device,
        "--epochs", str(epochs), "--max-steps", str(args.steps), "--optimizer", "adamw",
        "--lr", str(args.lr), "--lr-base-batch", str(args.batch),
        "--warmup-steps", str(max(1, args.steps // 10)), "--score-thresh", "0",
        "--log-every", "1", "--eval-every", str(epochs), "--checkpoint-every", "0",
        "--resume", "none", "--seed", str(seed), "--output-dir", str(out), *flags,
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "PYTHONUNBUFFERED": "1"}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    records = _records(out / "metrics.jsonl")
    evals = [r for r in records if r.get("kind") == "eval"]
    if proc.returncode != 0 or not evals:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise RuntimeError(f"trainer exit {proc.returncode}, seed {seed}, {flags}; its last lines:\n{tail}")  # fmt: skip
    train = [r for r in records if r.get("kind") == "train"]
    said = [line for line in proc.stdout.splitlines()
            if line.startswith(("trainer: precision", "trainer: channels-last", "trainer: compile "))]  # fmt: skip
    return {
        "seed": seed, "map": evals[-1]["map"], "map50": evals[-1]["map50"], "wall_s": wall,
        "losses": {r["step"]: r["loss"] for r in train},
        "skipped_images": sum(int(r.get("skipped_images", 0)) for r in train), "said": said,
    }  # fmt: skip


def _records(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    return [json.loads(line) for line in lines if line.startswith("{")]


def spread(values: list[float]) -> dict[str, float]:
    return {
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
    }


def loss_gap(fast: list[dict[str, Any]], ref: list[dict[str, Any]]) -> dict[str, float]:
    """The per-step loss, mean over seeds, fast minus reference, over the steps both logged."""
    steps = sorted(set.intersection(*(set(r["losses"]) for r in [*fast, *ref])))
    if not steps:
        return {}

    def curve(runs: list[dict[str, Any]]) -> list[float]:
        return [statistics.fmean(r["losses"][s] for r in runs) for s in steps]

    a, b = curve(fast), curve(ref)
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    tail = max(1, len(steps) // 4)  # the last quarter: where the curves have settled
    return {
        "mean_abs": statistics.fmean(abs(d) for d in diffs),
        "max_abs": max(abs(d) for d in diffs),
        "mean_rel": statistics.fmean(
            abs(d) / max(abs(y), 1e-9) for d, y in zip(diffs, b, strict=True)
        ),  # fmt: skip
        "last_quarter_mean": statistics.fmean(diffs[-tail:]),
        "fast_last_quarter": statistics.fmean(a[-tail:]),
        "reference_last_quarter": statistics.fmean(b[-tail:]),
        "steps": len(steps),
    }


def verdict(fast: dict[str, float], ref: dict[str, float]) -> tuple[bool, str]:
    """The goal: fast's mean mAP at or above the reference's lowest seed, and no more than one
    mAP point below the reference's mean."""
    within = fast["mean"] >= ref["min"]
    close = fast["mean"] >= ref["mean"] - GAP_GOAL
    where = "above" if fast["mean"] > ref["max"] else "within" if within else "below"
    text = (
        f"fast mean mAP {fast['mean']:.4f} {where} the reference's seed spread "
        f"[{ref['min']:.4f}, {ref['max']:.4f}], {100 * (fast['mean'] - ref['mean']):+.2f} mAP "
        f"points from its mean {ref['mean']:.4f}: parity {'met' if within and close else 'NOT met'}"
    )
    return within and close, text


def report(args: argparse.Namespace, results: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The table, the loss-curve gap and the verdict, printed; the same as a document."""
    print(f"\n{'side':28s} {'seed':>4s} {'mAP':>7s} {'mAP50':>7s} {'wall s':>7s} {'skipped':>7s}")
    for side, runs in results.items():
        for r in runs:
            print(f"{side:28s} {r['seed']:4d} {r['map']:7.4f} {r['map50']:7.4f} {r['wall_s']:7.0f} {r['skipped_images']:7d}")  # fmt: skip
    print(f"\n{'side':28s} {'mean mAP':>9s} {'std':>7s} {'range':>15s} {'mean mAP50':>10s} {'std':>7s}")  # fmt: skip
    stats: dict[str, Any] = {}
    for side, runs in results.items():
        m, m50 = spread([r["map"] for r in runs]), spread([r["map50"] for r in runs])
        stats[side] = {"map": m, "map50": m50}
        print(f"{side:28s} {m['mean']:9.4f} {m['std']:7.4f} {m['min']:7.4f}-{m['max']:.4f} {m50['mean']:10.4f} {m50['std']:7.4f}")  # fmt: skip
    document: dict[str, Any] = {"stats": stats, "gaps": {}}
    for side, runs in results.items():
        if side == "reference" or "reference" not in results:
            continue
        gap = loss_gap(runs, results["reference"])
        document["gaps"][side] = gap
        if gap:
            print(f"loss gap, {side} - reference: mean |gap| {gap['mean_abs']:.4f} ({100 * gap['mean_rel']:.1f}%), "
                  f"max {gap['max_abs']:.4f}, last quarter {gap['last_quarter_mean']:+.4f} "
                  f"({gap['fast_last_quarter']:.4f} vs {gap['reference_last_quarter']:.4f}) over {gap['steps']} steps")  # fmt: skip
    if "fast" in stats and "reference" in stats:
        met, text = verdict(stats["fast"]["map"], stats["reference"]["map"])
        print(text)
        document.update(met=met, verdict=text)
    return document


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plan = sides(args)
    results: dict[str, list[dict[str, Any]]] = {side: [] for side in plan}
    started = time.perf_counter()
    print(f"accuracy_parity: {args.model} at {args.size} px on {args.device}, batch {args.batch}, "
          f"{args.steps} steps, {args.images} images, {args.seeds} seed(s) a side; "
          + "; ".join(f"{side}: {' '.join(flags) or 'shipped defaults'}" for side, flags in plan.items()),
          flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="accuracy-parity-") as tmp:
        for seed in range(args.seeds):
            for side, flags in plan.items():
                out = Path(tmp) / f"{side.replace(' ', '-')}-{seed}"
                try:
                    run = run_one(args, out, seed, flags)
                except RuntimeError as error:
                    print(f"accuracy_parity: {side}: {error}", file=sys.stderr)
                    return 1
                results[side].append(run)
                print(f"accuracy_parity: {side} seed {seed}: mAP {run['map']:.4f}, mAP50 "
                      f"{run['map50']:.4f}, {run['wall_s']:.0f} s; {' | '.join(run['said'])}", flush=True)  # fmt: skip
    document = report(args, results)
    total = time.perf_counter() - started
    print(f"accuracy_parity: {total:.0f} s in all")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        document.update(args={k: str(v) for k, v in vars(args).items()}, runs=results, wall_s=total)  # fmt: skip
        args.out.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
