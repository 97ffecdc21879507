"""Figure `loss`: the trainer's batched RetinaNet loss (trainer/loss.py) against torchvision's
per-image `RetinaNet.compute_loss`, measured alone on CPU.

Each side computes the loss and its backward pass (what a training step runs) on the same
inputs: a 91-class head's outputs over the anchors of a 320 x 320 batch (19,206 anchors an
image, from the model's own anchor generator), 8 random boxes an image, at batch 2, 8 and 32.
The two sides alternate (interleaved, medians), one intra-op thread. The figure is batch 8's
time ratio, ours / torchvision's (target <= 1); batches 2 and 32 are extra rows.

    python -m benchmarks.fig_loss [--repeat 5] [--quick]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from benchmarks.harness import Figure, interleave, median

NAME = "loss"
TITLE = "RetinaNet loss, fwd+bwd (batched vs torchvision per-image)"
BATCHES = (2, 8, 32)
SIZE = 320
CLASSES = 91
BOXES = 8


def _inputs(batch: int, size: int, seed: int) -> tuple[Any, list[dict], dict, list]:
    import torch
    from torchvision.models.detection import RetinaNet
    from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
    from torchvision.models.detection.image_list import ImageList
    from torchvision.ops.feature_pyramid_network import LastLevelP6P7

    backbone = resnet_fpn_backbone(
        backbone_name="resnet18", weights=None, returned_layers=[2, 3, 4],
        extra_blocks=LastLevelP6P7(256, 256),
    )  # fmt: skip
    model = RetinaNet(backbone, CLASSES, min_size=size, max_size=size)
    gen = torch.Generator().manual_seed(seed)
    # The anchors of a size x size batch, from the model's own generator and feature strides.
    strides = (8, 16, 32, 64, 128)
    features = [torch.zeros(batch, 256, -(-size // s), -(-size // s)) for s in strides]
    images = ImageList(torch.zeros(batch, 3, size, size), [(size, size)] * batch)
    anchors = model.anchor_generator(images, features)
    count = anchors[0].shape[0]
    targets = []
    for _ in range(batch):
        xy = torch.rand(BOXES, 2, generator=gen) * size * 0.7
        wh = 8 + torch.rand(BOXES, 2, generator=gen) * size * 0.3
        targets.append(
            {
                "boxes": torch.cat([xy, xy + wh], dim=1),
                "labels": torch.randint(1, CLASSES, (BOXES,), generator=gen),
            }
        )
    head = {
        "cls_logits": torch.randn(batch, count, CLASSES, generator=gen),
        "bbox_regression": torch.randn(batch, count, 4, generator=gen) * 0.1,
    }
    return model, targets, head, anchors


def _timer(compute: Any, targets: list[dict], head: dict, anchors: list) -> Any:
    def once() -> float:
        inputs = {k: v.clone().requires_grad_(True) for k, v in head.items()}
        start = time.perf_counter()
        losses = compute(targets, inputs, anchors)
        sum(losses.values()).backward()
        return time.perf_counter() - start

    return once


def measure_batches(batches: tuple[int, ...], repeat: int, size: int = SIZE) -> dict[int, dict]:
    """{batch: {"ours": s, "torchvision": s, "ratio": ours / torchvision}}, medians."""
    import torch

    from trainer.loss import BatchedRetinaNetLoss

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        results = {}
        for batch in batches:
            model, targets, head, anchors = _inputs(batch, size, seed=batch)
            ours = _timer(BatchedRetinaNetLoss(model, "l1"), targets, head, anchors)
            theirs = _timer(model.compute_loss, targets, head, anchors)
            a, b = interleave(ours, theirs, repeat)
            results[batch] = {"ours": median(a), "torchvision": median(b)}
            results[batch]["ratio"] = results[batch]["ours"] / results[batch]["torchvision"]
        return results
    finally:
        torch.set_num_threads(threads)


def measure(repeat: int | None = None, quick: bool = False, **_: Any) -> Figure:
    repeat = repeat or (1 if quick else 5)
    size = 128 if quick else SIZE
    results = measure_batches(BATCHES, repeat, size)
    main = results[8]
    fig = Figure(NAME, TITLE, "s", ours=main["ours"], yardstick=main["torchvision"])
    fig.judge("<=", 1.0)
    fig.details["batches"] = results
    fig.details["extra_rows"] = {
        f"batch {batch}": {
            "ours": f"{r['ours'] * 1000:.1f} ms",
            "yardstick": f"{r['torchvision'] * 1000:.1f} ms",
            "ratio": r["ratio"],
            "target": "ratio <= 1",
            "met": r["ratio"] <= 1.0,
        }
        for batch, r in results.items()
        if batch != 8
    }
    fig.note = (
        f"loss + backward alone, {size}x{size} anchors, {CLASSES} classes, {BOXES} boxes an "
        f"image, 1 thread, median of {repeat}"
    )
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    results = measure_batches(BATCHES, args.repeat, 128 if args.quick else SIZE)
    print("batch  batched (ours)  torchvision per-image  ratio")
    for batch, r in results.items():
        print(
            f"{batch:5d}  {r['ours'] * 1000:11.1f} ms  {r['torchvision'] * 1000:18.1f} ms  "
            f"{r['ratio']:.2f}x"
        )


if __name__ == "__main__":
    main()
