"""The batched RetinaNet loss (trainer/loss.py) against torchvision's per-image loss on random
batches: the matcher index for index, both loss terms and their gradients within 1e-5, with empty
images and images whose every anchor is ignored."""

from __future__ import annotations

import pytest
import torch
from torchvision.models.detection import RetinaNet, retinanet_resnet50_fpn_v2
from torchvision.models.detection.backbone_utils import resnet_fpn_backbone

from trainer.loss import (
    BatchedRetinaNetLoss,
    FirstBatchChecked,
    FocalPerImage,
    classification_per_image,
)
from trainer.model import TrainerRetinaNet

TOLERANCE = 1e-5
CLASSES = 5


@pytest.fixture(scope="module")
def models() -> dict[str, RetinaNet]:
    """v1 layout (L1 box loss) and v2 (GIoU), small: only their loss code is exercised."""
    v1 = RetinaNet(
        resnet_fpn_backbone(backbone_name="resnet18", weights=None),
        CLASSES,
        min_size=96,
        max_size=128,
    )
    v2 = retinanet_resnet50_fpn_v2(weights=None, weights_backbone=None, num_classes=CLASSES)
    return {"l1": v1, "giou": v2}


def random_boxes(gen: torch.Generator, n: int, size: float = 128.0) -> torch.Tensor:
    xy = torch.rand(n, 2, generator=gen) * size * 0.8
    wh = 4 + torch.rand(n, 2, generator=gen) * size * 0.5
    return torch.cat([xy, xy + wh], dim=1)


def random_batch(seed: int, counts: list[int], anchors_per_image: int = 600):
    gen = torch.Generator().manual_seed(seed)
    anchors = random_boxes(gen, anchors_per_image)
    batch = len(counts)
    targets = [
        {"boxes": random_boxes(gen, n), "labels": torch.randint(1, CLASSES, (n,), generator=gen)}
        for n in counts
    ]
    head = {
        "cls_logits": torch.randn(batch, anchors_per_image, CLASSES, generator=gen) * 2,
        "bbox_regression": torch.randn(batch, anchors_per_image, 4, generator=gen) * 0.3,
    }
    return targets, head, [anchors.clone() for _ in range(batch)]


def ignored_only_image() -> tuple[dict, torch.Tensor]:
    """Anchors and one box whose best IoU is 0.45: between the thresholds, so (with low-quality
    matches off) every anchor is ignored or background and the image has no foreground."""
    anchors = torch.tensor([[0.0, 0.0, 10.0, 10.0], [50.0, 50.0, 60.0, 60.0]])
    target = {"boxes": torch.tensor([[0.0, 0.0, 10.0, 4.5]]), "labels": torch.tensor([2])}
    return target, anchors


def both_losses(model: RetinaNet, box_loss: str, targets, head, anchors):
    ours_in = {k: v.clone().requires_grad_(True) for k, v in head.items()}
    theirs_in = {k: v.clone().requires_grad_(True) for k, v in head.items()}
    ours = BatchedRetinaNetLoss(model, box_loss)(targets, ours_in, anchors)
    theirs = model.compute_loss(targets, theirs_in, anchors)
    sum(ours.values()).backward()
    sum(theirs.values()).backward()
    return ours, theirs, ours_in, theirs_in


def assert_equal(ours, theirs, ours_in, theirs_in) -> None:
    for key in ("classification", "bbox_regression"):
        want = float(theirs[key].detach())
        assert abs(float(ours[key].detach()) - want) <= TOLERANCE * max(1.0, abs(want)), key
    for key in ours_in:
        assert torch.allclose(ours_in[key].grad, theirs_in[key].grad, atol=TOLERANCE, rtol=1e-4)


@pytest.mark.parametrize("box_loss", ["l1", "giou"])
@pytest.mark.parametrize(
    ("seed", "counts"),
    [(0, [3]), (1, [2, 0, 5]), (2, [0, 0]), (3, [7, 1, 4, 0, 2]), (4, [12, 9])],
)
def test_batched_loss_equals_torchvision(models, box_loss, seed, counts) -> None:
    model = models[box_loss]
    targets, head, anchors = random_batch(seed, counts)
    batched = BatchedRetinaNetLoss(model, box_loss)
    matches = batched.match(targets, torch.stack(anchors))
    for i, target in enumerate(targets):
        if len(target["boxes"]):
            from torchvision.ops import box_iou

            expected = model.proposal_matcher(box_iou(target["boxes"], anchors[i]))
        else:
            expected = torch.full((anchors[i].shape[0],), -1, dtype=torch.int64)
        assert torch.equal(matches[i], expected), i
    if sum(counts):  # foreground and ignored anchors both
        assert (matches >= 0).any() and (matches == -2).any()
    assert_equal(*both_losses(model, box_loss, targets, head, anchors))


@pytest.mark.slow  # an inductor compile
def test_the_compiled_classification_pass_gives_the_same_loss_and_gradients(models) -> None:
    """--compile compiles the loss's per-class pass (here through torch.compile's aot_eager
    backend: Dynamo's graph and AOTAutograd's backward, without minutes of code generation)."""
    model = models["l1"]
    targets, head, anchors = random_batch(3, [7, 1, 4, 0, 2])
    results = []
    for backend in (None, "aot_eager"):
        inputs = {k: v.clone().requires_grad_(True) for k, v in head.items()}
        losses = BatchedRetinaNetLoss(model, "l1", compile_backend=backend)(
            targets, inputs, anchors
        )
        sum(losses.values()).backward()
        results.append((losses, inputs))
    (eager, eager_in), (compiled, compiled_in) = results
    for key in eager:
        assert torch.allclose(compiled[key], eager[key], rtol=1e-6, atol=1e-7), key
        assert torch.allclose(compiled_in["cls_logits"].grad, eager_in["cls_logits"].grad,
                              rtol=1e-5, atol=1e-8)  # fmt: skip


def test_the_written_out_focal_gradient_is_the_formulas() -> None:
    """FocalPerImage (the eager loss) against finite differences in float64, at logits large
    enough to saturate the sigmoid, with foreground, background and ignored anchors; and its
    value and gradient against autograd over the formula (the compiled loss) in float32."""
    gen = torch.Generator().manual_seed(3)
    logits = (torch.randn(2, 6, 5, generator=gen, dtype=torch.float64) * 6).requires_grad_(True)
    label = torch.randint(0, 5, (2, 6), generator=gen)
    matches = torch.tensor([[0, -1, -2, 1, 0, -1], [-2, -2, 0, -1, 2, 1]])
    assert torch.autograd.gradcheck(lambda t: FocalPerImage.apply(t, label, matches), (logits,))
    weights = torch.tensor([1.0, 2.0])
    results = []
    for compute in (FocalPerImage.apply, classification_per_image):
        x = logits.detach().float().requires_grad_(True)
        value = compute(x, label, matches)
        (value * weights).sum().backward()
        results.append((value.detach(), x.grad))
    (ours, ours_grad), (formula, formula_grad) = results
    assert torch.allclose(ours, formula, rtol=1e-6)
    assert torch.allclose(ours_grad, formula_grad, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("box_loss", ["l1", "giou"])
def test_images_with_every_anchor_ignored_or_empty(models, box_loss) -> None:
    model = models[box_loss]
    target, anchors = ignored_only_image()
    empty = {"boxes": torch.zeros((0, 4)), "labels": torch.zeros((0,), dtype=torch.int64)}
    gen = torch.Generator().manual_seed(7)
    head = {
        "cls_logits": torch.randn(2, 2, CLASSES, generator=gen),
        "bbox_regression": torch.randn(2, 2, 4, generator=gen),
    }
    model.proposal_matcher.allow_low_quality_matches = False
    try:
        batched = BatchedRetinaNetLoss(model, box_loss)
        matches = batched.match([target, empty], torch.stack([anchors, anchors]))
        assert matches.tolist() == [[-2, -1], [-1, -1]]
        ours, theirs, ours_in, theirs_in = both_losses(
            model, box_loss, [target, empty], head, [anchors, anchors]
        )
        assert float(ours["bbox_regression"].detach()) == 0.0
        assert float(theirs["bbox_regression"].detach()) == 0.0
        assert_equal(ours, theirs, ours_in, theirs_in)
    finally:
        model.proposal_matcher.allow_low_quality_matches = True


@pytest.mark.parametrize("autocast", [False, True])
def test_the_run_checks_the_first_batch_then_keeps_the_batched_loss(autocast) -> None:
    """Also under bf16 autocast, where torchvision's own focal loss rounds: the check is fp32.
    The loss is the model's declared `loss_fn` (None: torchvision's), not a patched method."""
    model = TrainerRetinaNet(
        resnet_fpn_backbone(backbone_name="resnet18", weights=None), CLASSES, min_size=96,
        max_size=128,
    ).train()  # fmt: skip
    said: list[str] = []
    model.loss_fn = checked = FirstBatchChecked(model, "retinanet_resnet18_fpn", said.append)
    # Coordinates past 256, where bf16 anchors (autocast) round: the matcher must promote.
    images = [torch.rand(3, 96, 128), torch.rand(3, 96, 128)]
    targets = [
        {
            "boxes": torch.tensor([[10.0, 10.0, 60.0, 50.0], [50.3, 61.7, 120.9, 95.1]]),
            "labels": torch.tensor([1, 2]),
        },
        {"boxes": torch.zeros((0, 4)), "labels": torch.zeros((0,), dtype=torch.int64)},
    ]
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        losses = model(images, targets)
    assert set(losses) == {"classification", "bbox_regression"}
    assert len(said) == 1 and said[0].startswith("loss: batched"), said
    assert checked.chosen is checked.batched
    model(images, targets)
    assert len(said) == 1  # checked once
    model.loss_fn = None  # torchvision's own loss again
    assert set(model(images, targets)) == {"classification", "bbox_regression"}
    assert len(said) == 1 and "loss_fn" not in model.state_dict()


@pytest.mark.parametrize("box_loss", ["l1", "giou"])
def test_without_low_quality_matches_and_with_box_coder_weights(models, box_loss) -> None:
    """The matcher's other rule and a box coder whose x/y and w/h weights are not 1: the dense
    encode and decode scale each pair as torchvision's does, one weight at a time."""
    model = models[box_loss]
    coder = model.head.regression_head.box_coder
    weights = coder.weights
    model.proposal_matcher.allow_low_quality_matches = False
    coder.weights = (2.0, 2.0, 0.5, 0.5)
    try:
        targets, head, anchors = random_batch(11, [9, 0, 4], anchors_per_image=900)
        matches = BatchedRetinaNetLoss(model, box_loss).match(targets, torch.stack(anchors))
        assert (matches >= 0).any() and (matches == -2).any()
        assert_equal(*both_losses(model, box_loss, targets, head, anchors))
    finally:
        model.proposal_matcher.allow_low_quality_matches = True
        coder.weights = weights


def test_box_coder_weights_that_differ_within_a_pair_are_refused(models) -> None:
    coder = models["l1"].head.regression_head.box_coder
    weights = coder.weights
    coder.weights = (1.0, 2.0, 1.0, 1.0)
    try:
        with pytest.raises(ValueError, match=r"box coder weights \(1.0, 2.0, 1.0, 1.0\)"):
            BatchedRetinaNetLoss(models["l1"], "l1")
    finally:
        coder.weights = weights
