"""The Open Images challenge detection metric (OID mAP@0.5), numpy only.

Two steps, kept apart so each can be checked against its reference:

1. ``expand_predictions`` (ours, on by default in the trainer: ``--oid-expand-predictions``):
   every detection also counts for each ancestor class of the hierarchy, as a challenge
   participant expands a leaf-class detector's output before submitting (MMDetection's
   ``get_supercategory``). The official evaluator does not do this; with the step off, the figure
   equals the official one on the same predictions.
2. ``oid_average_precisions`` (the official evaluator: the TF Object Detection API's
   ``OpenImagesChallengeEvaluator`` with ``per_image_evaluation.py``, ``group_of_weight=1``, on
   ground truth expanded as ``oid_hierarchical_labels_expansion.py`` does). It scores the
   predictions as given:

- Hierarchy: ground-truth boxes and verified-present image-level labels count for their class and
  every ancestor (``Subcategory`` links of ``bbox_labels_600_hierarchy.json``; ``Part`` links are
  not "is a" and are not followed); verified-absent labels count for the class and every
  descendant.
- Evaluated images: every image with a box or an image-level label, including images that have
  only image-level labels (their verified-absent classes turn detections into false positives).
- Image-level labels: on each image only the classes with a box or a verified label (present or
  absent) are evaluated; detections of any other class are ignored. Without image-level labels
  (COCO, synthetic: exhaustively annotated) every class is evaluated on every image.
- Detections with a zero-area or inverted box (x1 >= x2 or y1 >= y2) are dropped before matching.
- Matching, per image and class, detections in decreasing score order: a detection takes the
  non-group-of box with which its IoU is largest if that IoU >= 0.5 and the box is still free
  (true positive), else it is a false positive, unless its intersection over the *detection's*
  area (IoA) with a group-of box is >= 0.5: then it is absorbed by the group-of box with the
  largest IoA. A group-of box is one true positive at the highest score of the detections it
  absorbed, and only when that score is above 0; absorbed detections are otherwise ignored. Every
  box, group-of or not, counts once in the number of positives.
- AP per class: precision made monotonically non-increasing from the right, summed over the
  recall steps (PASCAL VOC 2010+); classes with no ground truth have no AP (NaN) and stay out of
  the mean; a class with ground truth and no detection has AP 0.
- Ties: equal scores keep their input order (a stable sort). The official code sorts with
  numpy's default (unstable) sort, so its order among ties depends on the machine and the numpy
  build; on tied scores the two may differ, on untied scores they agree.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from trainer.errors import ConfigError

IOU_THRESHOLD = 0.5
HIERARCHY_FILE = "bbox_labels_600_hierarchy.json"
VAL_IMAGE_LABELS = "validation-annotations-human-imagelabels-boxable.csv"

Boxes = np.ndarray  # float [n, 4] x1, y1, x2, y2 (any unit, the same for boxes and detections)


@dataclass(frozen=True)
class ClassHierarchy:
    """For labels 1..K: ancestors (each label included) and descendants, as lists of arrays."""

    ancestors: list[np.ndarray]  # index label; [0] is unused
    descendants: list[np.ndarray]
    # Flattened (offsets, values) copies, so expanding N labels is a few numpy calls.
    _up: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False, compare=False)
    _down: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False, compare=False)

    @classmethod
    def flat(cls, num_classes: int) -> ClassHierarchy:
        own = [np.array([k], np.int64) for k in range(num_classes + 1)]
        return cls(own, own)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_up", _flatten(self.ancestors))
        object.__setattr__(self, "_down", _flatten(self.descendants))

    def expand_up(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(expanded labels, index of the source row of each): every label and its ancestors."""
        return _expand(*self._up, labels)

    def expand_down(self, labels: np.ndarray) -> np.ndarray:
        return _expand(*self._down, labels)[0]


def _flatten(lists: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(lists) + 1, np.int64)
    np.cumsum([len(x) for x in lists], out=offsets[1:])
    values = np.concatenate(lists).astype(np.int64) if lists else np.zeros(0, np.int64)
    return offsets, values


def _expand(
    offsets: np.ndarray, values: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    labels = np.asarray(labels, np.int64).reshape(-1)
    counts = offsets[labels + 1] - offsets[labels]
    rows = np.repeat(np.arange(len(labels)), counts)
    first = np.repeat(offsets[labels], counts)
    within = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    return values[first + within], rows


def read_hierarchy(path: str, mids: Sequence[str]) -> ClassHierarchy:
    """The hierarchy JSON restricted to the classes ``mids`` (label k is mids[k-1]).

    Ancestry passes through classes outside ``mids`` (with a class subset, Car still counts for
    Vehicle when Land vehicle is left out). The root (Entity) is not a class.
    """
    try:
        with open(path, encoding="utf-8") as f:
            root = json.load(f)
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: class hierarchy not found; --eval-metric oid needs Open Images' "
            f"{HIERARCHY_FILE} in the data root (or use --eval-metric coco)"
        ) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the class hierarchy JSON ({exc})") from None
    parents: dict[str, set[str]] = {}

    def walk(node: object, parent: str | None, where: str) -> None:
        if not isinstance(node, dict) or not isinstance(node.get("LabelName"), str):
            raise ConfigError(f"{path}: {where}: expected an object with a LabelName string")
        mid = node["LabelName"]
        if parent is not None:
            parents.setdefault(mid, set()).add(parent)
        children = node.get("Subcategory", [])
        if not isinstance(children, list):
            raise ConfigError(f"{path}: {where}.Subcategory ({mid}) must be a list")
        for k, child in enumerate(children):
            walk(child, mid, f"{where}.Subcategory[{k}]")

    walk(root, None, "root")
    label_of = {mid: k + 1 for k, mid in enumerate(mids)}

    def ancestors_of(mid: str, seen: set[str]) -> set[str]:
        for parent in parents.get(mid, ()):
            if parent not in seen:
                seen.add(parent)
                ancestors_of(parent, seen)
        return seen

    ancestors = [np.zeros(0, np.int64)]
    descendants: list[list[int]] = [[] for _ in range(len(mids) + 1)]
    for k, mid in enumerate(mids, start=1):
        up = sorted({k} | {label_of[m] for m in ancestors_of(mid, set()) if m in label_of})
        ancestors.append(np.array(up, np.int64))
        for a in up:
            descendants[a].append(k)
    return ClassHierarchy(ancestors, [np.array(sorted(d), np.int64) for d in descendants])


@dataclass(frozen=True)
class ImageLabels:
    """Verified image-level labels of each evaluated image (class labels 1..K, unexpanded)."""

    positive: list[np.ndarray]
    negative: list[np.ndarray]


def image_label_rows(path: str) -> Iterator[tuple[int, str, str, str]]:
    """(line, ImageID, LabelName, Confidence text) of each row of an image-level labels CSV."""
    if not os.path.isfile(path):
        raise ConfigError(
            f"{path}: image-level labels not found; --eval-metric oid needs Open Images' "
            f"{VAL_IMAGE_LABELS} in the data root (or use --eval-metric coco)"
        )
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = [h.strip().lstrip("\ufeff") for h in next(reader, [])]
        needed = ("ImageID", "LabelName", "Confidence")
        if any(c not in header for c in needed):
            raise ConfigError(
                f"{path}:1: header lacks {','.join(c for c in needed if c not in header)}; "
                "expected ImageID,Source,LabelName,Confidence"
            )
        c_id, c_label, c_conf = (header.index(c) for c in needed)
        width = max(c_id, c_label, c_conf) + 1
        for row in reader:
            if not row:
                continue
            if len(row) < width:
                raise ConfigError(
                    f"{path}:{reader.line_num}: malformed row {','.join(row)!r}; expected "
                    "ImageID,Source,LabelName,Confidence"
                )
            yield reader.line_num, row[c_id], row[c_label], row[c_conf]


def labelled_image_ids(path: str, mids: Sequence[str]) -> list[str]:
    """Images with an image-level label (present or absent) of one of ``mids``, in file order:
    the official pipeline evaluates them even when they have no box."""
    wanted = set(mids)
    return list(dict.fromkeys(i for _, i, mid, _ in image_label_rows(path) if mid in wanted))


def read_image_labels(path: str, image_ids: Sequence[str], mids: Sequence[str]) -> ImageLabels:
    """``ImageID,Source,LabelName,Confidence`` rows (1 present, 0 absent) for ``image_ids``.

    Labels of classes outside ``mids`` and rows of other images are skipped.
    """
    row_of = {image_id: i for i, image_id in enumerate(image_ids)}
    label_of = {mid: k + 1 for k, mid in enumerate(mids)}
    positive: list[list[int]] = [[] for _ in image_ids]
    negative: list[list[int]] = [[] for _ in image_ids]
    for line, image_id, mid, text in image_label_rows(path):
        i = row_of.get(image_id)
        label = label_of.get(mid) if i is not None else None
        if i is None or label is None:
            continue
        try:
            confidence = float(text)
        except ValueError:
            raise ConfigError(
                f"{path}:{line}: Confidence {text!r} is not a number (1 verified present, "
                "0 verified absent)"
            ) from None
        (positive if confidence > 0 else negative)[i].append(label)
    return ImageLabels(
        [np.unique(np.array(x, np.int64)) for x in positive],
        [np.unique(np.array(x, np.int64)) for x in negative],
    )


@dataclass(frozen=True)
class OidAnnotations:
    """What the OID metric needs beyond the boxes: the hierarchy and the image-level labels
    (aligned with the evaluated index's images). None for either: flat classes / exhaustive."""

    hierarchy: ClassHierarchy | None
    image_labels: ImageLabels | None


def _areas(boxes: Boxes) -> np.ndarray:
    return np.maximum(boxes[:, 2] - boxes[:, 0], 0) * np.maximum(boxes[:, 3] - boxes[:, 1], 0)


def _intersections(a: Boxes, b: Boxes) -> np.ndarray:
    w = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    h = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    return np.maximum(w, 0) * np.maximum(h, 0)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def match_image_class(
    det_boxes: Boxes,
    det_scores: np.ndarray,
    gt_boxes: Boxes,
    gt_group_of: np.ndarray,
    iou_threshold: float = IOU_THRESHOLD,
) -> tuple[np.ndarray, np.ndarray]:
    """(scores, tp flags) of the entries this image adds to one class's ranked list.

    Unabsorbed detections give one entry each (TP or FP); each group-of box that absorbed
    detections gives one TP entry at their highest score.
    """
    order = np.argsort(-det_scores, kind="stable")
    boxes, scores = det_boxes[order].astype(np.float64), det_scores[order].astype(np.float64)
    gt_boxes = gt_boxes.astype(np.float64)
    gt_group_of = gt_group_of.astype(bool)
    n = len(boxes)
    tp = np.zeros(n, bool)
    absorbed = np.zeros(n, bool)
    plain, group = gt_boxes[~gt_group_of], gt_boxes[gt_group_of]
    if len(plain) and n:
        inter = _intersections(boxes, plain)
        iou = _ratio(inter, _areas(boxes)[:, None] + _areas(plain)[None, :] - inter)
        best = iou.argmax(axis=1)
        taken = np.zeros(len(plain), bool)
        for i in range(n):
            g = best[i]
            if iou[i, g] >= iou_threshold and not taken[g]:
                tp[i] = taken[g] = True
    group_scores = np.zeros(0)
    if len(group) and n:
        ioa = _ratio(_intersections(boxes, group), _areas(boxes)[:, None])
        best = ioa.argmax(axis=1)
        inside = ~tp & (ioa[np.arange(n), best] >= iou_threshold)
        absorbed = inside
        # As the official code: a group-of box's score starts at 0 and it counts only above 0.
        top = np.zeros(len(group))
        np.maximum.at(top, best[inside], scores[inside])
        group_scores = top[top > 0]
    keep = ~absorbed
    return (
        np.concatenate([scores[keep], group_scores]),
        np.concatenate([tp[keep], np.ones(len(group_scores), bool)]),
    )


def average_precision(scores: np.ndarray, tp: np.ndarray, num_positives: int) -> float:
    """VOC 2010+ AP of a ranked list (NaN without positives)."""
    if num_positives <= 0:
        return float("nan")
    order = np.argsort(-scores, kind="stable")
    hits = tp[order].astype(np.float64)
    cum_tp = np.cumsum(hits)
    precision = cum_tp / np.arange(1, len(hits) + 1)
    recall = cum_tp / num_positives
    precision = np.concatenate([[0.0], precision, [0.0]])
    recall = np.concatenate([[0.0], recall, [1.0]])
    precision = np.maximum.accumulate(precision[::-1])[::-1]
    steps = np.flatnonzero(recall[1:] != recall[:-1]) + 1
    return float(np.sum((recall[steps] - recall[steps - 1]) * precision[steps]))


@dataclass
class ImageGroundTruth:
    boxes: Boxes
    labels: np.ndarray  # int, 1..K
    group_of: np.ndarray  # bool
    positive: np.ndarray | None = None  # verified present image-level labels (None: exhaustive)
    negative: np.ndarray | None = None  # verified absent


def oid_average_precisions(
    ground_truth: Sequence[ImageGroundTruth],
    detections: Sequence[tuple[Boxes, np.ndarray, np.ndarray]],
    num_classes: int,
    hierarchy: ClassHierarchy | None = None,
    iou_threshold: float = IOU_THRESHOLD,
) -> tuple[np.ndarray, np.ndarray]:
    """(AP of labels 1..K, positives of labels 1..K); ``detections[i]`` = (boxes, scores, labels)
    of image i, scored as given (``expand_predictions`` first for credit on parent classes).
    AP is NaN for a class without ground truth."""
    hierarchy = hierarchy or ClassHierarchy.flat(num_classes)
    scores: list[list[np.ndarray]] = [[] for _ in range(num_classes + 1)]
    hits: list[list[np.ndarray]] = [[] for _ in range(num_classes + 1)]
    positives = np.zeros(num_classes + 1, np.int64)
    for gt, (d_boxes, d_scores, d_labels) in zip(ground_truth, detections, strict=True):
        g_labels, g_rows = hierarchy.expand_up(gt.labels)
        g_boxes = np.asarray(gt.boxes, np.float64).reshape(-1, 4)[g_rows]
        g_group = np.asarray(gt.group_of, bool)[g_rows]
        np.add.at(positives, g_labels, 1)
        d_boxes = np.asarray(d_boxes, np.float64).reshape(-1, 4)
        d_scores = np.asarray(d_scores, np.float64).reshape(-1)
        d_labels = np.asarray(d_labels, np.int64).reshape(-1)
        proper = (d_boxes[:, 0] < d_boxes[:, 2]) & (d_boxes[:, 1] < d_boxes[:, 3])
        d_boxes, d_scores, d_labels = d_boxes[proper], d_scores[proper], d_labels[proper]
        if gt.positive is not None or gt.negative is not None:
            verified = [g_labels]
            if gt.positive is not None:
                verified.append(hierarchy.expand_up(gt.positive)[0])
            if gt.negative is not None:
                verified.append(hierarchy.expand_down(gt.negative))
            evaluated = np.isin(d_labels, np.concatenate(verified))
            d_labels, d_boxes, d_scores = (
                d_labels[evaluated],
                d_boxes[evaluated],
                d_scores[evaluated],
            )
        for c in np.unique(d_labels):
            mine, theirs = d_labels == c, g_labels == c
            s, t = match_image_class(
                d_boxes[mine], d_scores[mine], g_boxes[theirs], g_group[theirs], iou_threshold
            )
            scores[c].append(s)
            hits[c].append(t)
    aps = np.full(num_classes, np.nan)
    for c in range(1, num_classes + 1):
        if positives[c] == 0:
            continue
        s = np.concatenate(scores[c]) if scores[c] else np.zeros(0)
        t = np.concatenate(hits[c]) if hits[c] else np.zeros(0, bool)
        aps[c - 1] = average_precision(s, t, int(positives[c]))
    return aps, positives[1:]


def expand_predictions(
    detections: Sequence[tuple[Boxes, np.ndarray, np.ndarray]], hierarchy: ClassHierarchy
) -> list[tuple[Boxes, np.ndarray, np.ndarray]]:
    """Each detection repeated for its class and every ancestor of it, same box and score:
    the prediction step that gives a leaf-class detector credit on parent classes."""
    expanded = []
    for boxes, scores, labels in detections:
        up, rows = hierarchy.expand_up(np.asarray(labels, np.int64))
        expanded.append(
            (
                np.asarray(boxes, np.float64).reshape(-1, 4)[rows],
                np.asarray(scores, np.float64).reshape(-1)[rows],
                up,
            )
        )
    return expanded


def oid_map(aps: np.ndarray) -> float:
    """The mean over classes that have ground truth (0.0 when none has)."""
    valid = aps[~np.isnan(aps)]
    return float(valid.mean()) if len(valid) else 0.0
