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

Dense with masks: each anchor's matched box and label are gathered for every anchor (background
ones point at box 0), the swap and box terms are computed for every anchor and zeroed off the
foreground with ``torch.where``. No shape depends on data and no value is read on the host, so on
a GPU the host queues the loss and its backward without waiting for the device
(tests/trainer/test_loss_host_sync.py). That costs the box term's few [B, A] ops over every
anchor instead of the ~1% in the foreground: a few percent of the loss on CPU, whose time is the
focal loss over [B, A, classes].

Equal to torchvision's loss within 1e-5 (tests/trainer/test_loss.py, random batches with empty
images and images whose every anchor is ignored); the run checks that again on its first batch
and falls back to torchvision's loss, saying so, when they differ.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor
from torch.nn import functional as F
from torch.nn.utils.rnn import pad_sequence
from torchvision.models.detection import RetinaNet

from trainer.model import LossFn

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


def generalized_box_iou_loss_dense(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> Tensor:
    """torchvision's ``generalized_box_iou_loss`` (reduction none) over [..., 4], with the
    intersection zeroed by ``torch.where`` where torchvision writes through a boolean mask."""
    if boxes1.dtype not in (torch.float32, torch.float64):
        boxes1 = boxes1.float()
    if boxes2.dtype not in (torch.float32, torch.float64):
        boxes2 = boxes2.float()
    wh1 = boxes1[..., 2:] - boxes1[..., :2]
    wh2 = boxes2[..., 2:] - boxes2[..., :2]
    inter_wh = torch.min(boxes1[..., 2:], boxes2[..., 2:]) - torch.max(
        boxes1[..., :2], boxes2[..., :2]
    )
    overlap = (inter_wh > 0).all(dim=-1)
    inter = torch.where(overlap, inter_wh[..., 0] * inter_wh[..., 1], 0.0)
    union = wh1[..., 0] * wh1[..., 1] + wh2[..., 0] * wh2[..., 1] - inter
    iou = inter / (union + eps)
    outer_wh = torch.max(boxes1[..., 2:], boxes2[..., 2:]) - torch.min(
        boxes1[..., :2], boxes2[..., :2]
    )
    area_c = outer_wh[..., 0] * outer_wh[..., 1]
    return 1 - (iou - (area_c - union) / (area_c + eps))


def classification_per_image(cls_logits: Tensor, label: Tensor, matches: Tensor) -> Tensor:
    """The focal loss with a one-hot target, without building the target, summed over each
    image's anchors and classes ([B], before the division by the foreground count). Every class
    of every anchor not ignored is a negative, (1-a) p^g softplus(x); at each foreground
    anchor's own class (``label``, [B, A]) the positive term a (1-p)^g softplus(-x) replaces
    it. The formula: what torch.compile fuses into one kernel each way. Eager, the loss runs
    ``FocalPerImage``, the same quantity with its gradient written out."""
    prob = torch.sigmoid(cls_logits)
    negatives = (prob * prob * F.softplus(cls_logits)).sum(dim=2) * (1 - FOCAL_ALPHA)
    x = cls_logits.gather(2, label[:, :, None]).squeeze(2)
    per_anchor = torch.where(matches != BETWEEN_THRESHOLDS, negatives, 0.0) + torch.where(
        matches >= 0, _swap(x), 0.0
    )
    return per_anchor.sum(dim=1)


def _swap(x: Tensor) -> Tensor:
    """At a foreground anchor's class: its positive term minus the negative term it replaces."""
    p = torch.sigmoid(x)
    q = 1 - p
    return FOCAL_ALPHA * q * q * F.softplus(-x) - (1 - FOCAL_ALPHA) * p * p * F.softplus(x)


def _swap_grad(x: Tensor) -> Tensor:
    """d _swap / dx: with p' = p q, softplus(x)' = p and softplus(-x)' = -q."""
    p = torch.sigmoid(x)
    q = 1 - p
    positive = -FOCAL_ALPHA * q * q * (2 * p * F.softplus(-x) + q)
    negative = (1 - FOCAL_ALPHA) * p * p * (2 * q * F.softplus(x) + p)
    return positive - negative


class FocalPerImage(torch.autograd.Function):
    """``classification_per_image`` with the gradient of its pass over [B, A, classes] written
    out, d/dx (1-a) p^2 softplus(x) = (1-a) p^2 (2 q softplus(x) + p), and computed in place.
    Autograd over the formula makes about twelve [B, A, classes] tensors forward and backward;
    this makes four. On CPU each is a fresh allocation the kernel fills page by page (glibc
    maps blocks this large anew each time), which costs more than the arithmetic: the loss and
    its backward took 1.6x less time at batch 8 (benchmarks/fig_loss.py). In fp32 (fp64 for
    fp64 logits) whatever the logits' type, as autocast runs softplus; the gradient comes back
    in the logits' type."""

    @staticmethod
    def forward(ctx: Any, cls_logits: Tensor, label: Tensor, matches: Tensor) -> Tensor:
        logits = cls_logits.to(torch.promote_types(cls_logits.dtype, torch.float32))
        prob = torch.sigmoid(logits)
        soft = F.softplus(logits)
        negatives = torch.mul(prob, prob).mul_(soft).sum(dim=2).mul_(1 - FOCAL_ALPHA)
        x = logits.gather(2, label[:, :, None]).squeeze(2)
        valid = matches != BETWEEN_THRESHOLDS
        foreground = matches >= 0
        per_anchor = torch.where(valid, negatives, 0.0) + torch.where(foreground, _swap(x), 0.0)
        ctx.save_for_backward(prob, soft, x, label, valid, foreground)
        ctx.logits_dtype = cls_logits.dtype
        return per_anchor.sum(dim=1)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None, None]:
        prob, soft, x, label, valid, foreground = ctx.saved_tensors
        per_anchor = grad[:, None].expand_as(valid)
        # soft - soft p = softplus(x) q; then x 2, + p, x p, x p: one new tensor.
        out = torch.addcmul(soft, soft, prob, value=-1).mul_(2).add_(prob).mul_(prob).mul_(prob)
        out.mul_(torch.where(valid, per_anchor * (1 - FOCAL_ALPHA), 0.0)[:, :, None])
        swap = torch.where(foreground, per_anchor * _swap_grad(x), 0.0)
        out.scatter_add_(2, label[:, :, None], swap[:, :, None])
        return out.to(ctx.logits_dtype), None, None


class BatchedRetinaNetLoss:
    """A drop-in for ``RetinaNet.compute_loss(targets, head_outputs, anchors)``.

    Dense with masks: every tensor's shape comes from the batch's shapes, never from its values,
    and no value is read on the host, so on a GPU the host queues the whole loss (and its
    backward) without waiting for the device."""

    def __init__(self, model: RetinaNet, box_loss: str, compile_backend: str | None = None) -> None:
        """``compile_backend``: torch.compile's backend for the classification term, the
        loss's one pass over [batch, anchors, classes] (its shape is the batch's, so it
        compiles like the backbone); None keeps it eager."""
        self._classification: Callable[[Tensor, Tensor, Tensor], Tensor] = (
            torch.compile(classification_per_image, backend=compile_backend)
            if compile_backend
            else FocalPerImage.apply
        )
        if box_loss not in ("l1", "giou"):
            raise ValueError(f"batched loss: box loss {box_loss!r} (l1 or giou)")
        self.matcher = model.proposal_matcher
        box_coder = model.head.regression_head.box_coder
        # Python floats, not torchvision's BoxCoder methods: those build a device tensor from a
        # list or a scalar, a host-to-device copy that waits for the device. x and y (and w and
        # h) share a weight, so each pair is scaled in one op; torchvision's RetinaNet uses 1.
        wx, wy, ww, wh = (float(w) for w in box_coder.weights)
        if wx != wy or ww != wh:
            raise ValueError(
                f"batched loss: box coder weights {box_coder.weights} (x and y, and w and h, "
                "must be equal; use --loss torchvision)"
            )
        self.xy_weight, self.wh_weight = wx, ww
        self.clip = float(box_coder.bbox_xform_clip)
        self.box_loss = box_loss

    @staticmethod
    def _padded(targets: list[dict[str, Tensor]], device: torch.device) -> tuple[Tensor, ...]:
        """Boxes [B, G, 4], labels [B, G] and the real-box mask [B, G], G at least 1 (an image
        with no boxes has one padding box that never matches)."""
        boxes = pad_sequence([t["boxes"] for t in targets], batch_first=True)
        labels = pad_sequence([t["labels"] for t in targets], batch_first=True)
        real = pad_sequence(
            [torch.ones(len(t["boxes"]), dtype=torch.bool, device=device) for t in targets],
            batch_first=True,
        )
        if boxes.shape[1] == 0:
            boxes = boxes.new_zeros(len(targets), 1, 4)
            labels = labels.new_zeros(len(targets), 1)
            real = real.new_zeros(len(targets), 1)
        return boxes, labels, real

    def match(self, targets: list[dict[str, Tensor]], anchors: Tensor) -> Tensor:
        """Matched box index per anchor [B, A] (-1 background, -2 ignored), as Matcher."""
        boxes, _, real = self._padded(targets, anchors.device)
        return self._match(boxes, real, anchors)

    def _match(self, boxes: Tensor, real: Tensor, anchors: Tensor) -> Tensor:
        # Our model's anchors are fp32; torchvision's own come in the features' 16-bit type
        # under autocast while the boxes stay fp32: box_iou promotes, so compute in that type.
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

    def _encode(self, matched: Tensor, anchors: Tensor) -> Tensor:
        """torchvision's ``BoxCoder.encode_single`` over [B, A, 4], x and y in one op."""
        ex_wh = anchors[..., 2:] - anchors[..., :2]
        ex_ctr = anchors[..., :2] + 0.5 * ex_wh
        gt_wh = matched[..., 2:] - matched[..., :2]
        gt_ctr = matched[..., :2] + 0.5 * gt_wh
        d_xy = (gt_ctr - ex_ctr) * self.xy_weight / ex_wh
        d_wh = torch.log(gt_wh / ex_wh) * self.wh_weight
        return torch.cat((d_xy, d_wh), dim=2)

    def _decode(self, codes: Tensor, anchors: Tensor) -> Tensor:
        """torchvision's ``BoxCoder.decode_single`` over [B, A, 4], x and y in one op."""
        anchors = anchors.to(codes.dtype)
        size = anchors[..., 2:] - anchors[..., :2]
        ctr = anchors[..., :2] + 0.5 * size
        d_xy = codes[..., :2] / self.xy_weight
        d_wh = (codes[..., 2:] / self.wh_weight).clamp(max=self.clip)
        pred_ctr = d_xy * size + ctr
        half = 0.5 * (torch.exp(d_wh) * size)
        return torch.cat((pred_ctr - half, pred_ctr + half), dim=2)

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
        boxes, labels, real = self._padded(targets, anchor_batch.device)
        matches = self._match(boxes, real, anchor_batch)
        foreground = matches >= 0
        per_image_fg = foreground.sum(dim=1).clamp(min=1).to(torch.float32)
        # Every anchor's matched box (box 0 for background and ignored ones): the terms below
        # are computed for every anchor and zeroed off the foreground.
        index = matches.clamp(min=0)

        label = labels.to(torch.int64).gather(1, index)
        cls_per_image = self._classification(cls_logits, label, matches)
        classification = (cls_per_image.float() / per_image_fg).sum() / batch

        # Boxes: every anchor against its matched box, a background anchor against itself (a
        # finite target: no inf or NaN to mask, forward or backward), zeroed off the foreground.
        fg4 = foreground[:, :, None]
        matched = boxes.gather(1, index[:, :, None].expand(-1, -1, 4))
        matched = torch.where(fg4, matched, anchor_batch.to(matched.dtype))
        if self.box_loss == "l1":
            wanted = self._encode(matched, anchor_batch)
            box_per_anchor = (regression - wanted).abs().sum(dim=2)
        else:
            decoded = self._decode(regression, anchor_batch)
            box_per_anchor = generalized_box_iou_loss_dense(decoded, matched)
        box_rows = torch.where(foreground, box_per_anchor, 0.0).to(torch.float32).sum(dim=1)
        bbox_regression = (box_rows / per_image_fg).sum() / batch
        return {"classification": classification, "bbox_regression": bbox_regression}


class FirstBatchChecked:
    """The run's loss (--loss batched): on the first batch it computes both losses in fp32 and
    keeps the batched one only when they agree within FIRST_BATCH_TOLERANCE (else torchvision's,
    said in one line). In fp32, because under 16-bit autocast torchvision's own focal loss rounds
    1 - (1 - p) and the two differ by more than the order of a sum. A TrainerRetinaNet's
    `loss_fn` (trainer/model.py)."""

    def __init__(
        self,
        model: RetinaNet,
        model_name: str,
        log: Callable[[str], None],
        compile_backend: str | None = None,
    ) -> None:
        self.batched = BatchedRetinaNetLoss(model, box_loss_type(model_name), compile_backend)
        self._eager = BatchedRetinaNetLoss(model, box_loss_type(model_name))  # compiles nothing
        self.torchvision: LossFn = functools.partial(RetinaNet.compute_loss, model)
        self._log = log
        self.chosen: LossFn | None = None  # None until the first batch

    def __call__(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
    ) -> dict[str, Tensor]:
        if self.chosen is None:
            self.chosen = self._choose(targets, head_outputs, anchors)
        return self.chosen(targets, head_outputs, anchors)

    def _choose(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
    ) -> LossFn:
        device = head_outputs["cls_logits"].device
        with torch.no_grad(), torch.autocast(device.type, enabled=False):
            exact = {k: v.detach().float() for k, v in head_outputs.items()}
            ours = self._eager(targets, exact, anchors)
            theirs = self.torchvision(targets, exact, anchors)
        worst = max(
            float((ours[k] - theirs[k]).abs()) / max(1.0, abs(float(theirs[k]))) for k in ours
        )
        if worst <= FIRST_BATCH_TOLERANCE:
            self._log(
                f"loss: batched (matcher and focal loss over the whole batch); equal to "
                f"torchvision's on the first batch (largest relative difference {worst:.1e})"
            )
            return self.batched
        self._log(
            f"loss: torchvision's per-image loss: the batched one differs from it by "
            f"{worst:.1e} (relative) on the first batch"
        )
        return self.torchvision
