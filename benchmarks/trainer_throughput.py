#!/usr/bin/env python3
"""Trainer throughput on synthetic data: the speed options on vs off, side by side, in one run.

Runs the real trainer (``python -m trainer``, or torchrun with --nproc > 1) twice on the same
synthetic data (by default written once as 1024-px JPEG files, so decoding costs what it costs
with Open Images photos) and configuration, reads each run's metrics.jsonl, drops the warm-up steps, and
prints images/s, step time and data time for both and their ratio.

    python benchmarks/trainer_throughput.py                          # default model, auto device
    python benchmarks/trainer_throughput.py --model retinanet_resnet18_fpn --min-size 256 --steps 15
    python benchmarks/trainer_throughput.py --nproc 2 -- --sync-bn    # extra trainer flags after --

"On" means: loader workers with pinned memory and prefetch, JPEG draft decoding, channels-last,
and bf16 autocast on CUDA (on CPU bf16 is emulated and slower, so it is left out unless --amp-on-cpu).
"Off" is the plain configuration: no workers, no pinning, full decode, NCHW, fp32.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="retinanet_resnet50_fpn_v2")
    parser.add_argument("--min-size", type=int, default=320)
    parser.add_argument("--max-size", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=2, help="per process")
    parser.add_argument("--steps", type=int, default=20, help="measured steps per configuration")
    parser.add_argument("--warmup", type=int, default=5, help="steps excluded from the figures")
    parser.add_argument(
        "--jpeg-size",
        type=int,
        default=1024,
        help="synthetic images as JPEG files of this shorter side, decoded like photos "
        "(0: rendered in memory, no decode cost)",
    )
    parser.add_argument("--nproc", type=int, default=1, help="processes (torchrun when > 1)")
    parser.add_argument("--workers", type=int, default=2, help="loader processes when 'on'")
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="OMP_NUM_THREADS per process (default: the environment's, else 1)",
    )
    parser.add_argument("--amp-on-cpu", action="store_true", help="include bf16 in 'on' on CPU")
    parser.add_argument("extra", nargs="*", help="more trainer flags for both runs (after --)")
    return parser.parse_args()


def device_is_cuda(choice: str) -> bool:
    if choice != "auto":
        return choice == "cuda"
    import torch

    return torch.cuda.is_available()


def run(name: str, options: list[str], args: argparse.Namespace, out_dir: Path) -> dict:
    total = args.steps + args.warmup
    trainer_args = [
        "--dataset", "synthetic", "--synthetic-train-images", str(max(64, 4 * total * args.batch_size * args.nproc)),
        "--model", args.model, "--min-size", str(args.min_size), "--max-size", str(args.max_size),
        "--batch-size", str(args.batch_size), "--max-steps", str(total), "--epochs", "1000",
        "--log-every", "1", "--eval-every", "0", "--checkpoint-every", "0", "--resume", "none",
        "--device", args.device, "--output-dir", str(out_dir), "--synthetic-jpeg-size",
        str(args.jpeg_size), "--index-cache", str(out_dir.parent / "cache"), *options, *args.extra,
    ]  # fmt: skip
    if args.nproc > 1:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", str(args.nproc), "-m", "trainer", *trainer_args]  # fmt: skip
    else:
        cmd = [sys.executable, "-m", "trainer", *trainer_args]
    print(f"[{name}] {' '.join(options)}", flush=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env.get('PYTHONPATH', '')}"
    # Oversubscribed OpenMP threads on a busy CPU cost more than they give (4x slower here).
    if args.threads is not None:
        env["OMP_NUM_THREADS"] = str(args.threads)
    else:
        env.setdefault("OMP_NUM_THREADS", "1")
    result = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"[{name}] trainer failed ({result.returncode}):\n{result.stderr[-3000:]}")
    records = [json.loads(x) for x in (out_dir / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r["kind"] == "train"][args.warmup :]
    step_time = statistics.mean(r["step_time"] for r in train)
    return {
        "images_per_sec": args.batch_size * args.nproc / step_time,
        "step_time": step_time,
        "step_time_median": statistics.median(r["step_time"] for r in train),
        "data_time": statistics.mean(r["data_time"] for r in train),
        "steps": len(train),
    }


def decode_times(cache: Path, args: argparse.Namespace, count: int = 20) -> dict:
    """The decode step alone, full size vs DCT-scaled, on the benchmark's own JPEG files."""
    import time

    sys.path.insert(0, str(REPO))
    from PIL import Image

    from trainer.data.transforms import decode_image, resized_size

    files = sorted(cache.glob("synthetic-*/synthetic-train-*.jpg"))[:count]
    totals = {"full_ms": 0.0, "draft_ms": 0.0}
    for path in files:
        with Image.open(path) as img:
            width, height = img.size
        draft = resized_size(height, width, args.min_size, args.max_size)
        for key, size in (("full_ms", None), ("draft_ms", draft)):
            start = time.perf_counter()
            decode_image(str(path), size)
            totals[key] += (time.perf_counter() - start) * 1000
    return {k: v / max(len(files), 1) for k, v in totals.items()}


def main() -> int:
    args = parse_args()
    cuda = device_is_cuda(args.device)
    on = [
        "--workers", str(args.workers), "--pin-memory", "--fast-decode", "--channels-last",
        "--prefetch-factor", "4", "--no-compile",
    ]  # fmt: skip
    if cuda or args.amp_on_cpu:
        on += ["--amp", "bf16"]
    off = [
        "--workers",
        "0",
        "--no-pin-memory",
        "--no-fast-decode",
        "--no-channels-last",
        "--no-compile",
        "--amp",
        "none",
    ]
    with tempfile.TemporaryDirectory(prefix="trainer-bench-") as tmp:
        results = {
            "off": run("off", off, args, Path(tmp) / "off"),
            "on": run("on", on, args, Path(tmp) / "on"),
        }
        decode = decode_times(Path(tmp) / "cache", args) if args.jpeg_size else None
    device = "cuda" if cuda else "cpu"
    print(
        f"\n{args.model}, {args.min_size}-{args.max_size}px, batch {args.batch_size} x "
        f"{args.nproc} process(es) on {device}, {args.steps} measured steps after {args.warmup}, "
        f"{f'{args.jpeg_size}-px JPEG files' if args.jpeg_size else 'in-memory images'}"
    )
    print(f"{'':6}{'images/s':>10}{'step s (mean)':>15}{'step s (median)':>17}{'data s':>9}")
    for name in ("off", "on"):
        r = results[name]
        print(
            f"{name:6}{r['images_per_sec']:>10.2f}{r['step_time']:>15.3f}"
            f"{r['step_time_median']:>17.3f}{r['data_time']:>9.4f}"
        )
    ratio = results["on"]["images_per_sec"] / results["off"]["images_per_sec"]
    print(f"ratio on/off (images/s): {ratio:.2f}x")
    if decode:
        print(
            f"JPEG decode per image, main process: full {decode['full_ms']:.1f} ms, "
            f"--fast-decode {decode['draft_ms']:.1f} ms ({decode['full_ms'] / decode['draft_ms']:.1f}x)"
        )
    print(json.dumps({"device": device, "ratio": round(ratio, 3), "decode": decode, **results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
