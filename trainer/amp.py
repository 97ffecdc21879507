"""--amp auto (the default): which autocast precision a run trains in, decided once at start.

- CUDA: bf16 where the GPU supports it (no scaler), else fp16 with a gradient scaler: the field's
  default for detection training.
- CPU: no guess from the CPU flags (the same build gave bf16 2.4x on one machine and 0.76x on
  another): a few forward and backward passes of this model on a batch of the run's size, in fp32
  and in bf16 alternately, and the faster is kept. fp16 is emulated on CPUs and never faster.
- A resumed run keeps the choice its checkpoint was trained with, so the steps continue alike.

The measurement leaves the model as it found it (weights, BatchNorm statistics, gradients and the
random generators), and every rank uses rank 0's choice.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from trainer.distributed import DistContext, broadcast_object

TRIALS = 2  # timed passes per precision, after one untimed pass each


@dataclass(frozen=True)
class AmpChoice:
    amp: str  # none, fp16 or bf16
    why: str


def choose_amp(
    asked: str,
    ctx: DistContext,
    model: nn.Module,
    batch: int,
    size: tuple[int, int],
    resumed: str | None,
    log: Callable[[str], None],
) -> AmpChoice:
    """The precision to train in. `resumed` is the amp a checkpoint was trained with (None for
    a fresh run); `size` the (height, width) the model's transform resizes images to."""
    if asked != "auto":
        return AmpChoice(asked, f"--amp {asked}")
    if resumed in ("none", "fp16", "bf16"):
        return AmpChoice(resumed, f"--amp auto: kept from the checkpoint ({resumed})")
    if ctx.device.type == "cuda":
        if torch.cuda.is_bf16_supported():
            name = torch.cuda.get_device_name(ctx.device)
            return AmpChoice("bf16", f"--amp auto: {name} supports bf16")
        return AmpChoice("fp16", "--amp auto: this GPU has no bf16; fp16 with a gradient scaler")
    choice = None
    if ctx.is_main:
        times = measure_cpu(model, batch, size, ctx.device)
        faster = "bf16" if times["bf16"] < times["none"] else "none"
        choice = AmpChoice(
            faster,
            f"--amp auto on CPU: measured {TRIALS} steps each at batch {batch}, "
            f"{size[0]}x{size[1]}: fp32 {times['none']:.3f} s, bf16 {times['bf16']:.3f} s "
            f"a step; {'bf16' if faster == 'bf16' else 'fp32'} is faster",
        )
    chosen: AmpChoice = broadcast_object(ctx, choice)
    return chosen


def measure_cpu(
    model: nn.Module, batch: int, size: tuple[int, int], device: torch.device
) -> dict[str, float]:
    """Median seconds of a forward and backward pass in fp32 ("none") and bf16, alternating."""
    saved = copy.deepcopy(model.state_dict())
    was_training = model.training
    model.train()
    height, width = size
    times: dict[str, list[float]] = {"none": [], "bf16": []}
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        images = [torch.rand(3, height, width, device=device) for _ in range(batch)]
        box = torch.tensor([[0.1 * width, 0.1 * height, 0.6 * width, 0.7 * height]], device=device)
        targets = [{"boxes": box, "labels": torch.ones(1, dtype=torch.int64, device=device)}]
        targets = targets * batch
        for trial in range(TRIALS + 1):
            for amp in ("none", "bf16"):
                start = time.perf_counter()
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp == "bf16"):
                    losses = model(images, targets)
                sum(loss.float() for loss in losses.values()).backward()
                if trial:  # the first pass of each warms up
                    times[amp].append(time.perf_counter() - start)
                model.zero_grad(set_to_none=True)
    model.load_state_dict(saved)
    model.train(was_training)
    return {amp: sorted(values)[len(values) // 2] for amp, values in times.items()}
