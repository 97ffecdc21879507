"""--amp auto (the default): which autocast precision a run trains in, decided once at start.

- CUDA: bf16 where the GPU supports it (no scaler), else fp16 with a gradient scaler: the field's
  default for detection training.
- CPU without native bf16 (none of the flags in NATIVE_BF16_FLAGS in /proc/cpuinfo, e.g. an
  AVX2-only EPYC): fp32 at once. There bf16 is emulated: 9.6-12.6 s a step against 0.9-1.1 s in
  fp32 for retinanet-local's trainer words, about 11x, so timing it would only cost time.
- CPU with native bf16 (AVX-512 BF16, AMX, Arm BF16), or flags that cannot be read: no guess
  from the flags alone (the same build gave bf16 2.4x on one such machine and 0.76x on another):
  a few forward and backward passes of this model on a batch of the run's size, in fp32 and in
  bf16 alternately, and the faster is kept. fp16 is emulated on CPUs and never faster.
- A resumed run keeps the choice its checkpoint was trained with, so the steps continue alike.

The measurement leaves the model as it found it (weights, BatchNorm statistics, gradients and the
random generators), and every rank uses rank 0's choice.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from trainer import test_hooks
from trainer.distributed import DistContext, broadcast_object

TRIALS = 2  # timed passes per precision, after one untimed pass each
CPUINFO = Path("/proc/cpuinfo")
# x86's AVX-512 BF16 and AMX (the `flags` line), Arm's BF16 (the `Features` line): oneDNN's bf16
# kernels run natively on any of them; without, they are emulated.
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")


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
    choice = cpu_choice(model, batch, size, ctx.device) if ctx.is_main else None
    chosen: AmpChoice = broadcast_object(ctx, choice)
    return chosen


def cpu_choice(
    model: nn.Module,
    batch: int,
    size: tuple[int, int],
    device: torch.device,
) -> AmpChoice:
    """fp32 at once where the CPU has no native bf16; else the faster of the two, measured."""
    native = cpu_native_bf16(read_cpu_flags(test_hooks.cpuinfo(CPUINFO)))
    if not native.measure:
        return AmpChoice("none", f"--amp auto on CPU: fp32, {native.why}")
    times = measure_cpu(model, batch, size, device)
    faster = "bf16" if times["bf16"] < times["none"] else "none"
    return AmpChoice(
        faster,
        f"--amp auto on CPU: measured {TRIALS} steps each at batch {batch}, "
        f"{size[0]}x{size[1]}: fp32 {times['none']:.3f} s, bf16 {times['bf16']:.3f} s "
        f"a step; {'bf16' if faster == 'bf16' else 'fp32'} is faster ({native.why})",
    )


@dataclass(frozen=True)
class NativeBf16:
    measure: bool  # time fp32 against bf16 (True), or train in fp32 with no trial step
    why: str


def read_cpu_flags(path: Path = CPUINFO) -> frozenset[str] | None:
    """The first processor's feature flags (x86 `flags`, Arm `Features`); None where the file
    cannot be read or holds neither line (not Linux, a sandbox without /proc)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return None


def cpu_native_bf16(flags: frozenset[str] | None) -> NativeBf16:
    """Whether --amp auto times bf16 on this CPU: only where it runs natively, or where the
    flags are unknown (then the measurement decides, as it would anyway)."""
    if flags is None:
        return NativeBf16(True, "the CPU's flags could not be read, so both were timed")
    native = [flag for flag in NATIVE_BF16_FLAGS if flag in flags]
    if native:
        return NativeBf16(True, f"the CPU has native bf16: {', '.join(native)}")
    return NativeBf16(
        False,
        f"the CPU has no native bf16 (none of {', '.join(NATIVE_BF16_FLAGS)} in its flags), "
        "so bf16 would be emulated, about 11x an fp32 step; no trial steps",
    )


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
