"""``python -m trainer prepare``: pack a split into tar shards plus ``manifest.json``, once, offline.

Annotations come from the same readers the file-per-image path uses (Open Images CSVs, COCO JSON).
Hygiene happens here, once, instead of in every training step:
- every image is decoded in full; a missing or undecodable file is left out, counted and listed;
- width and height are recorded after orientation;
- EXIF orientation (tags 2-8) is applied to the pixels and to the boxes (both read in the stored
  pixel frame), and the image is re-encoded as JPEG without the tag; images without a rotation
  keep their original bytes;
- exact duplicates (same file bytes, sha256) are dropped, the first in annotation order kept;
- train splits drop images left without boxes; validation splits keep them.
Each shard is written to a temporary file, fsynced and renamed (trainer/files.py); the manifest is
written last, the same way, so a preparation cut short never leaves a manifest naming half shards.

``python -m trainer verify --manifest M`` re-reads every shard and checks counts and checksums.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import sys
import tarfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, BinaryIO, TypedDict

import numpy as np
from PIL import Image, ImageOps

from trainer.config import parse_size
from trainer.data.coco import build_coco_index
from trainer.data.index import DetectionIndex, build_from_rows
from trainer.data.openimages import (
    CLASSES,
    TRAIN_BOXES,
    VAL_BOXES,
    ParseStats,
    parse_boxes,
    read_classes,
)
from trainer.data.shards import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    READ_CHUNK,
    ShardEntry,
    content_version,
    load_manifest,
    tar_member,
    verify_manifest,
)
from trainer.errors import ConfigError, TrainerError
from trainer.files import atomic_open_binary, atomic_write

ORIENTATION_TAG = 0x0112
DEFAULT_SPLIT_DIRS = {
    "openimages": {"train": "train", "validation": "validation"},
    "coco": {"train": "train2017", "validation": "val2017"},
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m trainer prepare",
        description="Pack one split into tar shards (KEY.jpg + KEY.json) and a manifest.json.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--dataset", required=True, choices=("openimages", "coco"))
    parser.add_argument("--data-root", help="dataset directory (the trainer's layout)")
    parser.add_argument("--split", required=True, choices=("train", "validation"))
    parser.add_argument("--out", required=True, help="directory for the shards and manifest.json")
    parser.add_argument("--shard-size", default="1GB", help="target shard size (1GB, 512MB, ...)")
    parser.add_argument("--classes", help="keep only these classes: comma list of names or MIDs")
    parser.add_argument(
        "--group-of", default="positive", choices=("positive", "drop"), help="Open Images group-of"
    )
    parser.add_argument(
        "--annotations", help="box CSV (Open Images) or instances JSON (COCO) of the split"
    )
    parser.add_argument("--oid-classes-file", help="Open Images class CSV")
    parser.add_argument("--images", help="the split's images directory")
    parser.add_argument(
        "--threads", type=int, default=min(8, os.cpu_count() or 1), help="decode threads"
    )
    parser.add_argument(
        "--jpeg-quality", type=int, default=95, help="quality when re-encoding a rotated image"
    )
    parser.add_argument("--debug", action="store_true", help="tracebacks on errors")
    return parser


@dataclass
class Report:
    listed: int = 0
    samples: int = 0
    boxes: int = 0
    rotated: int = 0
    reencoded: int = 0
    without_boxes: int = 0
    missing: list[str] = field(default_factory=list)
    corrupt: list[dict[str, str]] = field(default_factory=list)
    duplicates: list[dict[str, str]] = field(default_factory=list)


@dataclass
class Source:
    index: DetectionIndex
    images_dir: str
    classes: list[dict[str, object]]
    files: list[str]
    stats: Mapping[str, object]


# ---------------------------------------------------------------------------------------- sources
def _load_openimages(args: argparse.Namespace) -> Source:
    root = args.data_root or "."
    classes_csv = args.oid_classes_file or os.path.join(root, CLASSES)
    boxes_csv = args.annotations or os.path.join(
        root, TRAIN_BOXES if args.split == "train" else VAL_BOXES
    )
    all_classes = read_classes(classes_csv)
    table = read_classes(classes_csv, args.classes) if args.classes else all_classes
    stats = ParseStats()
    image_ids, img_of_box, boxes, labels, groups = parse_boxes(
        boxes_csv, table, set(all_classes.mids), args.group_of, stats
    )
    file_names = np.char.add(image_ids, b".jpg") if len(image_ids) else image_ids
    index = build_from_rows(img_of_box, file_names, boxes, labels, groups, table.names)
    classes = [
        {"label": k + 1, "name": name, "id": mid}
        for k, (mid, name) in enumerate(zip(table.mids, table.names, strict=True))
    ]
    return Source(index, "", classes, [classes_csv, boxes_csv], asdict(stats))


def _load_coco(args: argparse.Namespace, images_dir: str) -> Source:
    root = args.data_root or "."
    name = "train2017" if args.split == "train" else "val2017"
    ann = args.annotations or os.path.join(root, "annotations", f"instances_{name}.json")
    index, stats = build_coco_index(ann, images_dir, train=args.split == "train", strict=False)
    names = list(index.class_names)
    if args.classes:
        wanted = [w.strip() for w in args.classes.split(",") if w.strip()]
        lower = {n.lower(): k for k, n in enumerate(names)}
        keep = []
        for w in wanted:
            if w.lower() not in lower:
                raise ConfigError(f"--classes: {w!r} is not a category name in {ann}")
            keep.append(lower[w.lower()])
        keep = sorted(set(keep))
        index = _keep_classes(index, keep)
        names = [names[k] for k in keep]
    classes = [{"label": k + 1, "name": n} for k, n in enumerate(names)]
    return Source(index, images_dir, classes, [ann], stats)


def _keep_classes(index: DetectionIndex, keep: list[int]) -> DetectionIndex:
    """Boxes of the kept classes (0-based positions), renumbered 1..len(keep)."""
    new_label = np.zeros(len(index.class_names) + 1, np.int32)
    new_label[[k + 1 for k in keep]] = np.arange(1, len(keep) + 1)
    mask = new_label[index.labels] > 0
    image_of_box = np.repeat(np.arange(len(index)), index.box_counts())[mask]
    return build_from_rows(
        image_of_box, index.file_names, index.boxes[mask], new_label[index.labels[mask]],
        index.group_of[mask], [index.class_names[k] for k in keep], index.heights, index.widths,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------- hygiene
def orient_boxes(boxes: np.ndarray, orientation: int) -> np.ndarray:
    """Normalised xyxy boxes in the stored frame -> the frame after EXIF ``orientation`` is applied
    (the transforms ``ImageOps.exif_transpose`` applies to the pixels)."""
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    corners = {
        2: (1 - x1, y1, 1 - x2, y2),  # mirror left-right
        3: (1 - x1, 1 - y1, 1 - x2, 1 - y2),  # rotate 180
        4: (x1, 1 - y1, x2, 1 - y2),  # mirror top-bottom
        5: (y1, x1, y2, x2),  # transpose
        6: (1 - y1, x1, 1 - y2, x2),  # rotate 90 clockwise
        7: (1 - y1, 1 - x1, 1 - y2, 1 - x2),  # transverse
        8: (y1, 1 - x1, y2, 1 - x2),  # rotate 90 counter-clockwise
    }.get(orientation)
    if corners is None:
        return boxes
    ax, ay, bx, by = corners
    return np.stack(
        [np.minimum(ax, bx), np.minimum(ay, by), np.maximum(ax, bx), np.maximum(ay, by)], axis=1
    ).astype(np.float32)


@dataclass
class Checked:
    status: str  # ok, missing, corrupt
    error: str = ""
    digest: str = ""
    jpeg: bytes = b""
    width: int = 0
    height: int = 0
    orientation: int = 1
    reencoded: bool = False


def check_image(path: str, quality: int) -> Checked:
    """Read and fully decode one image; apply its EXIF orientation (re-encoding only then)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        return Checked("missing", exc.strerror or str(exc))
    digest = hashlib.sha256(raw).hexdigest()
    try:
        with Image.open(io.BytesIO(raw)) as img:
            orientation = int(img.getexif().get(ORIENTATION_TAG, 1) or 1)
            if not 1 <= orientation <= 8:
                orientation = 1
            img.load()  # the full decode: a truncated or damaged file fails here
            if orientation == 1 and img.format == "JPEG" and img.mode in ("RGB", "L"):
                return Checked("ok", digest=digest, jpeg=raw, width=img.width, height=img.height)
            upright = ImageOps.exif_transpose(img) if orientation != 1 else img
            rgb = upright.convert("RGB")
            out = io.BytesIO()
            rgb.save(out, format="JPEG", quality=quality)
            return Checked(
                "ok", digest=digest, jpeg=out.getvalue(), width=rgb.width, height=rgb.height,
                orientation=orientation, reencoded=True,
            )  # fmt: skip
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        return Checked("corrupt", f"{type(exc).__name__}: {exc}", digest=digest)


def sample_key(file_name: str) -> str:
    """The tar member stem: the file name without extension, with no dots or slashes."""
    stem = os.path.splitext(file_name)[0]
    return stem.replace("/", "_").replace(".", "_")


# ---------------------------------------------------------------------------------------- writing
class HashingWriter:
    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.hash = hashlib.sha256()
        self.count = 0

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        self.count += len(data)
        return self.raw.write(data)


class _OpenShard(TypedDict):
    file: str
    samples: int
    boxes: int
    estimate: int  # bytes the tar will have once closed


class ShardWriter:
    """Rolls over to a new shard once the next sample would pass the target size."""

    def __init__(self, out_dir: str, prefix: str, target_bytes: int) -> None:
        self.out_dir = out_dir
        self.prefix = prefix
        self.target = target_bytes
        self.shards: list[ShardEntry] = []
        self._ctx: Any = None
        self._writer: HashingWriter | None = None
        self._tar: tarfile.TarFile | None = None
        self._current: _OpenShard = {"file": "", "samples": 0, "boxes": 0, "estimate": 0}

    def add(self, key: str, jpeg: bytes, meta: bytes, boxes: int) -> None:
        size = 1024 + _padded(len(jpeg)) + _padded(len(meta))
        full = self._current.get("estimate", 0) + size > self.target
        if self._tar is not None and self._current["samples"] and full:
            self._close()
        if self._tar is None:
            self._open()
        assert self._tar is not None
        self._tar.addfile(*tar_member(f"{key}.jpg", jpeg))
        self._tar.addfile(*tar_member(f"{key}.json", meta))
        self._current["samples"] += 1
        self._current["boxes"] += boxes
        self._current["estimate"] += size

    def finish(self) -> list[ShardEntry]:
        if self._tar is not None:
            self._close()
        return self.shards

    def abort(self) -> None:
        if self._ctx is not None:
            with contextlib.suppress(BaseException):
                self._ctx.__exit__(RuntimeError, RuntimeError("aborted"), None)
            self._ctx = self._tar = self._writer = None

    def _open(self) -> None:
        name = f"{self.prefix}-{len(self.shards):06d}.tar"
        self._ctx = atomic_open_binary(os.path.join(self.out_dir, name))
        self._writer = HashingWriter(self._ctx.__enter__())
        # Closed in _close. The stub asks every fileobj for read/seek/tell; stream mode "w|" only
        # writes, which is all HashingWriter offers.
        self._tar = tarfile.open(  # type: ignore[call-overload]  # noqa: SIM115
            fileobj=self._writer,
            mode="w|",
            format=tarfile.USTAR_FORMAT,
        )
        self._current = {"file": name, "samples": 0, "boxes": 0, "estimate": 10240}

    def _close(self) -> None:
        assert self._tar is not None and self._writer is not None
        self._tar.close()
        self._ctx.__exit__(None, None, None)
        os.chmod(os.path.join(self.out_dir, self._current["file"]), 0o644)  # shared storage
        current = self._current
        self.shards.append(
            {
                "file": current["file"],
                "samples": current["samples"],
                "boxes": current["boxes"],
                "bytes": self._writer.count,
                "sha256": self._writer.hash.hexdigest(),
            }
        )
        self._ctx = self._tar = self._writer = None


def _padded(n: int) -> int:
    return (n + 511) // 512 * 512


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(READ_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------- the run
def prepare(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    """Write the shards and the manifest; returns the manifest."""
    target, images_dir = _check_prepare_args(args)
    if args.dataset == "openimages":
        source = _load_openimages(args)
    else:
        source = _load_coco(args, images_dir)
    source.images_dir = images_dir
    index = source.index
    log(f"prepare {args.dataset} {args.split}: {len(index)} images, {index.num_boxes} boxes listed")

    os.makedirs(args.out, exist_ok=True)
    report = Report(listed=len(index))
    writer = ShardWriter(args.out, args.split, target)
    started = time.monotonic()
    shards = _write_shards(args, index, images_dir, writer, report, log)
    if not shards:
        raise TrainerError(
            f"no usable images in {images_dir} ({len(report.missing)} missing, "
            f"{len(report.corrupt)} corrupt); nothing written"
        )
    listed = {s["file"] for s in shards}
    for name in os.listdir(args.out):  # shards of an earlier preparation into this directory
        if name.startswith(f"{args.split}-") and name.endswith(".tar") and name not in listed:
            os.unlink(os.path.join(args.out, name))

    manifest = _manifest(args, source, images_dir, target, report, shards)
    atomic_write(os.path.join(args.out, MANIFEST), json.dumps(manifest, indent=1) + "\n")
    os.chmod(os.path.join(args.out, MANIFEST), 0o644)
    elapsed = time.monotonic() - started
    totals = manifest["totals"]
    log(
        f"prepare: wrote {len(shards)} shards, {totals['samples']} samples, {totals['boxes']} "
        f"boxes, {totals['bytes'] / 1e6:.1f} MB in {elapsed:.1f} s; left out {totals['missing']} "
        f"missing, {totals['corrupt']} corrupt, {totals['duplicates']} duplicate, "
        f"{totals['without_boxes']} without boxes; {totals['rotated']} rotated upright; "
        f"manifest {os.path.join(args.out, MANIFEST)} (version {manifest['version']})"
    )
    return manifest


def _check_prepare_args(args: argparse.Namespace) -> tuple[int, str]:
    """The shard size in bytes and the images directory, or a ConfigError naming the option."""
    try:
        target = parse_size(args.shard_size)
    except ValueError as exc:
        raise ConfigError(f"--shard-size: {exc}") from None
    if target < 4096:
        raise ConfigError(f"--shard-size {args.shard_size!r}: must be at least 4KB")
    if args.threads < 1:
        raise ConfigError(f"--threads {args.threads}: must be at least 1")
    if args.data_root and not os.path.isdir(args.data_root):
        raise ConfigError(f"--data-root {args.data_root!r}: no such directory")
    images_dir: str = args.images or os.path.join(
        args.data_root or ".", DEFAULT_SPLIT_DIRS[args.dataset][args.split]
    )
    if not os.path.isdir(images_dir):
        raise ConfigError(f"{images_dir}: images directory not found (or pass --images DIR)")
    return target, images_dir


def _write_shards(
    args: argparse.Namespace,
    index: DetectionIndex,
    images_dir: str,
    writer: ShardWriter,
    report: Report,
    log: Callable[[str], None],
) -> list[ShardEntry]:
    """Check every listed image and write the usable ones into shards, counting in ``report``
    what was left out; returns the shards (none are left behind on failure)."""
    seen: dict[str, str] = {}
    last_log = time.monotonic()
    try:
        for i, checked in _checked_images(index, images_dir, args.threads, args.jpeg_quality):
            name = index.file_name(i)
            if checked.status == "missing":
                report.missing.append(name)
                continue
            if checked.status == "corrupt":
                report.corrupt.append({"file": name, "error": checked.error})
                continue
            if checked.digest in seen:
                report.duplicates.append({"file": name, "same_as": seen[checked.digest]})
                continue
            seen[checked.digest] = name
            rows = index.box_slice(i)
            if args.split == "train" and rows.stop == rows.start:
                report.without_boxes += 1
                continue
            boxes = orient_boxes(index.boxes[rows], checked.orientation)
            key = sample_key(name)
            meta = {
                "key": key,
                "source": name,
                "width": checked.width,
                "height": checked.height,
                "boxes": [[round(float(v), 6) for v in box] for box in boxes],
                "labels": [int(v) for v in index.labels[rows]],
                "group_of": [int(v) for v in index.group_of[rows]],
                "sha256": checked.digest,
                "exif_orientation": checked.orientation,
            }
            writer.add(key, checked.jpeg, json.dumps(meta).encode(), len(boxes))
            report.samples += 1
            report.boxes += len(boxes)
            report.rotated += checked.orientation != 1
            report.reencoded += checked.reencoded
            if time.monotonic() - last_log > 30:
                last_log = time.monotonic()
                log(f"prepare: {i + 1}/{len(index)} images checked, {len(writer.shards)} shards")
        return writer.finish()
    except BaseException:
        writer.abort()
        raise


def _manifest(
    args: argparse.Namespace,
    source: Source,
    images_dir: str,
    target: int,
    report: Report,
    shards: list[ShardEntry],
) -> dict[str, Any]:
    """The manifest: where the samples came from, what was left out and why, and the shards."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "version": content_version(source.classes, shards),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "dataset": args.dataset,
        "split": args.split,
        "images_dir": os.path.abspath(images_dir),
        "sources": [
            {"path": os.path.abspath(p), "bytes": os.path.getsize(p), "sha256": file_sha256(p)}
            for p in source.files
        ],
        "classes": source.classes,
        "filter_policy": {
            "classes": args.classes,
            "group_of": args.group_of if args.dataset == "openimages" else "crowd",
            "images_without_boxes": "dropped" if args.split == "train" else "kept",
            "corrupt": "every image decoded in full with Pillow; failures left out",
            "duplicates": "exact file content (sha256); the first in annotation order kept",
            "exif_orientation": (
                "applied to pixels and boxes; such images re-encoded as JPEG "
                f"quality {args.jpeg_quality} without the tag"
            ),
            "boxes": "normalised x1,y1,x2,y2 in the upright image; degenerate boxes dropped",
        },
        "target_shard_bytes": target,
        "totals": {
            "listed_images": report.listed,
            "samples": report.samples,
            "boxes": report.boxes,
            "bytes": sum(s["bytes"] for s in shards),
            "missing": len(report.missing),
            "corrupt": len(report.corrupt),
            "duplicates": len(report.duplicates),
            "without_boxes": report.without_boxes,
            "rotated": report.rotated,
            "reencoded": report.reencoded,
        },
        "annotation_stats": source.stats,
        "missing": report.missing,
        "corrupt": report.corrupt,
        "duplicates": report.duplicates,
        "shards": shards,
    }


def _checked_images(
    index: DetectionIndex, images_dir: str, threads: int, quality: int
) -> Iterator[tuple[int, Checked]]:
    """Images checked in parallel (Pillow decodes without the GIL), yielded in index order, a
    bounded chunk at a time so memory stays flat on 1.7 M images."""
    chunk = 32 * threads
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for start in range(0, len(index), chunk):
            ids = range(start, min(start + chunk, len(index)))
            paths = [os.path.join(images_dir, index.file_name(i)) for i in ids]
            yield from zip(ids, pool.map(lambda p: check_image(p, quality), paths), strict=True)


def _run(argv: list[str], prog: str, body: Callable[[list[str]], int]) -> int:
    debug = "--debug" in argv
    try:
        return body(argv)
    except TrainerError as exc:
        if debug:
            traceback.print_exc()
        print(f"trainer {prog}: error: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code


def main(argv: list[str]) -> int:
    def body(raw: list[str]) -> int:
        args = build_parser().parse_args(raw)
        prepare(args, lambda m: print(f"trainer: {m}", flush=True))
        return 0

    return _run(argv, "prepare", body)


def verify_main(argv: list[str]) -> int:
    def body(raw: list[str]) -> int:
        parser = argparse.ArgumentParser(
            prog="python -m trainer verify",
            description="Re-read every shard of a manifest: sample counts, boxes and sha256.",
        )
        parser.add_argument("--manifest", required=True)
        parser.add_argument("--debug", action="store_true")
        args = parser.parse_args(raw)
        manifest = load_manifest(args.manifest)
        samples, total = verify_manifest(manifest)
        print(
            f"trainer: {args.manifest}: {len(manifest.shards)} shards, {samples} samples, "
            f"{total} bytes verified (version {manifest.version})",
            flush=True,
        )
        return 0

    return _run(argv, "verify", body)
