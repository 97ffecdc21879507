"""A detection dataset's annotations as a handful of flat numpy arrays, cached as one memory-mapped file.

At Open Images scale (1.7 M images, 14.6 M boxes) a list of dicts would be copied into every loader
worker page by page as reference counts change. Flat arrays are a few large buffers; there is no
Python object per box or per image (file names are one fixed-width bytes array). Boxes are stored
normalised to [0, 1] (x1, y1, x2, y2), so they hold for the image at any decoded size.

The cache file (``save``/``load``) is a small JSON header followed by the raw arrays, each aligned to
64 bytes. ``load`` maps it read-only (``np.memmap``): loading costs no parsing and no copy, every
rank and loader worker on a node shares the same page-cache pages, and an index that is pickled (a
``spawn`` worker) travels as its path and is mapped again on the other side.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from trainer.distributed import DistContext, barrier
from trainer.files import atomic_open_binary

INDEX_FORMAT = 2
MAGIC = b"RTINDEX\0"  # 8 bytes, then a little-endian u64 header length, then the JSON header
ALIGN = 64
ARRAYS = ("file_names", "offsets", "boxes", "labels", "group_of", "heights", "widths")


@dataclass
class DetectionIndex:
    file_names: np.ndarray  # bytes [n_images], path relative to the images dir
    offsets: np.ndarray  # int64 [n_images + 1]; image i owns boxes[offsets[i]:offsets[i+1]]
    boxes: np.ndarray  # float32 [n_boxes, 4], normalised x1, y1, x2, y2
    labels: np.ndarray  # int32 [n_boxes], 1..num_classes (0 is background)
    group_of: np.ndarray  # uint8 [n_boxes], 1 for group-of / crowd boxes
    heights: np.ndarray  # int32 [n_images], 0 when not known yet
    widths: np.ndarray  # int32 [n_images]
    class_names: list[str]  # index k-1 names label k
    meta: dict[str, Any] = field(default_factory=dict)  # plain data saved with it (parse stats)
    path: str | None = None  # the cache file the arrays are mapped from (None: in memory)

    def __len__(self) -> int:
        return len(self.file_names)

    @property
    def num_boxes(self) -> int:
        return int(self.offsets[-1])

    def box_slice(self, i: int) -> slice:
        return slice(int(self.offsets[i]), int(self.offsets[i + 1]))

    def box_counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    def file_name(self, i: int) -> str:
        return self.file_names[i].decode()

    def select(self, keep: np.ndarray) -> DetectionIndex:
        """The images where ``keep`` (bool [n_images]) is true, with their boxes."""
        counts = self.box_counts()
        box_keep = np.repeat(keep, counts)
        new_counts = counts[keep]
        offsets = np.zeros(len(new_counts) + 1, dtype=np.int64)
        np.cumsum(new_counts, out=offsets[1:])
        return DetectionIndex(
            self.file_names[keep],
            offsets,
            self.boxes[box_keep],
            self.labels[box_keep],
            self.group_of[box_keep],
            self.heights[keep],
            self.widths[keep],
            self.class_names,
            dict(self.meta),
        )

    def save(self, path: str) -> None:
        """Atomic write (temp file beside it, fsync, rename): JSON header, then aligned raw arrays."""
        arrays = {name: np.ascontiguousarray(getattr(self, name)) for name in ARRAYS}
        layout, offset = {}, 0
        for name, arr in arrays.items():
            layout[name] = {"dtype": arr.dtype.str, "shape": list(arr.shape), "offset": offset}
            offset += _aligned(arr.nbytes)
        header = json.dumps(
            {
                "format": INDEX_FORMAT,
                "arrays": layout,
                "class_names": list(self.class_names),
                "meta": self.meta,
            }
        ).encode()
        start = _aligned(len(MAGIC) + 8 + len(header))
        with atomic_open_binary(path) as f:
            f.write(MAGIC + struct.pack("<Q", len(header)) + header)
            f.write(b"\0" * (start - len(MAGIC) - 8 - len(header)))
            for arr in arrays.values():
                f.write(arr.reshape(-1).view(np.uint8).data)
                f.write(b"\0" * (_aligned(arr.nbytes) - arr.nbytes))

    @classmethod
    def load(cls, path: str) -> DetectionIndex:
        """Map the file read-only: no parse, no copy; the arrays are ``np.memmap`` views."""
        with open(path, "rb") as f:
            head = f.read(len(MAGIC) + 8)
            if len(head) < len(MAGIC) + 8 or head[: len(MAGIC)] != MAGIC:
                raise ValueError(f"{path}: not a trainer index file (format {INDEX_FORMAT})")
            (length,) = struct.unpack("<Q", head[len(MAGIC) :])
            text = f.read(length)
        if len(text) < length:
            raise ValueError(f"{path}: truncated index file (the header ends past the file)")
        header = json.loads(text)
        if header.get("format") != INDEX_FORMAT:
            raise ValueError(
                f"{path}: index format {header.get('format')}, expected {INDEX_FORMAT}"
            )
        start = _aligned(len(MAGIC) + 8 + length)
        raw = np.memmap(path, dtype=np.uint8, mode="r")  # never empty: the header is in it
        arrays = {}
        for name in ARRAYS:
            spec = header["arrays"][name]
            dtype, shape = np.dtype(spec["dtype"]), tuple(spec["shape"])
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if nbytes == 0:
                arrays[name] = np.zeros(shape, dtype)
                continue
            begin = start + spec["offset"]
            if begin + nbytes > len(raw):
                raise ValueError(f"{path}: truncated index file ({name} ends past the file)")
            arrays[name] = raw[begin : begin + nbytes].view(dtype).reshape(shape)
        return cls(
            **arrays,
            class_names=[str(n) for n in header["class_names"]],
            meta=dict(header.get("meta") or {}),
            path=os.path.abspath(path),
        )

    def __getstate__(self) -> dict[str, Any]:
        # A mapped index pickles as its path (a spawn worker maps the file instead of a copy).
        if self.path is not None and all(isinstance(getattr(self, n), np.memmap) for n in ARRAYS):
            return {"path": self.path}
        return {**self.__dict__, "path": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if set(state) == {"path"}:
            state = DetectionIndex.load(state["path"]).__dict__
        self.__dict__.update(state)


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def build_from_rows(
    image_of_box: np.ndarray,
    file_names: np.ndarray,
    boxes: np.ndarray,
    labels: np.ndarray,
    group_of: np.ndarray,
    class_names: list[str],
    heights: np.ndarray | None = None,
    widths: np.ndarray | None = None,
) -> DetectionIndex:
    """Group per-box rows (in any order) by image into the flat layout."""
    order = np.argsort(image_of_box, kind="stable")
    counts = np.bincount(image_of_box, minlength=len(file_names))
    offsets = np.zeros(len(file_names) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    n = len(file_names)
    return DetectionIndex(
        file_names,
        offsets,
        boxes[order].astype(np.float32, copy=False).reshape(-1, 4),
        labels[order].astype(np.int32, copy=False),
        group_of[order].astype(np.uint8, copy=False),
        np.zeros(n, np.int32) if heights is None else heights.astype(np.int32),
        np.zeros(n, np.int32) if widths is None else widths.astype(np.int32),
        class_names,
    )


def read_image_sizes(
    images_dir: str, file_names: np.ndarray, threads: int = 16
) -> tuple[np.ndarray, np.ndarray]:
    """(heights, widths) from the file headers without decoding pixels; 0 for missing/unreadable."""

    def size_of(name: bytes) -> tuple[int, int]:
        try:
            with Image.open(os.path.join(images_dir, name.decode())) as img:
                w, h = img.size
                return h, w
        except (OSError, ValueError, Image.DecompressionBombError):
            return 0, 0

    with ThreadPoolExecutor(max_workers=threads) as pool:
        sizes = list(pool.map(size_of, file_names, chunksize=256))
    arr = np.array(sizes, dtype=np.int32).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]


def cache_key(*parts: object) -> str:
    """A short hash of the inputs an index depends on (paths, sizes, mtimes, options)."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, str) and os.path.exists(part):
            st = os.stat(part)
            part = f"{os.path.abspath(part)}:{st.st_size}:{st.st_mtime_ns}"
        h.update(repr(part).encode())
        h.update(b"\0")
    h.update(str(INDEX_FORMAT).encode())
    return h.hexdigest()[:16]


def cached_index(
    ctx: DistContext, cache_path: str | None, build: Callable[[], DetectionIndex]
) -> DetectionIndex:
    """Rank 0 builds (or finds) the index and caches it; the other ranks wait and load it.

    A rank that cannot see the cache file afterwards (no shared filesystem) builds its own copy.
    """
    if cache_path is None:
        return build()
    index = None
    if ctx.is_main:
        index = _try_load(cache_path)
        if index is None:
            build().save(cache_path)
            index = DetectionIndex.load(cache_path)  # mapped, like on every other rank
    barrier(ctx)
    if index is None:
        index = _try_load(cache_path) or build()
    return index


def _try_load(path: str) -> DetectionIndex | None:
    if not os.path.isfile(path):
        return None
    try:
        return DetectionIndex.load(path)
    except (OSError, ValueError, KeyError):
        return None
