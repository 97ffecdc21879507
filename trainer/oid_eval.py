"""``python -m trainer oid-eval``: score a saved predictions file as the challenge's own tool does.

Inputs as Open Images publishes them, not yet expanded (the hierarchy expands the ground truth
here, as ``oid_hierarchical_labels_expansion.py`` does before the official evaluator):

- ``--boxes``: ``ImageID,...,LabelName,...,XMin,XMax,YMin,YMax,...,IsGroupOf`` (any column order);
- ``--labels``: image-level labels ``ImageID,Source,LabelName,Confidence`` (1 present, 0 absent);
- ``--hierarchy``: ``bbox_labels_600_hierarchy.json``;
- ``--predictions``: ``ImageID,LabelName,Score,XMin,YMin,XMax,YMax``, coordinates in the same
  unit as the boxes (normalised to [0, 1] in Open Images).

The evaluated images are those with a box or an image-level label; predictions on other images
are ignored, as the official pipeline does. Predictions are scored as written; with
``--expand-predictions`` each also counts for its class's ancestors (the trainer's default step).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from trainer.errors import ConfigError
from trainer.oid_metric import (
    ImageGroundTruth,
    expand_predictions,
    image_label_rows,
    oid_average_precisions,
    oid_map,
    read_hierarchy,
)

BOX_COLUMNS = ("ImageID", "LabelName", "XMin", "XMax", "YMin", "YMax", "IsGroupOf")
PREDICTION_COLUMNS = ("ImageID", "LabelName", "Score", "XMin", "YMin", "XMax", "YMax")


def read_rows(path: str, columns: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """(row number, {column: text}) of each data row; a missing file, header column or cell is
    a ConfigError naming the file, the row and the column."""
    try:
        f = open(path, newline="", encoding="utf-8")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    with f:
        reader = csv.reader(f)
        header = [h.strip().lstrip("\ufeff") for h in next(reader, [])]
        missing = [c for c in columns if c not in header]
        if missing:
            raise ConfigError(
                f"{path}: row 1: no column {', '.join(missing)}; expected {','.join(columns)}"
            )
        at = {c: header.index(c) for c in columns}
        for row in reader:
            if not row:
                continue
            short = [c for c in columns if at[c] >= len(row) or not row[at[c]].strip()]
            if short:
                raise ConfigError(f"{path}: row {reader.line_num}: column {short[0]} is empty")
            yield reader.line_num, {c: row[at[c]].strip() for c in columns}


def number(path: str, line: int, column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not np.isfinite(value):
        raise ConfigError(f"{path}: row {line}: column {column}: {text!r} is not a number")
    return value


@dataclass
class _Image:
    boxes: list[list[float]] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    group_of: list[bool] = field(default_factory=list)
    positive: list[int] = field(default_factory=list)
    negative: list[int] = field(default_factory=list)
    found: list[tuple[list[float], float, int]] = field(default_factory=list)


@dataclass(frozen=True)
class OidEvaluation:
    map: float
    per_class: dict[str, float | None]  # MID -> AP; None for a class without ground truth


def evaluate_files(
    boxes: str, labels: str, hierarchy: str, predictions: str, expand: bool = False
) -> OidEvaluation:
    """mAP and per-class AP of the predictions file against the ground-truth files."""
    images: dict[str, _Image] = {}
    box_rows = list(read_rows(boxes, BOX_COLUMNS))
    label_rows = list(image_label_rows(labels))
    mids = hierarchy_mids(hierarchy)
    for _, row in box_rows:
        mids.setdefault(row["LabelName"], None)
    for _, _, mid, _ in label_rows:
        mids.setdefault(mid, None)
    label_of = {mid: k + 1 for k, mid in enumerate(mids)}
    for line, row in box_rows:
        xmin, xmax, ymin, ymax = (
            number(boxes, line, c, row[c]) for c in ("XMin", "XMax", "YMin", "YMax")
        )
        image = images.setdefault(row["ImageID"], _Image())
        image.boxes.append([xmin, ymin, xmax, ymax])
        image.labels.append(label_of[row["LabelName"]])
        image.group_of.append(number(boxes, line, "IsGroupOf", row["IsGroupOf"]) > 0)
    for line, image_id, mid, text in label_rows:
        image = images.setdefault(image_id, _Image())
        verified = (
            image.positive if number(labels, line, "Confidence", text) > 0 else image.negative
        )
        verified.append(label_of[mid])
    for line, row in read_rows(predictions, PREDICTION_COLUMNS):
        scored = images.get(row["ImageID"])
        label = label_of.get(row["LabelName"])
        values = [number(predictions, line, c, row[c]) for c in PREDICTION_COLUMNS[2:]]
        if scored is not None and label is not None:  # no ground truth anywhere: nothing to score
            scored.found.append((values[1:], values[0], label))
    tree = read_hierarchy(hierarchy, list(mids))
    ground, found = [], []
    for image in images.values():
        ground.append(
            ImageGroundTruth(
                np.array(image.boxes, np.float64).reshape(-1, 4),
                np.array(image.labels, np.int64),
                np.array(image.group_of, bool),
                np.unique(np.array(image.positive, np.int64)),
                np.unique(np.array(image.negative, np.int64)),
            )
        )
        found.append(
            (
                np.array([f[0] for f in image.found], np.float64).reshape(-1, 4),
                np.array([f[1] for f in image.found], np.float64),
                np.array([f[2] for f in image.found], np.int64),
            )
        )
    if expand:
        found = expand_predictions(found, tree)
    aps, _ = oid_average_precisions(ground, found, len(mids), tree)
    per_class = {
        mid: None if np.isnan(ap) else float(ap) for mid, ap in zip(mids, aps, strict=True)
    }
    return OidEvaluation(oid_map(aps), per_class)


def hierarchy_mids(path: str) -> dict[str, None]:
    """Every class of the hierarchy file (the root excluded), in file order, as an ordered set."""
    try:
        with open(path, encoding="utf-8") as f:
            root = json.load(f)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the class hierarchy ({exc.strerror})") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not a class hierarchy JSON ({exc})") from None
    mids: dict[str, None] = {}

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for child in node.get("Subcategory", []) or []:
                if isinstance(child, dict) and isinstance(child.get("LabelName"), str):
                    mids.setdefault(child["LabelName"], None)
                walk(child)

    walk(root)
    return mids


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trainer oid-eval",
        description="Open Images challenge mAP@0.5 of a predictions CSV, as the official "
        "evaluator computes it (ground truth expanded with the hierarchy).",
    )
    parser.add_argument("--boxes", required=True, help="boxes CSV (with IsGroupOf)")
    parser.add_argument("--labels", required=True, help="image-level labels CSV")
    parser.add_argument("--hierarchy", required=True, help="bbox_labels_600_hierarchy.json")
    parser.add_argument(
        "--predictions", required=True, help="ImageID,LabelName,Score,XMin,YMin,XMax,YMax CSV"
    )
    parser.add_argument(
        "--expand-predictions",
        action="store_true",
        help="count each prediction for its class's ancestors too (the trainer's default "
        "step; off: the official evaluator's figure)",
    )
    parser.add_argument("--json", action="store_true", help='{"map": ..., "per_class": {...}}')
    args = parser.parse_args(argv)
    result = evaluate_files(
        args.boxes, args.labels, args.hierarchy, args.predictions, args.expand_predictions
    )
    if args.json:
        json.dump({"map": result.map, "per_class": result.per_class}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    scored = {mid: ap for mid, ap in result.per_class.items() if ap is not None}
    print(f"mAP@0.5 {result.map:.6f} over {len(scored)} classes with ground truth")
    for mid, ap in sorted(scored.items()):
        print(f"{ap:.6f}  {mid}")
    return 0
