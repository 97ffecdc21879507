"""Open Images V7 boxes from the official files, parsed once into a flat index.

Files (as the download page names them; every one can be pointed at elsewhere):
  DATA_ROOT/oidv6-train-annotations-bbox.csv      train boxes (13 columns + 8 XClick columns)
  DATA_ROOT/validation-annotations-bbox.csv       validation boxes (13 columns)
  DATA_ROOT/oidv7-class-descriptions-boxable.csv  LabelName,DisplayName (header optional)
  DATA_ROOT/train/<ImageID>.jpg, DATA_ROOT/validation/<ImageID>.jpg  (the downloader's flat folders)

Coordinates are normalised, in XMin, XMax, YMin, YMax column order.
"""

from __future__ import annotations

import csv
import os
from array import array
from dataclasses import dataclass

import numpy as np

from trainer.data.index import DetectionIndex, build_from_rows, read_image_sizes
from trainer.errors import ConfigError

TRAIN_BOXES = "oidv6-train-annotations-bbox.csv"
VAL_BOXES = "validation-annotations-bbox.csv"
CLASSES = "oidv7-class-descriptions-boxable.csv"
REQUIRED_COLUMNS = ("ImageID", "LabelName", "XMin", "XMax", "YMin", "YMax", "IsGroupOf")
BOX_EPSILON = 1e-6  # tolerance for coordinates printed as 1.0000001


@dataclass(frozen=True)
class ClassTable:
    mids: list[str]  # label k is mids[k-1]
    names: list[str]

    def label_of(self) -> dict[str, int]:
        return {mid: k + 1 for k, mid in enumerate(self.mids)}


@dataclass
class ParseStats:
    rows: int = 0
    degenerate: int = 0
    group_of_dropped: int = 0
    other_classes: int = 0
    missing_images: int = 0


def read_classes(path: str, keep: str | None = None) -> ClassTable:
    """The boxable class list; ``keep`` is a comma list of display names or MIDs to keep."""
    if not os.path.isfile(path):
        raise ConfigError(f"{path}: class file not found (Open Images {CLASSES})")
    mids: list[str] = []
    names: list[str] = []
    with open(path, newline="", encoding="utf-8") as f:
        for line_no, row in enumerate(csv.reader(f), start=1):
            if not row:
                continue
            if len(row) < 2:
                raise ConfigError(
                    f"{path}:{line_no}: expected LabelName,DisplayName, got {','.join(row)!r}"
                )
            mid = row[0].strip()
            if line_no == 1 and not mid.startswith(("/m/", "/g/")):
                continue  # a header row (LabelName,DisplayName); older copies have none
            mids.append(mid)
            names.append(row[1].strip())
    if not mids:
        raise ConfigError(f"{path}: no classes found")
    if keep:
        wanted = [w.strip() for w in keep.split(",") if w.strip()]
        by_key = {n.lower(): i for i, n in enumerate(names)} | {m: i for i, m in enumerate(mids)}
        chosen = []
        for w in wanted:
            i = by_key.get(w) if w in by_key else by_key.get(w.lower())
            if i is None:
                raise ConfigError(f"--classes: {w!r} is neither a DisplayName nor a MID in {path}")
            chosen.append(i)
        chosen = sorted(set(chosen))
        mids = [mids[i] for i in chosen]
        names = [names[i] for i in chosen]
    return ClassTable(mids, names)


def parse_boxes(
    path: str, classes: ClassTable, all_mids: set[str], group_of: str, stats: ParseStats
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stream the box CSV into compact arrays: (image_ids, image_of_box, boxes, labels, group_of).

    Every box becomes a few numbers in typed arrays (no Python object per box survives).
    """
    if not os.path.isfile(path):
        raise ConfigError(f"{path}: box annotation file not found")
    label_of = classes.label_of()
    image_idx: dict[str, int] = {}
    img_of_box = array("q")
    coords = array("f")
    labels = array("i")
    groups = array("B")
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise ConfigError(
                f"{path}: empty file, expected a header with {','.join(REQUIRED_COLUMNS)}"
            )
        header = [h.strip().lstrip("\ufeff") for h in header]
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise ConfigError(
                f"{path}:1: header lacks {','.join(missing)} (found {','.join(header[:6])}...); "
                "expected the Open Images box CSV columns ImageID,Source,LabelName,Confidence,"
                "XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,IsGroupOf,..."
            )
        col = {name: header.index(name) for name in REQUIRED_COLUMNS}
        c_id, c_label, c_group = col["ImageID"], col["LabelName"], col["IsGroupOf"]
        c_coords = (col["XMin"], col["YMin"], col["XMax"], col["YMax"])  # stored as x1, y1, x2, y2
        names = ("XMin", "YMin", "XMax", "YMax")
        for line_no, row in enumerate(reader, start=2):
            if not row:
                continue
            stats.rows += 1
            try:
                mid = row[c_label]
                xyxy = [float(row[c]) for c in c_coords]
                is_group = row[c_group].strip() == "1"
                image_id = row[c_id]
            except (IndexError, ValueError):
                raise ConfigError(
                    f"{path}:{line_no}: malformed row {','.join(row[:8])!r}"
                ) from None
            for name, v in zip(names, xyxy, strict=True):
                if not -BOX_EPSILON <= v <= 1 + BOX_EPSILON:
                    raise ConfigError(
                        f"{path}:{line_no}: {name}={v} is outside [0, 1] "
                        "(Open Images coordinates are normalised)"
                    )
            label = label_of.get(mid)
            if label is None:
                if mid not in all_mids:
                    raise ConfigError(
                        f"{path}:{line_no}: LabelName {mid!r} is not in the class file; "
                        "use the class file that matches this annotation file"
                    )
                stats.other_classes += 1
                continue
            if is_group and group_of == "drop":
                stats.group_of_dropped += 1
                continue
            x1, y1, x2, y2 = (min(max(v, 0.0), 1.0) for v in xyxy)
            if x2 <= x1 or y2 <= y1:
                stats.degenerate += 1
                continue
            idx = image_idx.setdefault(image_id, len(image_idx))
            img_of_box.append(idx)
            coords.extend((x1, y1, x2, y2))
            labels.append(label)
            groups.append(1 if is_group else 0)
    image_ids = np.array(list(image_idx), dtype="S") if image_idx else np.zeros(0, dtype="S16")
    return (
        image_ids,
        np.frombuffer(img_of_box, dtype=np.int64),
        np.frombuffer(coords, dtype=np.float32).reshape(-1, 4),
        np.frombuffer(labels, dtype=np.int32),
        np.frombuffer(groups, dtype=np.uint8),
    )


def build_openimages_index(
    boxes_csv: str,
    classes_csv: str,
    images_dir: str,
    keep_classes: str | None,
    group_of: str,
    strict: bool,
) -> tuple[DetectionIndex, ParseStats]:
    """Parse one split. Images are read for their header only (size), never decoded."""
    if not os.path.isdir(images_dir):
        raise ConfigError(
            f"{images_dir}: images directory not found (expected <ImageID>.jpg files)"
        )
    all_classes = read_classes(classes_csv)
    classes = read_classes(classes_csv, keep_classes) if keep_classes else all_classes
    stats = ParseStats()
    image_ids, img_of_box, boxes, labels, groups = parse_boxes(
        boxes_csv, classes, set(all_classes.mids), group_of, stats
    )
    file_names = np.char.add(image_ids, b".jpg") if len(image_ids) else image_ids
    index = build_from_rows(img_of_box, file_names, boxes, labels, groups, classes.names)
    heights, widths = read_image_sizes(images_dir, index.file_names)
    index.heights, index.widths = heights, widths
    unreadable = heights == 0
    if unreadable.any():
        names = [index.file_name(i) for i in np.flatnonzero(unreadable)[:5]]
        if strict:
            raise ConfigError(
                f"{images_dir}: {int(unreadable.sum())} listed image(s) missing or unreadable, "
                f"e.g. {', '.join(names)} (--strict)"
            )
        stats.missing_images = int(unreadable.sum())
        index = index.select(~unreadable)
    return index, stats
