"""COCO mAP through pycocotools: ground truth fed back scores 1.0, garbage scores near 0."""

from __future__ import annotations

import numpy as np

from trainer.data.synthetic import make_synthetic_index
from trainer.evaluate import coco_map


def ground_truth_as_predictions(index, images):
    out = {}
    for i in images:
        rows = index.box_slice(i)
        scale = np.array([index.widths[i], index.heights[i]] * 2, dtype=np.float32)
        boxes = index.boxes[rows] * scale
        out[i] = (boxes, np.ones(len(boxes), np.float32), index.labels[rows].astype(np.int64))
    return out


def test_ground_truth_scores_one():
    index = make_synthetic_index(12, 3, seed=1, base_size=96, split="val")
    images = list(range(len(index)))
    result = coco_map(index, ground_truth_as_predictions(index, images), images)
    assert result["map"] == 1.0 and result["map50"] == 1.0
    assert result["images"] == 12


def test_garbage_scores_near_zero():
    index = make_synthetic_index(12, 3, seed=1, base_size=96, split="val")
    images = list(range(len(index)))
    rng = np.random.default_rng(0)
    garbage = {}
    for i in images:
        xy = rng.uniform(0, 10, size=(5, 2))
        boxes = np.concatenate([xy, xy + 3], axis=1).astype(np.float32)  # tiny boxes in a corner
        garbage[i] = (boxes, rng.uniform(size=5).astype(np.float32), rng.integers(1, 4, size=5))
    result = coco_map(index, garbage, images)
    assert result["map"] < 0.01 and result["map50"] < 0.01


def test_wrong_labels_score_zero_and_empty_predictions_are_fine():
    index = make_synthetic_index(6, 3, seed=2, base_size=64, split="val")
    images = list(range(len(index)))
    shifted = {
        i: (boxes, scores, (labels % 3) + 1)
        for i, (boxes, scores, labels) in ground_truth_as_predictions(index, images).items()
    }
    assert coco_map(index, shifted, images)["map"] == 0.0
    assert coco_map(index, {}, images)["map"] == 0.0
