"""COCO-style mAP@[.5:.95] and mAP@.5 (and with --eval-metric oid the Open Images challenge mAP),
each rank predicting its shard of the validation split.

Ground truth comes from the flat index (sizes included), so building it decodes no image.
pycocotools is optional: importing it happens only here, and config validation names the fix.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from trainer.data.dataset import DetectionDataset, collate
from trainer.data.index import DetectionIndex
from trainer.data.sampler import ShardSampler
from trainer.data.transforms import to_model_input
from trainer.data.workers import LoaderWorkers
from trainer.distributed import DistContext, broadcast_object, gather_objects
from trainer.errors import ConfigError
from trainer.oid_metric import (
    ImageGroundTruth,
    OidAnnotations,
    expand_predictions,
    oid_average_precisions,
    oid_map,
)

Predictions = dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]  # index -> boxes, scores, labels


def _coco_modules() -> tuple[Any, Any]:
    try:  # an optional dependency: only evaluation needs it
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
    except ImportError:
        raise ConfigError(
            "evaluation needs pycocotools: `pip install pycocotools`, or pass --eval-every 0"
        ) from None
    return COCO, COCOeval


def coco_map(index: DetectionIndex, predictions: Predictions, image_indices: list[int]) -> dict:
    """mAP over ``image_indices``; prediction boxes are xyxy pixels of the original image size."""
    COCO, COCOeval = _coco_modules()
    images: list[dict[str, int]] = []
    annotations: list[dict[str, object]] = []
    for i in image_indices:
        h, w = int(index.heights[i]), int(index.widths[i])
        images.append({"id": i + 1, "height": h, "width": w})
        rows = index.box_slice(i)
        for box, label, group in zip(
            index.boxes[rows], index.labels[rows], index.group_of[rows], strict=True
        ):
            x1, y1, x2, y2 = (float(v) for v in box * np.array([w, h, w, h], dtype=np.float32))
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": i + 1,
                    "category_id": int(label),
                    "bbox": [x1, y1, x2 - x1, y2 - y1],
                    "area": (x2 - x1) * (y2 - y1),
                    "iscrowd": int(group),
                }
            )
    gt = COCO()
    gt.dataset = {
        "images": images,
        "annotations": annotations,
        "categories": [{"id": k + 1, "name": n} for k, n in enumerate(index.class_names)],
    }
    detections = []
    for i in image_indices:
        boxes, scores, labels = predictions.get(i, (np.zeros((0, 4)), np.zeros(0), np.zeros(0)))
        for (x1, y1, x2, y2), s, c in zip(
            boxes.tolist(), scores.tolist(), labels.tolist(), strict=True
        ):
            detections.append(
                {
                    "image_id": i + 1,
                    "category_id": int(c),
                    "bbox": [x1, y1, x2 - x1, y2 - y1],
                    "score": s,
                }
            )
    if not detections or not annotations:
        return {"map": 0.0, "map50": 0.0, "images": len(images), "detections": len(detections)}
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints progress chatter
        gt.createIndex()
        dt = gt.loadRes(detections)
        evaluator = COCOeval(gt, dt, iouType="bbox")
        evaluator.params.imgIds = [i + 1 for i in image_indices]
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    stats = evaluator.stats
    return {
        "map": max(float(stats[0]), 0.0),
        "map50": max(float(stats[1]), 0.0),
        "images": len(images),
        "detections": len(detections),
    }


def oid_metrics(
    index: DetectionIndex,
    predictions: Predictions,
    image_indices: list[int],
    annotations: OidAnnotations | None = None,
    expand: bool = True,
) -> dict:
    """Open Images challenge mAP@0.5 over ``image_indices`` (see trainer/oid_metric.py):
    ``oid_map`` and ``oid_classes``, the number of classes with ground truth (the mean's terms).
    ``expand``: the prediction step first (credit on parent classes); without it the figure is
    the official evaluator's on these predictions."""
    labels = annotations.image_labels if annotations is not None else None
    ground, found = [], []
    empty = (np.zeros((0, 4)), np.zeros(0), np.zeros(0, np.int64))
    for i in image_indices:
        rows = index.box_slice(i)
        scale = np.array([index.widths[i], index.heights[i]] * 2, np.float64)
        ground.append(
            ImageGroundTruth(
                index.boxes[rows] * scale,
                np.asarray(index.labels[rows], np.int64),
                np.asarray(index.group_of[rows], bool),
                labels.positive[i] if labels is not None else None,
                labels.negative[i] if labels is not None else None,
            )
        )
        found.append(predictions.get(i, empty))
    hierarchy = annotations.hierarchy if annotations is not None else None
    if expand and hierarchy is not None:
        found = expand_predictions(found, hierarchy)
    aps, _ = oid_average_precisions(ground, found, len(index.class_names), hierarchy)
    return {"oid_map": round(oid_map(aps), 6), "oid_classes": int((~np.isnan(aps)).sum())}


@torch.inference_mode()
def predict_shard(
    ctx: DistContext,
    model: nn.Module,
    dataset: DetectionDataset,
    batch_size: int,
    workers: int,
    limit: int,
    amp_dtype: torch.dtype | None,
) -> Predictions:
    """This rank's predictions, boxes mapped back to each image's original size.

    Workers: no more than this rank's batches (a worker that would get none is not forked), and
    any the loader leaves behind is killed (trainer/data/workers.py), so a rank always exits."""
    length = min(len(dataset), limit) if limit > 0 else len(dataset)
    sampler = ShardSampler(length, ctx.rank, ctx.world_size)
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        num_workers=min(workers, -(-len(sampler) // batch_size)),
        collate_fn=collate,
        pin_memory=ctx.device.type == "cuda",
    )
    workers_started = LoaderWorkers("evaluation", ctx.rank)
    batches = workers_started.start(loader)
    was_training = model.training
    model.eval()
    out: Predictions = {}
    try:
        for images, targets in batches:
            inputs = to_model_input(images, ctx.device)
            with torch.autocast(ctx.device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
                outputs = model(inputs)
            for image, target, output in zip(images, targets, outputs, strict=True):
                oh, ow = target["orig_size"]
                h, w = image.shape[-2:]
                scale = torch.tensor([ow / w, oh / h, ow / w, oh / h])
                out[int(target["index"])] = (
                    (output["boxes"].float().cpu() * scale).numpy(),
                    output["scores"].float().cpu().numpy(),
                    output["labels"].cpu().numpy(),
                )
    finally:
        model.train(was_training)
        del batches  # left early: DataLoader shuts its workers down as the iterator goes
        workers_started.reap()
    return out


def evaluate(
    ctx: DistContext,
    model: nn.Module,
    dataset: DetectionDataset,
    batch_size: int,
    workers: int,
    limit: int = 0,
    amp_dtype: torch.dtype | None = None,
    metric: str = "coco",
    oid_expand_predictions: bool = True,
) -> dict:
    """Every rank predicts its shard; rank 0 scores the union; every rank gets the result.

    ``metric="oid"`` adds the Open Images challenge metric's keys to COCO's. The OID figure also
    covers the images with only image-level labels that the validation index carries at its
    end for it (``meta["label_only_start"]``); COCO's does not."""
    shard = predict_shard(ctx, model, dataset, batch_size, workers, limit, amp_dtype)
    gathered = gather_objects(ctx, shard)
    result = None
    if ctx.is_main:
        merged: Predictions = {}
        for part in gathered or []:
            merged.update(part)
        length = min(len(dataset), limit) if limit > 0 else len(dataset)
        # Images with only image-level labels (appended for the OID metric) are not COCO's.
        coco_length = min(length, dataset.index.meta.get("label_only_start", length))
        result = coco_map(dataset.index, merged, list(range(coco_length)))
        if metric == "oid":
            result |= oid_metrics(
                dataset.index,
                merged,
                list(range(length)),
                dataset.oid_annotations,
                expand=oid_expand_predictions,
            )
    return broadcast_object(ctx, result)
