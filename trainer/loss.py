"""RetinaNet's training loss for the whole batch at once (--loss batched, the default).

torchvision's RetinaNet matches anchors to boxes and computes the focal and box losses image by
image in Python (``RetinaNet.compute_loss``), a loop of small kernels that grows with the batch.
This computes the same quantities with one padded tensor per batch:

- the matcher: IoU of every (image, box, anchor) with padded boxes masked out, then torchvision's
  ``Matcher`` rules (its own thresholds, read from the model's ``proposal_matcher``): best box per
  anchor, below the low threshold background (-1), between the thresholds ignored (-2), and the
  low-quality matches (each box's best anchors) put back;
- the classification loss: torchvision's ``sigmoid_focal_loss`` (alpha 0.25, gamma 2) over every
  anchor that is not ignored, written for a one-hot target so that no target tensor is built (a
  negative term for every class, the positive one swapped in at each foreground anchor's class),
  summed per image, divided by the image's foreground count (at least 1), averaged over images;
- the box loss: L1 on the encoded targets (v1) or GIoU on the decoded boxes (v2), over the
  foreground anchors, the same normalisation.

Equal to torchvision's loss within 1e-5 (tests/trainer/test_loss.py, random batches with empty
images and images whose every anchor is ignored); the run checks that again on its first batch
and falls back to torchvision's loss, saying so, when they differ.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch.nn import functional as F
from torch.nn.utils.rnn import pad_sequence
from torchvision.models.detection import RetinaNet
from torchvision.ops import generalized_box_iou_loss

BELOW_LOW_THRESHOLD = -1
BETWEEN_THRESHOLDS = -2
# torchvision's sigmoid_focal_loss defaults, which its RetinaNet head uses.
FOCAL_ALPHA = 0.25
# How close the first batch's two losses (in fp32) must be, relative, for the batched one to be
# kept: sums in another order differ by ~1e-7.
FIRST_BATCH_TOLERANCE = 1e-5


def box_loss_type(model_name: str) -> str:
    """The box loss torchvision builds each model with: GIoU for v2, L1 for v1 (and ours)."""
    return "giou" if model_name == "retinanet_resnet50_fpn_v2" else "l1"


def batched_iou(boxes: Tensor, anchors: Tensor) -> Tensor:
    """IoU [B, G, A] of boxes [B, G, 4] with anchors [B, A, 4], as torchvision's box_iou."""
    area_boxes = (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])
    area_anchors = (anchors[..., 2] - anchors[..., 0]) * (anchors[..., 3] - anchors[..., 1])
    b = boxes[:, :, None, :]
    a = anchors[:, None, :, :]
    w = (torch.min(b[..., 2], a[..., 2]) - torch.max(b[..., 0], a[..., 0])).clamp(min=0)
    h = (torch.min(b[..., 3], a[..., 3]) - torch.max(b[..., 1], a[..., 1])).clamp(min=0)
    inter = w * h
    union = area_boxes[:, :, None] + area_anchors[:, None, :] - inter
    return inter / union


class BatchedRetinaNetLoss:
    """A drop-in for ``RetinaNet.compute_loss(targets, head_outputs, anchors)``."""

    def __init__(self, model: RetinaNet, box_loss: str) -> None:
        if box_loss not in ("l1", "giou"):
            raise ValueError(f"batched loss: box loss {box_loss!r} (l1 or giou)")
        self.matcher = model.proposal_matcher
        self.box_coder = model.head.regression_head.box_coder
        self.box_loss = box_loss

    def match(self, targets: list[dict[str, Tensor]], anchors: Tensor) -> Tensor:
        """Matched box index per anchor [B, A] (-1 background, -2 ignored), as Matcher."""
        # No step here waits for the GPU: box counts come from shapes, the padding mask and the
        # thresholds from kernels (masked_fill). A device tensor read on the host, or a write
        # through a boolean index, would stall the host until the forward pass had finished.
        batch, count = anchors.shape[0], anchors.shape[1]
        if max(len(t["boxes"]) for t in targets) == 0:
            return torch.full((batch, count), BELOW_LOW_THRESHOLD, dtype=torch.int64,
                              device=anchors.device)  # fmt: skip
        boxes = pad_sequence([t["boxes"] for t in targets], batch_first=True)
        real = pad_sequence(
            [torch.ones(len(t["boxes"]), dtype=torch.bool, device=anchors.device) for t in targets],
            batch_first=True,
        )
        # Under autocast the anchors come in the features' 16-bit type while the boxes stay fp32:
        # torchvision's box_iou promotes, so compute in the promoted type too.
        dtype = torch.promote_types(boxes.dtype, anchors.dtype)
        iou = batched_iou(boxes.to(dtype), anchors.to(dtype))
        iou = iou.masked_fill(~real[:, :, None], -1.0)  # padding never matches
        best, matches = iou.max(dim=1)
        all_matches = matches
        matches = matches.masked_fill(best < self.matcher.low_threshold, BELOW_LOW_THRESHOLD)
        between = (best >= self.matcher.low_threshold) & (best < self.matcher.high_threshold)
        matches = matches.masked_fill(between, BETWEEN_THRESHOLDS)
        if self.matcher.allow_low_quality_matches:
            # Each box's best anchors (ties included) keep their best box, whatever its IoU.
            highest = iou.max(dim=2).values
            is_best = (iou == highest[:, :, None]) & real[:, :, None]
            restore = is_best.any(dim=1)
            matches = torch.where(restore, all_matches, matches)
        return matches

    def __call__(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
    ) -> dict[str, Tensor]:
        cls_logits = head_outputs["cls_logits"]  # [B, A, C]
        regression = head_outputs["bbox_regression"]  # [B, A, 4]
        anchor_batch = torch.stack(anchors)
        batch = cls_logits.shape[0]
        matches = self.match(targets, anchor_batch)
        foreground = matches >= 0
        per_image_fg = foreground.sum(dim=1).clamp(min=1).to(torch.float32)

        # Classification: the focal loss with a one-hot target, without building the target.
        # Every class of every anchor not ignored is a negative, (1-a) p^g softplus(x); at each
        # foreground anchor's own class the positive term a (1-p)^g softplus(-x) replaces it.
        image, anchor = foreground.nonzero(as_tuple=True)
        prob = torch.sigmoid(cls_logits)
        negatives = (prob * prob * F.softplus(cls_logits)).sum(dim=2) * (1 - FOCAL_ALPHA)
        valid = matches != BETWEEN_THRESHOLDS
        cls_per_image = torch.where(valid, negatives, torch.zeros_like(negatives)).sum(dim=1)
        if image.numel():
            labels = pad_sequence([t["labels"] for t in targets], batch_first=True)
            label = labels[image, matches[image, anchor]]
            x = cls_logits[image, anchor, label]
            p = prob[image, anchor, label]
            swap = FOCAL_ALPHA * (1 - p) * (1 - p) * F.softplus(-x) - (1 - FOCAL_ALPHA) * p * p * (
                F.softplus(x)
            )
            cls_per_image = cls_per_image.index_add(0, image, swap.to(cls_per_image.dtype))
        classification = (cls_per_image.float() / per_image_fg).sum() / batch

        # Boxes: foreground anchors only, gathered across the batch in one index.
        box_rows = torch.zeros(batch, device=cls_logits.device, dtype=torch.float32)
        if image.numel():
            boxes = pad_sequence([t["boxes"] for t in targets], batch_first=True)
            matched = boxes[image, matches[image, anchor]]
            pred = regression[image, anchor]
            anchor_boxes = anchor_batch[image, anchor]
            if self.box_loss == "l1":
                wanted = self.box_coder.encode_single(matched, anchor_boxes)
                per_anchor = (pred - wanted).abs().sum(dim=1)
            else:
                decoded = self.box_coder.decode_single(pred, anchor_boxes)
                per_anchor = generalized_box_iou_loss(decoded, matched, reduction="none", eps=1e-7)
            box_rows = box_rows.index_add(0, image, per_anchor.to(torch.float32))
        bbox_regression = (box_rows / per_image_fg).sum() / max(1, batch)
        if not image.numel():
            # No foreground anywhere: still part of the graph (zero gradients), as torchvision's
            # empty indexing is, so DDP sees every head parameter used.
            bbox_regression = bbox_regression + regression.sum() * 0.0
        return {"classification": classification, "bbox_regression": bbox_regression}


def install_batched_loss(
    model: RetinaNet, model_name: str, log: Callable[[str], None]
) -> BatchedRetinaNetLoss:
    """Make ``model`` compute its training loss batched. The first call also computes both
    losses in fp32 on that batch and keeps the batched one only when they agree within
    FIRST_BATCH_TOLERANCE (else torchvision's, said in one line). In fp32, because under 16-bit
    autocast torchvision's own focal loss rounds 1 - (1 - p) and the two differ by more than
    the order of a sum."""
    batched = BatchedRetinaNetLoss(model, box_loss_type(model_name))
    original = model.compute_loss  # the bound torchvision method

    def first_batch(
        targets: list[dict[str, Tensor]], head_outputs: dict[str, Tensor], anchors: list[Tensor]
    ) -> dict[str, Tensor]:
        device = head_outputs["cls_logits"].device
        with torch.no_grad(), torch.autocast(device.type, enabled=False):
            exact = {k: v.detach().float() for k, v in head_outputs.items()}
            ours = batched(targets, exact, anchors)
            theirs = original(targets, exact, anchors)
        worst = max(
            float((ours[k] - theirs[k]).abs()) / max(1.0, abs(float(theirs[k]))) for k in ours
        )
        if worst <= FIRST_BATCH_TOLERANCE:
            model.compute_loss = batched
            log(
                f"loss: batched (matcher and focal loss over the whole batch); equal to "
                f"torchvision's on the first batch (largest relative difference {worst:.1e})"
            )
            return batched(targets, head_outputs, anchors)
        model.compute_loss = original
        log(
            f"loss: torchvision's per-image loss: the batched one differs from it by "
            f"{worst:.1e} (relative) on the first batch"
        )
        return original(targets, head_outputs, anchors)

    model.compute_loss = first_batch
    return batched
