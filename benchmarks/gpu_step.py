#!/usr/bin/env python3
"""The trainer's step on one GPU against torchvision's reference step, in one run (under 5
minutes on an H200): s/it, img/s and peak memory, the model's FLOPs per step and their share of
the chip's bf16 peak, the top GPU kernels, and the loss alone at batch 2, 8 and 32.

Both sides train `retinanet_resnet50_fpn_v2` with a 91-class head from the same seed on the same
synthetic batch (random images, 8 boxes each, resized by the model to --min-size/--max-size):

- reference: torchvision's model and per-image loss, SGD, fp32 or fp16 autocast with a gradient
  scaler (what references/detection/train.py does with and without --amp);
- ours: the trainer's model (trainer/model.py) with its batched loss (trainer/loss.py), fused
  SGD, fp32 or bf16 autocast, channels-last, and with --compile the backbone, FPN, head and
  the loss's per-class pass compiled (torch.compile, in place: the batch shape is fixed here,
  so one graph each).

    python benchmarks/gpu_step.py [--batch 8] [--steps 15] [--no-compile] [--out FILE]
    python benchmarks/gpu_step.py --quick --device cpu     # checks the script, not speed

Self-contained: needs torch and torchvision and this repository's trainer/ (no data, no network).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from trainer.config import parse_config  # noqa: E402
from trainer.flops import FlopCount, chip_peak, count_train_flops  # noqa: E402
from trainer.loss import BatchedRetinaNetLoss, box_loss_type  # noqa: E402
from trainer.model import build_model, enable_channels_last  # noqa: E402

CLASSES = 91  # COCO's head, as the reference trains it
# What an 8192^3 bf16 matrix product measured on this workplace's H200s (769-798 TFLOP/s): the
# practical peak the goal of a quarter of the chip is read against. On a GPU the script measures
# its own (`matmul_tflops`).
MEASURED_BF16_MATMUL = 790.0


def matmul_tflops(device: torch.device, n: int = 8192, repeat: int = 20) -> float:
    """What a bf16 n x n x n matrix product reaches on this device, TFLOP/s."""
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    sync(device)
    start = time.perf_counter()
    for _ in range(repeat):
        a @ b
    sync(device)
    return 2 * n**3 * repeat / (time.perf_counter() - start) / 1e12


def synthetic_batch(batch: int, height: int, width: int, device: torch.device, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    images = [torch.rand(3, height, width, generator=gen).to(device) for _ in range(batch)]
    targets = []
    for _ in range(batch):
        xy = torch.rand(8, 2, generator=gen) * torch.tensor([width * 0.7, height * 0.7])
        wh = 16 + torch.rand(8, 2, generator=gen) * torch.tensor([width * 0.3, height * 0.3])
        targets.append(
            {
                "boxes": torch.cat([xy, xy + wh], dim=1).to(device),
                "labels": torch.randint(1, CLASSES, (8,), generator=gen).to(device),
            }
        )
    return images, targets


def make_model(
    side: str, args: argparse.Namespace, device: torch.device, compile_: bool = False
) -> torch.nn.Module:
    torch.manual_seed(0)
    if side == "reference":
        from torchvision.models.detection import retinanet_resnet50_fpn_v2

        model = retinanet_resnet50_fpn_v2(
            weights=None, weights_backbone=None, num_classes=CLASSES,
            min_size=args.min_size, max_size=args.max_size,
        )  # fmt: skip
    else:
        cfg = parse_config(["--min-size", str(args.min_size), "--max-size", str(args.max_size)])
        model = build_model(cfg, CLASSES)
        model.compute_loss = BatchedRetinaNetLoss(
            model, box_loss_type(cfg.model), "inductor" if compile_ else None
        )  # compiled, its per-class pass, as the trainer's --compile does
    return model.to(device).train()


def run_config(
    name: str, side: str, precision: str, channels_last: bool, compile_: bool,
    args: argparse.Namespace, device: torch.device, batch: tuple, profile_steps: int = 0,
) -> dict[str, Any]:  # fmt: skip
    model = make_model(side, args, device, compile_)
    if device.type == "cuda":
        # Each side as it ships: the trainer turns the cuDNN autotuner on for CUDA (its padded
        # shapes are bucketed), torchvision's reference leaves it off.
        torch.backends.cudnn.benchmark = side == "ours"
    if channels_last:
        enable_channels_last(model)
    compile_s = 0.0
    if compile_:
        model.backbone.compile(mode=args.compile_mode)
        model.head.compile(mode=args.compile_mode)
    fused = {"fused": True} if device.type == "cuda" and side == "ours" else {}
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9, **fused)
    dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    scaler = torch.amp.GradScaler(device.type) if precision == "fp16" else None
    images, targets = batch
    unread: list[tuple[torch.Tensor, torch.cuda.Event | None]] = []

    def step() -> None:
        with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            losses = model(images, targets)
        loss = sum(v.float() for v in losses.values())
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        # Each side reads its loss as it ships: torchvision's reference engine reads every
        # step's loss at once (`.item()`, a wait for the device); the trainer one step late
        # from pinned memory behind an event (trainer/engine.py), so the host runs ahead.
        if side == "reference":
            float(loss.detach())
            return
        host = torch.empty((), pin_memory=device.type == "cuda")
        host.copy_(loss.detach(), non_blocking=True)
        ready = torch.cuda.Event() if device.type == "cuda" else None
        if ready is not None:
            ready.record()
        if unread:
            previous, previous_ready = unread.pop()
            if previous_ready is not None:
                previous_ready.synchronize()
            float(previous)
        unread.append((host, ready))

    def window(steps: int) -> float:
        """Seconds per step over `steps` steps, the device drained at both ends."""
        sync(device)
        start = time.perf_counter()
        for _ in range(steps):
            step()
        unread.clear()
        sync(device)
        return (time.perf_counter() - start) / steps

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    first = window(1)  # compiles when compiled
    if compile_:
        compile_s = first
    if args.warmup:
        window(args.warmup)
    seconds = statistics.median(window(args.steps) for _ in range(3))
    peak = torch.cuda.max_memory_allocated(device) / 1e9 if device.type == "cuda" else None
    result = {
        "name": name, "side": side, "precision": precision, "channels_last": channels_last,
        "compile": compile_, "s_per_it": seconds, "img_per_s": len(images) / seconds,
        "peak_gb": peak, "first_step_s": first, "compile_s": compile_s if compile_ else None,
        "batch": len(images),
    }  # fmt: skip
    if profile_steps:
        result["profile"] = profile_table(window, profile_steps, args.top, device)
    print(
        f"  {name:34s} {seconds:.4f} s/it  {len(images) / seconds:7.1f} img/s  "
        + (f"{peak:6.1f} GB" if peak is not None else "")
        + (f"  (first step {first:.1f} s: compile)" if compile_ else ""),
        flush=True,
    )
    return result


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def count_flops(
    args: argparse.Namespace, device: torch.device, height: int, width: int
) -> FlopCount:
    """Our model's forward and backward FLOPs per training image: the trainer's own count
    (trainer/flops.py), so the MFU here and the one in the trainer's records are the same sum."""
    model = make_model("ours", args, device)
    return count_train_flops(model, height, width, box_loss_type("retinanet_resnet50_fpn_v2"))


def profile_table(
    window: Callable[[int], float], steps: int, top: int, device: torch.device
) -> dict[str, Any]:
    """`steps` steps under torch.profiler: the top kernels, and how much of the wall time the
    GPU was busy (the sum of its kernels' time; low means the host, not the chip, sets the pace)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities, record_shapes=True) as prof:
        wall = window(steps) * steps
    averages = prof.key_averages()
    # Which copies and elementwise ops (the memory-bound share) come from which tensors.
    by_shape = [
        e for e in prof.key_averages(group_by_input_shape=True)
        if e.key in ("aten::copy_", "aten::mul", "aten::add", "aten::add_", "aten::where")
    ]  # fmt: skip
    by_shape.sort(key=lambda e: -getattr(e, "self_device_time_total", 0.0))
    shapes = [
        f"{e.key} x{e.count}: {getattr(e, 'self_device_time_total', 0.0) / 1e3:.2f} ms on the "
        f"device, shapes {str(e.input_shapes)[:120]}"
        for e in by_shape[:12]
    ]
    busy_us = sum(
        getattr(e, "self_device_time_total", 0.0) for e in averages
        if str(getattr(e, "device_type", "")).endswith("CUDA")
    )  # fmt: skip
    table = "(no profiler table)"
    for key in ("self_device_time_total", "self_cuda_time_total", "self_cpu_time_total"):
        try:
            table = str(averages.table(sort_by=key, row_limit=top))
            break
        except (AttributeError, KeyError, RuntimeError):
            continue
    return {"wall_s": wall, "gpu_busy_s": busy_us / 1e6, "table": table, "by_shape": shapes}


def top_kernels(args: argparse.Namespace, device: torch.device, batch: tuple) -> str:
    """The profiler's table of the GPU kernels of 3 steps of ours, bf16 channels-last eager."""
    from torch.profiler import ProfilerActivity, profile

    model = make_model("ours", args, device)
    enable_channels_last(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
    images, targets = batch
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])

    def step() -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            losses = model(images, targets)
        sum(v.float() for v in losses.values()).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step()
    sync(device)
    with profile(activities=activities) as prof:
        for _ in range(3):
            step()
        sync(device)
    averages = prof.key_averages()
    for key in ("self_device_time_total", "self_cuda_time_total", "self_cpu_time_total"):
        try:
            return str(averages.table(sort_by=key, row_limit=args.top))
        except (AttributeError, KeyError, RuntimeError):
            continue
    return "(no profiler table)"


def loss_alone(device: torch.device, batches: tuple[int, ...], repeat: int) -> dict[int, dict]:
    """The batched loss + backward against torchvision's per-image loss on this device."""
    from benchmarks.fig_loss import _inputs

    results: dict[int, dict] = {}
    for batch in batches:
        model, targets, head, anchors = _inputs(batch, 320, seed=batch)
        targets = [{k: v.to(device) for k, v in t.items()} for t in targets]
        head = {k: v.to(device) for k, v in head.items()}
        anchors = [a.to(device) for a in anchors]
        ours = BatchedRetinaNetLoss(model, "l1")
        times: dict[str, list[float]] = {"ours": [], "torchvision": []}
        for trial in range(repeat + 1):
            for side, compute in (("ours", ours), ("torchvision", model.compute_loss)):
                inputs = {k: v.clone().requires_grad_(True) for k, v in head.items()}
                sync(device)
                start = time.perf_counter()
                sum(compute(targets, inputs, anchors).values()).backward()
                sync(device)
                if trial:
                    times[side].append(time.perf_counter() - start)
        ours_s, theirs_s = statistics.median(times["ours"]), statistics.median(times["torchvision"])
        results[batch] = {"ours": ours_s, "torchvision": theirs_s, "ratio": ours_s / theirs_s}
        print(
            f"  loss alone, batch {batch:2d}: ours {ours_s * 1000:8.2f} ms, torchvision "
            f"{theirs_s * 1000:8.2f} ms ({theirs_s / ours_s:.2f}x faster)",
            flush=True,
        )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--min-size", type=int, default=800)
    parser.add_argument("--max-size", type=int, default=1333)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per configuration")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps after the first")
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument(
        "--compile-mode", default=None,
        help="torch.compile's mode for the compiled rows (e.g. reduce-overhead: CUDA graphs)",
    )  # fmt: skip
    parser.add_argument(
        "--only-compiled", action="store_true",
        help="time only our compiled rows (no reference, no eager rows, no loss or kernel tables)",
    )  # fmt: skip
    parser.add_argument(
        "--big-batch", type=int, default=16,
        help="also time the compiled configuration at this batch (0: not)",
    )  # fmt: skip
    parser.add_argument("--top", type=int, default=15, help="kernels in the profiler table")
    parser.add_argument(
        "--peak-tflops", type=float, default=None,
        help="the chip's dense bf16 peak (default: trainer/flops.py's datasheet table)",
    )  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the script")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    if args.quick:
        args.batch, args.min_size, args.max_size, args.steps, args.warmup = 2, 128, 160, 2, 0
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("gpu_step: no CUDA device is visible; use --device cpu --quick to check the script")
        return 2
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    chip = chip_peak(args.peak_tflops, device)  # the trainer's datasheet table, or the flag
    peak = chip.tflops if chip else None
    height, width = args.min_size, min(args.max_size, args.min_size * 4 // 3)
    batch = synthetic_batch(args.batch, height, width, device)
    print(
        f"gpu_step: {name}, torch {torch.__version__}, batch {args.batch} at {height}x{width} "
        f"(resized to --min-size {args.min_size} --max-size {args.max_size}), {CLASSES}-class "
        f"head, the median of 3 windows of {args.steps} steps",
        flush=True,
    )
    configs = [
        ("reference fp32", "reference", "fp32", False, False),
        ("reference fp16 autocast (--amp)", "reference", "fp16", False, False),
        ("ours fp32", "ours", "fp32", False, False),
        ("ours bf16", "ours", "bf16", False, False),
        ("ours bf16 channels-last", "ours", "bf16", True, False),
    ]
    if args.compile:
        mode = f" ({args.compile_mode})" if args.compile_mode else ""
        configs.append((f"ours bf16 channels-last compile{mode}", "ours", "bf16", True, True))
    if args.only_compiled:
        configs = [config for config in configs if config[4]]
    batches = {config[0]: batch for config in configs}
    if args.compile and args.big_batch:
        big = f"ours bf16 channels-last compile, batch {args.big_batch}"
        configs.append((big, "ours", "bf16", True, True))
        batches[big] = synthetic_batch(args.big_batch, height, width, device, seed=1)
    results = []
    for config in configs:
        try:  # one configuration that fails (out of memory, a compiler error) leaves the others
            results.append(
                run_config(
                    *config,
                    args=args,
                    device=device,
                    batch=batches[config[0]],
                    profile_steps=3 if config[4] else 0,
                )  # fmt: skip
            )
        except Exception as exc:  # noqa: BLE001
            print(f"  {config[0]}: failed: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    count = count_flops(args, device, height, width)
    per_image = count.per_image  # the model's FLOPs grow with the batch, image by image
    flops = per_image * args.batch
    best = max((r for r in results if r["side"] == "ours"), key=lambda r: r["img_per_s"])
    ref_best = max(
        (r for r in results if r["side"] == "reference"), key=lambda r: r["img_per_s"],
        default=None,
    )  # fmt: skip
    achieved = per_image * best["img_per_s"] / 1e12
    practical = matmul_tflops(device) if device.type == "cuda" else MEASURED_BF16_MATMUL
    print(
        f"model FLOPs per step (fwd+bwd, ours, batch {args.batch}): {flops / 1e12:.2f} TFLOP "
        f"({per_image / 1e9:.1f} GFLOP per image at the padded {count.height}x{count.width})"
        + (f"; peak {peak:g} TFLOP/s ({chip.source})" if chip else "")
    )
    print(
        f"best ours: {best['name']}, {achieved:.1f} TFLOP/s"
        + (f" = {achieved / peak:.1%} of {peak:.0f} TFLOP/s bf16 peak" if peak else "")
        + f" ({achieved / practical:.1%} of the {practical:.0f} TFLOP/s a bf16 8192^3 matrix "
        + (
            "product reaches on this chip)"
            if device.type == "cuda"
            else "product reaches on an H200)"
        )
    )
    if ref_best:
        print(
            f"best ours / best reference: {best['img_per_s'] / ref_best['img_per_s']:.2f}x img/s "
            f"({best['name']} vs {ref_best['name']})"
        )
    for r in results:
        if "profile" in r:
            prof = r.pop("profile")
            print(
                f"{r['name']}: the GPU busy {prof['gpu_busy_s'] * 1e3:.0f} ms of "
                f"{prof['wall_s'] * 1e3:.0f} ms wall over 3 steps "
                f"({prof['gpu_busy_s'] / prof['wall_s']:.0%}); top kernels:"
            )
            print(prof["table"])
            print("\n".join(prof["by_shape"]))
            r["gpu_busy_share"] = prof["gpu_busy_s"] / prof["wall_s"]
            r["top_kernels"] = prof["table"]
            r["by_shape"] = prof["by_shape"]
    losses: dict[int, dict] = {}
    table = ""
    if not args.only_compiled:
        losses = loss_alone(device, (2, 8, 32), repeat=3 if args.quick else 10)
        table = top_kernels(args, device, batch)
        print("top kernels (ours, bf16 channels-last, eager, 3 steps):")
        print(table)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        report = {
            "device": name, "torch": torch.__version__, "batch": args.batch,
            "size": [height, width], "configs": results, "flops_per_step": flops,
            "best": best["name"], "tflops": achieved, "peak_tflops": peak,
            "peak_source": chip.source if chip else None, "flops_per_image": per_image,
            "counted_shape": [count.height, count.width],
            "matmul_tflops": practical,
            "speedup_vs_reference": best["img_per_s"] / ref_best["img_per_s"] if ref_best else None,
            "loss_alone": losses, "top_kernels": table,
        }  # fmt: skip
        args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
