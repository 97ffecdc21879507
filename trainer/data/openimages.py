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
import io
import os
from array import array
from collections.abc import Sequence
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


CHUNK_BYTES = 64 << 20  # the box CSV is read in blocks of whole lines of about this size


@dataclass
class _Columns:
    """Where the needed fields sit in a row, and how labels map (shared by both parse paths)."""

    path: str
    count: int
    image: int
    label: int
    group: int
    coords: tuple[int, ...]  # the 4 of XMin, YMin, XMax, YMax: stored as x1, y1, x2, y2
    label_of: dict[str, int]
    all_mids: set[str]
    group_of: str


_COORD_NAMES = ("XMin", "YMin", "XMax", "YMax")


def parse_boxes(
    path: str, classes: ClassTable, all_mids: set[str], group_of: str, stats: ParseStats
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stream the box CSV into compact arrays: (image_ids, image_of_box, boxes, labels, group_of).

    The file is read in blocks of whole lines; a block whose rows all have the header's column
    count and no quotes is split with numpy (field boundaries from the comma positions, numbers
    parsed by numpy's string-to-float cast), any other block goes through the ``csv`` module row
    by row, which also names the line of a malformed row. No Python object per box survives.
    Images are numbered in ImageID order (the official files are sorted by ImageID already).
    """
    if not os.path.isfile(path):
        raise ConfigError(f"{path}: box annotation file not found")
    ids, labels, coords, groups = [], [], [], []
    with open(path, "rb") as f:
        cols = _read_header(path, f.readline(), classes, all_mids, group_of)
        line_no, rest = 1, b""
        while True:
            block = f.read(CHUNK_BYTES)
            data = rest + block
            if block:
                cut = data.rfind(b"\n") + 1
                data, rest = data[:cut], data[cut:]
            if data:
                part = _parse_block(data, line_no + 1, cols, stats)
                ids.append(part[0])
                labels.append(part[1])
                coords.append(part[2])
                groups.append(part[3])
                line_no += data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
            if not block:
                break
    all_ids = np.concatenate(ids) if ids else np.zeros(0, "S16")
    image_ids, image_of_box = _number_images(all_ids)
    return (
        image_ids,
        image_of_box,
        np.concatenate(coords).reshape(-1, 4) if coords else np.zeros((0, 4), np.float32),
        np.concatenate(labels) if labels else np.zeros(0, np.int32),
        np.concatenate(groups) if groups else np.zeros(0, np.uint8),
    )


def _read_header(
    path: str, line: bytes, classes: ClassTable, all_mids: set[str], group_of: str
) -> _Columns:
    if not line.strip():
        raise ConfigError(
            f"{path}: empty file, expected a header with {','.join(REQUIRED_COLUMNS)}"
        )
    header = next(csv.reader([line.decode("utf-8-sig").rstrip("\r\n")]))
    header = [h.strip().lstrip("\ufeff") for h in header]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise ConfigError(
            f"{path}:1: header lacks {','.join(missing)} (found {','.join(header[:6])}...); "
            "expected the Open Images box CSV columns ImageID,Source,LabelName,Confidence,"
            "XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,IsGroupOf,..."
        )
    col = {name: header.index(name) for name in REQUIRED_COLUMNS}
    return _Columns(
        path,
        len(header),
        col["ImageID"],
        col["LabelName"],
        col["IsGroupOf"],
        tuple(col[n] for n in _COORD_NAMES),
        classes.label_of(),
        all_mids,
        group_of,
    )


_Part = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # ids, labels, coords, group flags


def _parse_block(data: bytes, first_line: int, cols: _Columns, stats: ParseStats) -> _Part:
    """One block of whole lines; ``first_line`` is the file line number of its first line."""
    fast = None if b'"' in data else _split_fields(data, cols.count)
    if fast is None:
        return _parse_block_rows(data, first_line, cols, stats)
    buf, starts, ends, commas, lines = fast
    lines = lines + first_line

    def fields(column: int) -> tuple[np.ndarray, np.ndarray]:
        begin = starts if column == 0 else commas[:, column - 1] + 1
        return begin, ends if column == cols.count - 1 else commas[:, column]

    try:
        xyxy = np.stack([_gather(buf, *fields(c)).astype(np.float64) for c in cols.coords], 1)
    except ValueError:
        return _parse_block_rows(data, first_line, cols, stats)  # it names the bad line
    stats.rows += len(lines)
    bad = ~((xyxy >= -BOX_EPSILON) & (xyxy <= 1 + BOX_EPSILON))
    if bad.any():
        row, k = np.argwhere(bad)[0]
        raise ConfigError(
            f"{cols.path}:{lines[row]}: {_COORD_NAMES[k]}={xyxy[row, k]} is outside [0, 1] "
            "(Open Images coordinates are normalised)"
        )
    mids, inverse = np.unique(_gather(buf, *fields(cols.label)), return_inverse=True)
    table = np.zeros(len(mids), np.int32)
    for u, mid in enumerate(mids.tolist()):
        name = mid.decode("utf-8", "replace")
        label = cols.label_of.get(name)
        if label is None and name not in cols.all_mids:
            row = int(np.flatnonzero(inverse == u)[0])
            raise ConfigError(
                f"{cols.path}:{lines[row]}: LabelName {name!r} is not in the class file; "
                "use the class file that matches this annotation file"
            )
        table[u] = label or 0
    labels = table[inverse.reshape(-1)]
    g_start, g_end = fields(cols.group)
    is_group = (g_end - g_start == 1) & (buf[np.minimum(g_start, len(buf) - 1)] == ord("1"))
    keep = labels > 0
    stats.other_classes += int((~keep).sum())
    if cols.group_of == "drop":
        dropped = keep & is_group
        stats.group_of_dropped += int(dropped.sum())
        keep &= ~is_group
    xyxy = np.clip(xyxy, 0.0, 1.0)
    proper = (xyxy[:, 2] > xyxy[:, 0]) & (xyxy[:, 3] > xyxy[:, 1])
    stats.degenerate += int((keep & ~proper).sum())
    keep &= proper
    ids = _gather(buf, *fields(cols.image))[keep]
    return ids, labels[keep], xyxy[keep].astype(np.float32), is_group[keep].astype(np.uint8)


def _split_fields(
    data: bytes, count: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(bytes, row starts, row ends, comma positions [rows, count - 1], line offsets in the block)
    of the non-empty lines, or None when some row does not have exactly ``count`` fields."""
    if not data.endswith(b"\n"):
        data += b"\n"
    buf = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(buf == 10)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lines = np.arange(len(ends))
    ends = ends - ((ends > starts) & (buf[ends - 1] == 13))  # CRLF
    nonempty = ends > starts
    starts, ends, lines = starts[nonempty], ends[nonempty], lines[nonempty]
    found = np.flatnonzero(buf == 44)
    if len(found) != len(starts) * (count - 1):
        return None
    commas = found.reshape(len(starts), count - 1)
    if len(starts) and not ((commas[:, 0] >= starts).all() and (commas[:, -1] < ends).all()):
        return None  # the counts add up but some row has too many and another too few
    return buf, starts, ends, commas, lines


def _gather(buf: np.ndarray, begin: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The byte fields buf[begin:end] of every row as one fixed-width bytes array."""
    length = end - begin
    width = max(int(length.max()) if len(length) else 0, 1)
    pos = np.arange(width)
    inside = pos < length[:, None]
    chars = np.where(inside, buf[np.where(inside, begin[:, None] + pos, 0)], 0)
    return chars.astype(np.uint8).view(f"S{width}").reshape(-1)


def _parse_block_rows(data: bytes, first_line: int, cols: _Columns, stats: ParseStats) -> _Part:
    """The row-by-row path (quoted fields, ragged rows): exact errors with the line number."""
    ids: list[bytes] = []
    coords = array("f")
    labels = array("i")
    groups = array("B")
    reader = csv.reader(io.StringIO(data.decode("utf-8")))
    x1_col, y1_col, x2_col, y2_col = cols.coords
    for row in reader:
        if not row:
            continue
        line_no = first_line + reader.line_num - 1
        stats.rows += 1
        try:
            mid = row[cols.label]
            xyxy = [float(row[c]) for c in cols.coords]
            is_group = row[cols.group].strip() == "1"
            image_id = row[cols.image]
        except (IndexError, ValueError):
            raise ConfigError(
                f"{cols.path}:{line_no}: malformed row {','.join(row[:8])!r}"
            ) from None
        for name, v in zip(_COORD_NAMES, xyxy, strict=True):
            if not -BOX_EPSILON <= v <= 1 + BOX_EPSILON:
                raise ConfigError(
                    f"{cols.path}:{line_no}: {name}={v} is outside [0, 1] "
                    "(Open Images coordinates are normalised)"
                )
        label = cols.label_of.get(mid)
        if label is None:
            if mid not in cols.all_mids:
                raise ConfigError(
                    f"{cols.path}:{line_no}: LabelName {mid!r} is not in the class file; "
                    "use the class file that matches this annotation file"
                )
            stats.other_classes += 1
            continue
        if is_group and cols.group_of == "drop":
            stats.group_of_dropped += 1
            continue
        x1, y1, x2, y2 = (min(max(v, 0.0), 1.0) for v in xyxy)
        if x2 <= x1 or y2 <= y1:
            stats.degenerate += 1
            continue
        ids.append(image_id.encode())
        coords.extend((x1, y1, x2, y2))
        labels.append(label)
        groups.append(1 if is_group else 0)
    return (
        np.array(ids, dtype="S") if ids else np.zeros(0, "S1"),
        np.frombuffer(labels, dtype=np.int32).copy(),
        np.frombuffer(coords, dtype=np.float32).reshape(-1, 4).copy(),
        np.frombuffer(groups, dtype=np.uint8).copy(),
    )


def _number_images(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct ids in sorted order, image number of every row), without a Python dict."""
    if len(ids) == 0:
        return np.zeros(0, "S16"), np.zeros(0, np.int64)
    order = None
    if not (ids[1:] >= ids[:-1]).all():  # the official files are sorted: no sort needed
        width = -(-ids.dtype.itemsize // 8) * 8
        words = ids.astype(f"S{width}").view(">u8").reshape(len(ids), -1)
        order = np.lexsort(words.T[::-1])  # bytewise order, the first word most significant
        ids = ids[order]
    new = np.ones(len(ids), bool)
    new[1:] = ids[1:] != ids[:-1]
    image_ids = ids[new]
    numbers = np.cumsum(new) - 1
    if order is not None:
        unsorted = np.empty_like(numbers)
        unsorted[order] = numbers
        numbers = unsorted
    return image_ids, numbers.astype(np.int64)


def build_openimages_index(
    boxes_csv: str,
    classes_csv: str,
    images_dir: str | None,
    keep_classes: str | None,
    group_of: str,
    strict: bool,
    label_only_ids: Sequence[str] = (),
) -> tuple[DetectionIndex, ParseStats]:
    """Parse one split. Images are read for their header only (size), never decoded.

    ``images_dir=None`` skips the header scan: sizes stay 0 (unknown) and no image is checked.
    ``label_only_ids``: images to add without boxes unless they have some (the OID metric
    evaluates images that have only image-level labels); they go last, from
    ``meta["label_only_start"]`` on.
    """
    if images_dir is not None and not os.path.isdir(images_dir):
        raise ConfigError(
            f"{images_dir}: images directory not found (expected <ImageID>.jpg files)"
        )
    all_classes = read_classes(classes_csv)
    classes = read_classes(classes_csv, keep_classes) if keep_classes else all_classes
    stats = ParseStats()
    image_ids, img_of_box, boxes, labels, groups = parse_boxes(
        boxes_csv, classes, set(all_classes.mids), group_of, stats
    )
    boxed = set(image_ids.tolist())
    extra = [i.encode() for i in dict.fromkeys(label_only_ids) if i.encode() not in boxed]
    if extra:
        image_ids = np.concatenate([image_ids, np.array(extra, image_ids.dtype)])
    file_names = np.char.add(image_ids, b".jpg") if len(image_ids) else image_ids
    index = build_from_rows(img_of_box, file_names, boxes, labels, groups, classes.names)
    first_extra = np.zeros(len(image_ids), bool)
    first_extra[len(image_ids) - len(extra) :] = True
    if label_only_ids:
        index.meta["label_only_start"] = len(image_ids) - len(extra)
    if images_dir is None:
        return index, stats
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
        if label_only_ids:
            index.meta["label_only_start"] = int((~first_extra & ~unreadable).sum())
    return index, stats
