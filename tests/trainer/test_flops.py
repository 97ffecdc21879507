"""The model's FLOPs per training image (trainer/flops.py): counted on the meta device from real
models, within a stated tolerance of a real training step's count, growing with the padded area,
leaving frozen weights out of the backward, leaving the model as it was; the fallback to the real
count; the records' meter; the chip peaks by name."""

from __future__ import annotations

import pytest
import torch

from trainer.config import parse_config
from trainer.flops import FlopMeter, Peak, chip_peak, count_train_flops, datasheet_peak
from trainer.model import build_model

pytestmark = pytest.mark.slow  # trains or runs the real model

CPU = torch.device("cpu")


def small_model(size: int, *extra: str) -> torch.nn.Module:
    cfg = parse_config(
        ["--model", "retinanet_resnet18_fpn", "--min-size", str(size), "--max-size", str(size)]
        + list(extra)
    )
    return build_model(cfg, 4)


def state_of(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}  # BN running stats included


def as_it_was(model: torch.nn.Module, before: dict[str, torch.Tensor]) -> bool:
    after = model.state_dict()
    return all(torch.equal(before[k], v) and v.device == CPU for k, v in after.items()) and all(
        p.grad is None for p in model.parameters()
    )


def test_the_count_is_positive_grows_with_the_area_and_leaves_the_model_as_it_was() -> None:
    model = small_model(64)
    before = state_of(model)
    rng = torch.get_rng_state()
    small = count_train_flops(model, 64, 64, "l1")
    assert (small.height, small.width) == (64, 64) and small.per_image > 1e9
    assert as_it_was(model, before)
    assert torch.equal(rng, torch.get_rng_state())  # the transform's draw came from a fork

    big = count_train_flops(small_model(128), 128, 128, "l1")
    # Four times the pixels: convolutions, head and loss all grow with the area. Not exactly
    # 4x: the P6/P7 maps round up from 1x1 to 2x2.
    ratio = big.per_image / small.per_image
    assert 3.6 < ratio < 4.4, ratio
    assert abs(big.per_pixel / small.per_pixel - 1) < 0.1


def test_the_meta_count_is_within_a_percent_of_a_real_training_steps_and_falls_back_to_it() -> None:
    # Three backbone layers trainable, two frozen: the real backward skips the frozen weights'
    # gradients, and so must the meta one.
    model = small_model(64, "--trainable-backbone-layers", "3")
    meta = count_train_flops(model, 64, 64, "l1")

    # A check that reads the head's output (data, which a meta tensor has none of) makes the
    # meta count fail: the count is then one real training step, loss included, said in a line.
    def finite_check(_module: object, _args: object, out: dict[str, torch.Tensor]) -> None:
        if not out["cls_logits"].isfinite().all():
            raise ValueError("non-finite logits")

    check = model.head.register_forward_hook(finite_check)
    before, rng, lines = state_of(model), torch.get_rng_state(), []
    real = count_train_flops(model, 64, 64, "l1", log=lines.append)
    check.remove()
    assert len(lines) == 1 and "meta-device count failed" in lines[0], lines
    assert as_it_was(model, before) and torch.equal(rng, torch.get_rng_state())
    assert (real.height, real.width) == (meta.height, meta.width) == (64, 64)
    # The loss the meta count leaves out is elementwise work the counter does not count: the two
    # agreed exactly here; 1% leaves room for a loss that one day does a matmul.
    assert abs(meta.per_image / real.per_image - 1) < 0.01, (meta.per_image, real.per_image)


def test_frozen_weights_get_no_gradient_flops() -> None:
    def count(trainable: str) -> float:
        model = small_model(64, "--trainable-backbone-layers", trainable)
        return count_train_flops(model, 64, 64, None).per_image

    # A frozen layer drops its weight gradients and, below the first trainable layer, its input
    # gradients (ResNet-18 at 64x64: 3.14 GFLOP with the body frozen, 3.72 with none): the meta
    # copy kept the flags. The real count agrees with three layers trainable (the test above).
    assert count("0") < 0.9 * count("5")


def test_the_meter_counts_each_training_batch_by_its_padded_area() -> None:
    model = small_model(64)
    count = count_train_flops(model, 64, 64, None)
    meter = FlopMeter(count, None, model)
    start = 0.0
    model.train()
    # The 64x96 image is resized to 43x64 (--max-size 64), and the batch padded to 64x64.
    images = [torch.rand(3, 64, 96), torch.rand(3, 64, 64)]
    targets = [{"boxes": torch.tensor([[2.0, 2.0, 30.0, 30.0]]), "labels": torch.tensor([1])}] * 2
    with torch.no_grad():
        model(images, targets)
    assert meter.flops_since(start, images=2) == 2 * 64 * 64 * count.per_pixel
    assert meter.flops_since(start, images=3) == 3 * count.per_image  # none seen: at the count's
    model.eval()
    with torch.no_grad():
        model(images)  # evaluation is not training: not counted
    assert meter.flops_since(start, images=0) == 0.0
    info = meter.run_info()
    assert info["counted_shape"] == [64, 64] and info["peak_tflops"] is None


def test_peaks_by_device_name() -> None:
    def part(name: str) -> str | None:
        peak = datasheet_peak(name)
        return None if peak is None else f"{peak.source.split(' (')[0]} {peak.tflops:g}"

    assert part("NVIDIA H100 80GB HBM3") == "datasheet: H100 SXM 989"
    assert part("NVIDIA H100 PCIe") == "datasheet: H100 PCIe 756"
    assert part("NVIDIA H200") == "datasheet: H200 SXM 989"
    assert part("NVIDIA GH200 480GB") == "datasheet: GH200 989"
    assert part("NVIDIA A100-SXM4-80GB") == "datasheet: A100 312"
    assert part("NVIDIA A10") == "datasheet: A10 125"
    assert part("NVIDIA L40S") == "datasheet: L40S 362"
    assert part("NVIDIA L4") == "datasheet: L4 121"
    assert part("Tesla V100-SXM2-16GB") is None  # no bf16 tensor cores
    assert chip_peak(None, CPU) is None
    assert chip_peak(1.5, CPU) == Peak(1.5, "--peak-tflops")
