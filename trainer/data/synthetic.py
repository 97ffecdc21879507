"""Deterministic generated images with boxes: for smoke runs, tests and benchmarks.

Each class is a rectangle of its own colour on a noisy background, so a detector can learn it.
Everything derives from (seed, split, index): the same flags always give the same data.
"""

from __future__ import annotations

import os

import numpy as np
import torch
from PIL import Image

from trainer.data.dataset import DetectionDataset
from trainer.data.index import DetectionIndex, build_from_rows
from trainer.files import atomic_open_binary

ASPECTS = (0.75, 1.0, 4 / 3)  # width / height; several, so aspect-ratio grouping has work to do


def class_colour(label: int) -> np.ndarray:
    rng = np.random.default_rng((7, label))
    return rng.integers(40, 256, size=3).astype(np.uint8)


def make_synthetic_index(
    num_images: int, num_classes: int, seed: int, base_size: int, split: str
) -> DetectionIndex:
    split_id = {"train": 0, "val": 1}[split]
    rows_img, rows_box, rows_label = [], [], []
    heights = np.zeros(num_images, np.int32)
    widths = np.zeros(num_images, np.int32)
    for i in range(num_images):
        rng = np.random.default_rng((seed, split_id, i))
        aspect = ASPECTS[int(rng.integers(len(ASPECTS)))]
        height = int(base_size * rng.uniform(0.9, 1.1))
        heights[i], widths[i] = height, max(16, int(round(height * aspect)))
        for _ in range(int(rng.integers(1, 4))):
            w, h = rng.uniform(0.15, 0.5, size=2)
            x1, y1 = rng.uniform(0.0, 1.0 - w), rng.uniform(0.0, 1.0 - h)
            rows_img.append(i)
            rows_box.append((x1, y1, x1 + w, y1 + h))
            rows_label.append(int(rng.integers(1, num_classes + 1)))
    names = np.array([f"synthetic-{split}-{i:07d}.jpg" for i in range(num_images)], dtype="S")
    return build_from_rows(
        np.array(rows_img, np.int64),
        names,
        np.array(rows_box, np.float32),
        np.array(rows_label, np.int32),
        np.zeros(len(rows_label), np.uint8),
        [f"class{k}" for k in range(1, num_classes + 1)],
        heights,
        widths,
    )


def render(index: DetectionIndex, i: int, seed: int) -> np.ndarray:
    """Image i as HWC uint8: class-coloured rectangles on dark noise."""
    height, width = int(index.heights[i]), int(index.widths[i])
    rng = np.random.default_rng((seed, 99, i))
    image = rng.integers(0, 60, size=(height, width, 3), dtype=np.uint8)
    rows = index.box_slice(i)
    for (x1, y1, x2, y2), label in zip(index.boxes[rows], index.labels[rows], strict=True):
        c1, c2 = int(x1 * width), max(int(x1 * width) + 1, int(round(x2 * width)))
        r1, r2 = int(y1 * height), max(int(y1 * height) + 1, int(round(y2 * height)))
        image[r1:r2, c1:c2] = class_colour(int(label))
    return image


def write_jpegs(index: DetectionIndex, directory: str, seed: int) -> None:
    """Each image as a JPEG file (skipping those already there), written atomically: for runs
    and benchmarks that should pay real decode costs, like Open Images photos."""
    os.makedirs(directory, exist_ok=True)
    for i in range(len(index)):
        path = os.path.join(directory, index.file_name(i))
        if os.path.exists(path):
            continue
        with atomic_open_binary(path) as handle:
            Image.fromarray(render(index, i, seed)).save(handle, format="JPEG", quality=90)


class SyntheticDataset(DetectionDataset):
    """Renders the image for an index instead of reading a file."""

    def load_image(self, i: int) -> torch.Tensor:
        return torch.from_numpy(render(self.index, i, self.seed)).permute(2, 0, 1).contiguous()
