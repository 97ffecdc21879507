"""COCO instances JSON into the flat index (category ids renumbered to contiguous labels 1..K)."""

from __future__ import annotations

import json
import os

import numpy as np

from trainer.data.index import DetectionIndex, build_from_rows
from trainer.errors import ConfigError


def build_coco_index(
    annotations_json: str, images_dir: str, train: bool, strict: bool
) -> tuple[DetectionIndex, dict[str, int]]:
    """Returns the index and counts of what was dropped.

    Training drops crowd boxes (as torchvision's reference does); evaluation keeps them flagged, so
    COCOeval treats them as crowd regions.
    """
    categories, images, annotations = _read_instances(annotations_json)
    if not os.path.isdir(images_dir):
        raise ConfigError(f"{images_dir}: COCO images directory not found")
    label_of = {c["id"]: k + 1 for k, c in enumerate(categories)}
    image_pos = {img["id"]: i for i, img in enumerate(images)}
    widths = np.array([img["width"] for img in images], dtype=np.int32)
    heights = np.array([img["height"] for img in images], dtype=np.int32)
    stats = {"degenerate": 0, "crowd_dropped": 0, "missing_images": 0}
    rows_img, rows_box, rows_label, rows_group = [], [], [], []
    for n, ann in enumerate(annotations):
        pos = image_pos.get(ann.get("image_id"))
        if pos is None:
            raise ConfigError(
                f"{annotations_json}: annotations[{n}] image_id={ann.get('image_id')!r} "
                "is not in images"
            )
        label = label_of.get(ann.get("category_id"))
        if label is None:
            raise ConfigError(
                f"{annotations_json}: annotations[{n}] category_id={ann.get('category_id')!r} "
                "is not in categories"
            )
        crowd = int(ann.get("iscrowd", 0)) == 1
        if crowd and train:
            stats["crowd_dropped"] += 1
            continue
        x, y, w, h = (float(v) for v in ann["bbox"])
        W, H = float(widths[pos]), float(heights[pos])
        x1, y1 = max(x, 0.0), max(y, 0.0)
        x2, y2 = min(x + w, W), min(y + h, H)
        if x2 - x1 <= 1 or y2 - y1 <= 1:  # torchvision drops boxes with a side of 1 px or less
            stats["degenerate"] += 1
            continue
        rows_img.append(pos)
        rows_box.append((x1 / W, y1 / H, x2 / W, y2 / H))
        rows_label.append(label)
        rows_group.append(1 if crowd else 0)
    file_names = np.array([img["file_name"] for img in images], dtype="S")
    index = build_from_rows(
        np.array(rows_img, dtype=np.int64),
        file_names,
        np.array(rows_box, dtype=np.float32).reshape(-1, 4),
        np.array(rows_label, dtype=np.int32),
        np.array(rows_group, dtype=np.uint8),
        [str(c["name"]) for c in categories],
        heights,
        widths,
    )
    return _with_present_images(index, images_dir, strict, stats), stats


def _read_instances(annotations_json: str) -> tuple[list[dict], list[dict], list[dict]]:
    """The categories (by id), images and annotations of a COCO instances file."""
    if not os.path.isfile(annotations_json):
        raise ConfigError(f"{annotations_json}: COCO annotation file not found")
    try:
        with open(annotations_json, encoding="utf-8") as f:
            data = json.load(f)
        categories = sorted(data["categories"], key=lambda c: c["id"])
        return categories, data["images"], data.get("annotations", [])
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"{annotations_json}: not a COCO instances file ({type(exc).__name__}: {exc})"
        ) from None


def _with_present_images(
    index: DetectionIndex, images_dir: str, strict: bool, stats: dict[str, int]
) -> DetectionIndex:
    """INDEX without the images missing from IMAGES_DIR (counted in STATS); with STRICT, a
    missing image is an error."""
    present = np.array(
        [os.path.isfile(os.path.join(images_dir, index.file_name(i))) for i in range(len(index))],
        dtype=bool,
    )
    if present.all():
        return index
    missing = [index.file_name(i) for i in np.flatnonzero(~present)[:5]]
    if strict:
        raise ConfigError(
            f"{images_dir}: {int((~present).sum())} image file(s) missing, "
            f"e.g. {', '.join(missing)} (--strict)"
        )
    stats["missing_images"] = int((~present).sum())
    return index.select(present)
