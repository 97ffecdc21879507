"""How much of the chip a run uses: the model's FLOPs per training image, counted once at start
(torch.utils.flop_counter), and the chip's datasheet bf16 peak, for each record's `tflops` (the
model's achieved TFLOP/s) and `mfu` (that over the peak). nvidia-smi's "utilization: 100%" says a
kernel was running; this says how much arithmetic the kernels did.

benchmarks/gpu_step.py counts and looks up its peak through these same functions.
"""

from __future__ import annotations

import copy
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from trainer.loss import BatchedRetinaNetLoss

# Dense (no structured sparsity) bf16 tensor-core peaks in TFLOP/s, by CUDA device name, from the
# vendor datasheets: NVIDIA H100 Tensor Core GPU datasheet (SXM 989, PCIe 756, NVL 835), NVIDIA
# H200 Tensor Core GPU datasheet (SXM 989, NVL 835), NVIDIA GH200 Grace Hopper Superchip
# datasheet (989), NVIDIA A100 Tensor Core GPU datasheet (312, SXM and PCIe), NVIDIA L40S
# datasheet (362), NVIDIA L40 datasheet (181), NVIDIA L4 datasheet (121), NVIDIA A10 datasheet
# (125). The datasheets print the sparse figure first; these are half of it. First match wins,
# so the specific names come before the family's.
PEAK_BF16_TFLOPS: tuple[tuple[str, str, float], ...] = (
    (r"\bGH200\b", "GH200", 989.0),
    (r"\bH200\b.*\bNVL\b", "H200 NVL", 835.0),
    (r"\bH200\b", "H200 SXM", 989.0),
    (r"\bH100\b.*\bPCIe\b", "H100 PCIe", 756.0),
    (r"\bH100\b.*\bNVL\b", "H100 NVL", 835.0),
    (r"\bH100\b", "H100 SXM", 989.0),
    (r"\bA100\b", "A100", 312.0),
    (r"\bL40S\b", "L40S", 362.0),
    (r"\bL40\b", "L40", 181.0),
    (r"\bL4\b", "L4", 121.0),
    (r"\bA10\b", "A10", 125.0),
)


@dataclass(frozen=True)
class Peak:
    tflops: float
    source: str  # "--peak-tflops", or "datasheet: <part> (<device name>)"


def datasheet_peak(device_name: str) -> Peak | None:
    """The datasheet dense bf16 peak of a CUDA device by its name, None when not in the table."""
    for pattern, part, tflops in PEAK_BF16_TFLOPS:
        if re.search(pattern, device_name, re.IGNORECASE):
            return Peak(tflops, f"datasheet: {part} ({device_name})")
    return None


def chip_peak(asked: float | None, device: torch.device) -> Peak | None:
    """--peak-tflops when given, else the datasheet's for this CUDA device; a CPU has none."""
    if asked:
        return Peak(asked, "--peak-tflops")
    if device.type != "cuda":
        return None
    return datasheet_peak(torch.cuda.get_device_name(device))


@dataclass(frozen=True)
class FlopCount:
    """Forward+backward FLOPs of one training image padded to height x width."""

    per_image: float
    height: int
    width: int
    seconds: float  # what counting took

    @property
    def per_pixel(self) -> float:
        return self.per_image / (self.height * self.width)


def count_train_flops(
    model: nn.Module,
    height: int,
    width: int,
    batched_loss: str | None,
    log: Callable[[str], None] | None = None,
) -> FlopCount:
    """Count one training step's model FLOPs (forward and backward) for one image of
    height x width, padded as the model's transform pads it.

    Counted on the meta device (shapes, no data), so it takes about a second on a CPU and no
    memory on the model's device: a copy of the transform, backbone (with its FPN) and head
    whose weights are meta tensors with the same requires_grad (a frozen layer gets no
    weight-gradient FLOPs, as in a real backward), run forward and backward from the sum of the
    head's outputs. The loss is left out: its matching and focal terms are elementwise work the
    counter does not count (the full count, loss included, came out equal for ResNet-18 and
    ResNet-50 v2 at 64x64 and 128x160: docs/performance.md). Should an op have no meta kernel,
    the full count of a real training step (`count_real_train_flops`) is taken instead, said in
    one line through `log` (stderr when None).

    `model` is left as it was: no weights copied, no gradients, no BatchNorm running-stat
    update, and the global RNG (the transform draws its resize from it) is restored. Pass the
    eager module, before torch.compile and DDP wrap it. `batched_loss` ("l1" or "giou") is only
    used by the real count: the trainer's batched loss of that box loss; None: the model's own."""
    started = time.perf_counter()
    try:
        per_image, h, w = _count_on_meta(model, height, width)
    except Exception as exc:  # noqa: BLE001 -- any op without a meta kernel: count for real
        (log or _stderr)(
            f"model FLOPs: the meta-device count failed ({type(exc).__name__}: {exc}); "
            "counting one real training step instead"
        )
        return count_real_train_flops(model, height, width, batched_loss)
    return FlopCount(per_image, h, w, time.perf_counter() - started)


def _stderr(message: str) -> None:
    print(f"trainer: {message}", file=sys.stderr, flush=True)


def _count_on_meta(model: nn.Module, height: int, width: int) -> tuple[float, int, int]:
    """(FLOPs, padded height, padded width) of the dense part's forward and backward."""
    meta = torch.device("meta")
    # deepcopy's memo maps each weight and buffer to a meta twin, so nothing is copied but the
    # modules' structure (hooks included: channels-last's pre-hook runs on the copy too).
    memo: dict[int, Any] = {}
    for param in model.parameters():
        memo[id(param)] = nn.Parameter(
            torch.empty_like(param, device=meta), requires_grad=param.requires_grad
        )
    for buffer in model.buffers():
        memo[id(buffer)] = torch.empty_like(buffer, device=meta)
    parts: Any = model
    transform, backbone, head = copy.deepcopy((parts.transform, parts.backbone, parts.head), memo)
    for part in (transform, backbone, head):
        part.train()
    counter = FlopCounterMode(display=False)
    with torch.random.fork_rng(devices=[]), counter:
        batch, _ = transform([torch.empty(3, height, width, device=meta)])
        features = list(backbone(batch.tensors).values())
        outputs = head(features)
        sum(out.float().sum() for out in outputs.values()).backward()
    h, w = batch.tensors.shape[-2:]
    return float(counter.get_total_flops()), int(h), int(w)


def count_real_train_flops(
    model: nn.Module, height: int, width: int, batched_loss: str | None
) -> FlopCount:
    """Count one real training step's FLOPs (forward, loss, backward) on one synthetic image of
    height x width with 8 boxes, on `model`'s device, in fp32 (FLOPs are the same in any
    precision): `count_train_flops`'s fallback, and the reference its meta count is tested
    against. Seconds on a CPU, and a full copy of the model on its device.

    On a deep copy, so `model` is left as it was, as in `count_train_flops`."""
    started = time.perf_counter()
    device = next(model.parameters()).device
    counted: Any = copy.deepcopy(model).train()  # a RetinaNet: its transform, head and loss
    if batched_loss is not None:
        counted.loss_fn = BatchedRetinaNetLoss(counted, batched_loss)
    padded: list[tuple[int, int]] = []
    hook = counted.transform.register_forward_hook(
        lambda _m, _a, out: padded.append(tuple(out[0].tensors.shape[-2:]))
    )
    image, target = _one_image(height, width, device, counted)
    counter = FlopCounterMode(display=False)
    forked = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=forked), counter:
        losses = counted([image], [target])
        sum(v.float() for v in losses.values()).backward()
    hook.remove()
    del counted, losses
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)  # the records' peak memory is training's
    h, w = padded[0] if padded else (height, width)
    return FlopCount(float(counter.get_total_flops()), h, w, time.perf_counter() - started)


def _one_image(
    height: int, width: int, device: torch.device, model: Any
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(0)
    image = torch.rand(3, height, width, generator=gen)
    xy = torch.rand(8, 2, generator=gen) * torch.tensor([width * 0.7, height * 0.7])
    wh = 4 + torch.rand(8, 2, generator=gen) * torch.tensor([width * 0.3, height * 0.3])
    classes = int(getattr(model.head.classification_head, "num_classes", 2))
    target = {
        "boxes": torch.cat([xy, xy + wh], dim=1).to(device),
        "labels": torch.full((8,), min(1, classes - 1), dtype=torch.int64, device=device),
    }
    return image.to(device), target


class FlopMeter:
    """The model's FLOPs as it trains: each training batch's padded pixels (a hook on the model's
    transform, which pads the batch) times the count's FLOPs per pixel. Convolutions, the head
    and the loss's per-anchor work all grow linearly with the padded area, so a batch padded to
    another shape than the counted one is still counted right, at the cost of a shape read."""

    def __init__(self, count: FlopCount, peak: Peak | None, model: nn.Module) -> None:
        self.count = count
        self.peak = peak
        self._seen: list[tuple[float, int]] = []  # (when, padded pixels) per training batch
        transform = getattr(model, "transform", None)
        if isinstance(transform, nn.Module):
            transform.register_forward_hook(self._batch)

    def _batch(self, module: nn.Module, _args: object, out: Any) -> None:
        if module.training:
            n, _c, h, w = out[0].tensors.shape
            self._seen.append((time.perf_counter(), n * h * w))

    def flops_since(self, started: float, images: int) -> float:
        """FLOPs of the training batches since `started` (perf_counter seconds); forgets every
        batch seen so far. `images`: this rank's images in that time, used as images at the
        counted shape where no batch was seen (a model without a transform)."""
        pixels = sum(p for when, p in self._seen if when >= started)
        self._seen.clear()
        return pixels * self.count.per_pixel if pixels else images * self.count.per_image

    def run_info(self) -> dict[str, object]:
        """What run.json records."""
        return {
            "per_image": self.count.per_image,
            "counted_shape": [self.count.height, self.count.width],
            "count_seconds": round(self.count.seconds, 3),
            "peak_tflops": self.peak.tflops if self.peak else None,
            "peak_source": self.peak.source if self.peak else None,
        }
