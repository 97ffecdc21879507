"""The model's FLOPs per training image (trainer/flops.py): counted on real models, growing with
the padded area, leaving the model as it was; the records' meter; the chip peaks by name."""

from __future__ import annotations

import torch

from trainer.config import parse_config
from trainer.flops import FlopMeter, Peak, chip_peak, count_train_flops, datasheet_peak
from trainer.model import build_model

CPU = torch.device("cpu")


def small_model(size: int) -> torch.nn.Module:
    cfg = parse_config(
        ["--model", "retinanet_resnet18_fpn", "--min-size", str(size), "--max-size", str(size)]
    )
    return build_model(cfg, 4)


def test_the_count_is_positive_grows_with_the_area_and_leaves_the_model_as_it_was() -> None:
    model = small_model(64)
    before = {k: v.clone() for k, v in model.state_dict().items()}  # BN running stats included
    rng = torch.get_rng_state()
    small = count_train_flops(model, 64, 64, "l1")
    assert (small.height, small.width) == (64, 64) and small.per_image > 1e9
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())
    assert torch.equal(rng, torch.get_rng_state())  # the transform's draw came from a fork

    big = count_train_flops(small_model(128), 128, 128, "l1")
    # Four times the pixels: convolutions, head and loss all grow with the area. Not exactly
    # 4x: the P6/P7 maps round up from 1x1 to 2x2.
    ratio = big.per_image / small.per_image
    assert 3.6 < ratio < 4.4, ratio
    assert abs(big.per_pixel / small.per_pixel - 1) < 0.1


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
