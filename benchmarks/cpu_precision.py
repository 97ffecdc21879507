#!/usr/bin/env python3
"""What bf16 buys on this CPU, and what limits it: our eager step in fp32, bf16 autocast and bf16
channels-last under torch.profiler, its CPU time grouped by kind of op.

    python -m benchmarks.cpu_precision [--size 320] [--batch 2] [--threads 1] [--steps 2]

The model, loss and batch are benchmarks/gpu_step.py's (the trainer's RetinaNet v2, 91 classes,
the batched loss), on the CPU. A group that is no faster in bf16 is where the gain stops:
convolutions are oneDNN's kernel choice, `cast and layout copies` are the weights cast to bf16
at every use and the reorders between layouts, `norm` is BatchNorm and GroupNorm.

Figures are CPU seconds of this process (`time.process_time`), steadier than wall time on a
shared machine; each group's seconds are its share of one profiled step times that. One thread
by default: with two OpenMP threads on a loaded 2-core machine, a thread whose twin is
descheduled spins at the barrier, and a step's time swung 20x between runs here.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.gpu_step import make_model, synthetic_batch
from trainer.model import enable_channels_last

GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("convolution forward", ("mkldnn_convolution", "onednn_convolution", "_convolution", "conv2d")),
    ("convolution backward", ("convolution_backward",)),
    ("cast and layout copies", ("copy_", "_to_copy", "to_dense", "contiguous", "clone", "reorder")),
    ("norm", ("batch_norm", "group_norm")),
    ("loss", ("sigmoid", "softplus", "index", "nonzero", "where", "max", "pad_sequence")),
    ("optimizer", ("sgd", "_foreach")),
)


def group_of(name: str) -> str:
    for group, needles in GROUPS:
        if any(needle in name for needle in needles):
            return group
    return "other (elementwise, pooling, resize, ...)"


def timed(step: Callable[[], None], steps: int) -> float:
    """CPU seconds of this process per step."""
    start = time.process_time()
    for _ in range(steps):
        step()
    return (time.process_time() - start) / steps


def shares(step: Callable[[], None]) -> dict[str, float]:
    """Each group's share of one profiled step's op time."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    groups: dict[str, float] = defaultdict(float)
    for event in prof.key_averages():
        groups[group_of(event.key)] += event.self_cpu_time_total
    total = sum(groups.values()) or 1.0
    return {group: value / total for group, value in groups.items()}


def train_step(
    args: argparse.Namespace, images: list, targets: list, dtype: torch.dtype | None,
    channels_last: bool,
) -> Callable[[], None]:  # fmt: skip
    """One training step of a fresh model, after a warm-up step (oneDNN picks its kernels)."""
    model = make_model("ours", args, torch.device("cpu"))
    if channels_last:
        enable_channels_last(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)

    def step() -> None:
        with torch.autocast("cpu", dtype=dtype or torch.float32, enabled=dtype is not None):
            losses = model(images, targets)
        sum(v.float() for v in losses.values()).backward()  # type: ignore[union-attr]
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step()
    return step


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=320, help="--min-size (and max size x4/3)")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=2, help="timed steps per setting")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    args.min_size, args.max_size = args.size, args.size * 4 // 3
    device = torch.device("cpu")
    images, targets = synthetic_batch(args.batch, args.size, args.size * 4 // 3, device)
    settings = (("fp32", None, False), ("bf16", torch.bfloat16, False),
                ("fp32 channels-last", None, True), ("bf16 channels-last", torch.bfloat16, True))  # fmt: skip
    cpu: dict[str, float] = {}
    table: dict[str, dict[str, float]] = {}
    for name, dtype, channels_last in settings:
        step = train_step(args, images, targets, dtype, channels_last)
        cpu[name] = timed(step, args.steps)
        table[name] = {group: share * cpu[name] for group, share in shares(step).items()}
        print(f"  {name:20s} {cpu[name]:.2f} CPU-s a step", flush=True)
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), batch {args.batch} at "
        f"{args.size}x{args.size * 4 // 3}; CPU seconds a step, by kind of op:"
    )
    names = [name for name, _, _ in settings]
    print(f"{'':42s}" + "".join(f"{name:>20s}" for name in names))
    groups = sorted({g for t in table.values() for g in t}, key=lambda g: -table["fp32"].get(g, 0))
    for group in groups:
        print(f"{group:42s}" + "".join(f"{table[name].get(group, 0.0):20.2f}" for name in names))
    print(f"{'a step':42s}" + "".join(f"{cpu[name]:20.2f}" for name in names))
    print(f"{'against fp32':42s}" + "".join(f"{cpu['fp32'] / cpu[name]:19.2f}x" for name in names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
