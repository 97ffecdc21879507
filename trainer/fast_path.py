"""--channels-last auto and --compile auto (the defaults): whether a run takes each, and why.

Pure arithmetic on what is known before the first step (the device, the run's planned images,
the resize, whether the compile cache is warm), with every figure named: no torch and no import
here, so `runai-tui plan` and the submit form decide with this very file
(runai_tui/trainer_flags/fast_path.py is a link to it, which the wheel carries).

- channels-last: on with CUDA (cuDNN's bf16 and fp16 convolutions run NHWC natively; on an
  H200 it gave 1.21x in bf16). On a CPU it follows the precision: oneDNN's bf16 convolutions
  reorder every NCHW tensor, so channels-last is faster there, while in fp32 it measured slower
  (docs/performance.md, "The fast path by default").
- compile: on when the run's planned images repay the compile time: the seconds torch.compile
  saves per image (measured eager against compiled, scaled by the resized image's pixels) times
  the images each process trains on must exceed the compile time, the cold one or, with a warm
  on-disk cache, the warm one.
"""

from __future__ import annotations

from typing import NamedTuple

SWITCH_CHOICES = ("auto", "on", "off")

# Whole trainer on one H200, bf16, batch 8 at 800x1066 (the synthetic COCO-style fixture):
# 89.6 img/s eager as shipped before these defaults, median 109 img/s with --channels-last
# --compile; the compile took about 110 s of a 157 s run.
GPU_EAGER_IMAGES_PER_SEC = 89.6
GPU_COMPILED_IMAGES_PER_SEC = 109.0
GPU_COLD_COMPILE_SECONDS = 110.0
GPU_REFERENCE_PIXELS = 800 * 1066
# A warm cache (FX graphs, autotuning, Triton kernels on disk) leaves the load of the compiled
# artifacts and dynamo's tracing: the CPU measured its second start at this share of its first
# compile (docs/performance.md); the GPU's is not yet measured (benchmarks/gpu_figures.py).
WARM_COMPILE_SHARE = 0.25

# Step time of channels-last over NCHW on a CPU (ResNet-18 at 64x85, batch 2, forward and
# backward, 2-core AVX2 machine, docs/performance.md): slower in fp32, faster in bf16.
CPU_FP32_CHANNELS_LAST = 1.10
CPU_BF16_CHANNELS_LAST = 0.65

# The same on this project's 2-core AVX2 CPU, by CPU time: the v2 ResNet-50 at 800x1066, fp32,
# batch 2, took 43.3 CPU-s a step eager and 35.2 compiled; compiling its one shape took about
# 2.3 minutes (benchmarks/fig_trainer.py, docs/performance.md).
CPU_EAGER_SECONDS_PER_IMAGE = 43.3 / 2
CPU_COMPILED_SECONDS_PER_IMAGE = 35.2 / 2
CPU_COLD_COMPILE_SECONDS = 138.0
CPU_REFERENCE_PIXELS = 800 * 1066


class PathChoice(NamedTuple):
    on: bool
    why: str

    @property
    def value(self) -> str:
        return "on" if self.on else "off"


def channels_last_choice(asked: str, device_type: str, amp: str | None) -> PathChoice:
    """--channels-last: `asked` is auto, on or off; `device_type` cuda or cpu; `amp` the
    precision the run trains in (none, fp16, bf16), None where not known yet (--amp auto on a
    CPU, measured at start)."""
    if asked != "auto":
        return PathChoice(asked == "on", f"--channels-last {asked}")
    if device_type == "cuda":
        return PathChoice(True, "auto: cuDNN's convolutions are faster in channels-last")
    if amp is None:
        return PathChoice(False, "auto on a CPU: on with bf16, off with fp32 (measured at start)")
    if amp == "bf16":
        return PathChoice(
            True, f"auto: on a CPU in bf16, {CPU_BF16_CHANNELS_LAST:.2f}x the NCHW step time"
        )
    return PathChoice(
        False,
        f"auto: on a CPU in {'fp32' if amp == 'none' else amp}, channels-last took "
        f"{CPU_FP32_CHANNELS_LAST:.2f}x the NCHW step time",
    )


def compile_seconds_saved(device_type: str, images: int, height: int, width: int) -> float:
    """Seconds torch.compile saves over `images` images resized to height x width."""
    if device_type == "cuda":
        per_image = 1 / GPU_EAGER_IMAGES_PER_SEC - 1 / GPU_COMPILED_IMAGES_PER_SEC
        reference = GPU_REFERENCE_PIXELS
    else:
        per_image = CPU_EAGER_SECONDS_PER_IMAGE - CPU_COMPILED_SECONDS_PER_IMAGE
        reference = CPU_REFERENCE_PIXELS
    return images * per_image * height * width / reference


def compile_cost_seconds(device_type: str, warm_cache: bool) -> float:
    """The compile time a run pays at start: cold, or the share a warm cache leaves."""
    cold = GPU_COLD_COMPILE_SECONDS if device_type == "cuda" else CPU_COLD_COMPILE_SECONDS
    return cold * WARM_COMPILE_SHARE if warm_cache else cold


def compile_choice(
    asked: str, device_type: str, images: int, height: int, width: int, warm_cache: bool
) -> PathChoice:
    """--compile: `images` is what each process will train on (remaining steps x batch size),
    height x width the resized image; `warm_cache` whether the compile cache holds anything."""
    if asked != "auto":
        return PathChoice(asked == "on", f"--compile {asked}")
    saved = compile_seconds_saved(device_type, images, height, width)
    cost = compile_cost_seconds(device_type, warm_cache)
    cache = "warm" if warm_cache else "cold"
    figures = (
        f"{images:,} images at {height}x{width} save about {saved:,.0f} s against about "
        f"{cost:,.0f} s to compile with a {cache} cache"
    )
    if saved > cost:
        return PathChoice(True, f"auto: {figures}")
    return PathChoice(False, f"auto: too short to repay it: {figures}")
