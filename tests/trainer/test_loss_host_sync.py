"""The batched RetinaNet loss (trainer/loss.py) runs no op that makes the host wait for the
device, forward and backward, seen on CPU through the public profiler's op names: on CUDA each of
these ops (a value read on the host, a shape that depends on values, a tensor built from Python
data) blocks the host until the GPU has caught up, so the step cannot run ahead of the chip."""

from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerActivity, profile
from torchvision.models.detection import RetinaNet
from torchvision.models.detection.backbone_utils import resnet_fpn_backbone

from tests.trainer.test_loss import CLASSES, ignored_only_image, random_batch
from trainer.loss import BatchedRetinaNetLoss

pytestmark = pytest.mark.slow  # trains or runs the real model

# The ops that read a device value on the host (item, bool(), .tolist(), float()), whose output
# shape depends on values (nonzero and so boolean-mask indexing, masked_select, unique,
# repeat_interleave without output_size, bincount), or that copy Python data to the device
# (lift_fresh: torch.tensor / torch.as_tensor of a list or scalar).
HOST_SYNC_OPS = {
    "aten::nonzero",
    "aten::nonzero_numpy",
    "aten::item",
    "aten::_local_scalar_dense",
    "aten::is_nonzero",
    "aten::equal",
    "aten::allclose",
    "aten::masked_select",
    "aten::repeat_interleave",
    "aten::bincount",
    "aten::histc",
    "aten::lift_fresh",
}
HOST_SYNC_PREFIXES = ("aten::unique", "aten::_unique")


def ops_run(work) -> set[str]:
    """The names of every op ``work()`` ran, autograd's backward included."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        work()
    return {event.key for event in prof.key_averages()}


def host_syncs(names: set[str]) -> set[str]:
    return {n for n in names if n in HOST_SYNC_OPS or n.startswith(HOST_SYNC_PREFIXES)}


@pytest.fixture(scope="module")
def model() -> RetinaNet:
    # Only its matcher and box coder are used, the same in v1 and v2.
    backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None)
    return RetinaNet(backbone, CLASSES, min_size=96, max_size=128)


def test_the_profiler_sees_each_kind_of_host_sync(model) -> None:
    """The check below is not blind: each way of waiting for the device shows up by name, and
    torchvision's own per-image loss is caught."""
    x = torch.randn(6)

    def syncing() -> None:
        x.nonzero()
        x[x > 0].sum()
        float(x.sum())
        bool(x[0] > 0)
        x.tolist()
        torch.unique(x)
        torch.masked_select(x, x > 0)
        torch.tensor([1.0, 2.0]) * x[:2]

    seen = host_syncs(ops_run(syncing))
    assert {
        "aten::nonzero",
        "aten::_local_scalar_dense",
        "aten::is_nonzero",
        "aten::masked_select",
        "aten::lift_fresh",
    } <= seen, seen
    assert any(n.startswith(HOST_SYNC_PREFIXES) for n in seen), seen

    targets, head, anchors = random_batch(1, [2, 0, 5])
    theirs = host_syncs(ops_run(lambda: model.compute_loss(targets, head, anchors)))
    assert "aten::nonzero" in theirs, theirs


@pytest.mark.parametrize("box_loss", ["l1", "giou"])
@pytest.mark.parametrize(
    "counts", [[3, 0, 5], [0, 0], [12]], ids=["mixed", "no-boxes", "one-image"]
)
def test_the_batched_loss_never_waits_for_the_device(model, box_loss, counts) -> None:
    targets, head, anchors = random_batch(5, counts)
    inputs = {k: v.clone().requires_grad_(True) for k, v in head.items()}
    loss = BatchedRetinaNetLoss(model, box_loss)

    def step() -> None:
        sum(loss(targets, inputs, anchors).values()).backward()

    names = ops_run(step)
    assert host_syncs(names) == set()
    # The backward pass ran under the profiler too, down to both head outputs.
    assert any(n.startswith("autograd::engine::evaluate_function") for n in names), names
    for value in inputs.values():
        assert value.grad is not None and torch.isfinite(value.grad).all()
    if sum(counts):
        assert inputs["bbox_regression"].grad.abs().sum() > 0


@pytest.mark.parametrize("box_loss", ["l1", "giou"])
def test_no_sync_when_every_anchor_is_ignored(model, box_loss) -> None:
    target, anchors = ignored_only_image()
    gen = torch.Generator().manual_seed(3)
    inputs = {
        "cls_logits": torch.randn(1, 2, CLASSES, generator=gen).requires_grad_(True),
        "bbox_regression": torch.randn(1, 2, 4, generator=gen).requires_grad_(True),
    }
    model.proposal_matcher.allow_low_quality_matches = False
    try:
        loss = BatchedRetinaNetLoss(model, box_loss)
        names = ops_run(lambda: sum(loss([target], inputs, [anchors]).values()).backward())
    finally:
        model.proposal_matcher.allow_low_quality_matches = True
    assert host_syncs(names) == set()
    assert torch.equal(inputs["bbox_regression"].grad, torch.zeros(1, 2, 4))
