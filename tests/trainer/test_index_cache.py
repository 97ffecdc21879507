"""The cached Open Images index: the vectorised parser against the row-by-row one, the memory-mapped
cache file (round trip, reuse, rebuild), and loader workers reading it without a copy."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset
from trainer_fixtures import image_id, write_openimages

from trainer.config import parse_config
from trainer.data import build_datasets, openimages
from trainer.data.index import DetectionIndex
from trainer.distributed import DistContext
from trainer.errors import ConfigError

CPU = DistContext(0, 1, 0, torch.device("cpu"), None)
ARRAYS = ("file_names", "offsets", "boxes", "labels", "group_of", "heights", "widths")


def build(root, **kwargs):
    options = {"keep_classes": None, "group_of": "positive", "strict": False} | kwargs
    return openimages.build_openimages_index(
        str(root / "oidv6-train-annotations-bbox.csv"),
        str(root / "oidv7-class-descriptions-boxable.csv"),
        str(root / "train"),
        **options,
    )


def assert_same(a: DetectionIndex, b: DetectionIndex) -> None:
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.class_names == b.class_names


def test_block_boundaries_and_the_row_by_row_path_give_the_same_index(tmp_path, monkeypatch):
    write_openimages(tmp_path, train_images=12, val_images=1)
    reference, stats = build(tmp_path)
    # Blocks of ~300 bytes: every block boundary falls somewhere else in a row.
    monkeypatch.setattr(openimages, "CHUNK_BYTES", 300)
    small, small_stats = build(tmp_path)
    assert_same(small, reference)
    assert small_stats == stats
    # A quoted field sends its block through the csv module; CRLF line ends are fine too.
    path = tmp_path / "oidv6-train-annotations-bbox.csv"
    lines = path.read_text().splitlines()
    lines[5] = lines[5].replace(",xclick,", ',"xclick",')
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    monkeypatch.setattr(openimages, "CHUNK_BYTES", 1 << 20)
    quoted, quoted_stats = build(tmp_path)
    assert_same(quoted, reference)
    assert quoted_stats == stats


def test_ragged_row_is_named_by_line(tmp_path):
    write_openimages(tmp_path, train_images=3, val_images=1)
    path = tmp_path / "oidv6-train-annotations-bbox.csv"
    lines = path.read_text().splitlines()
    lines[4] = ",".join(lines[4].split(",")[:5])  # cut after XMin
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"bbox.csv:5: malformed row"):
        build(tmp_path)


def test_unsorted_ids_are_numbered_in_id_order(tmp_path):
    write_openimages(tmp_path, train_images=6, val_images=1)  # rows are written in reverse
    index, _ = build(tmp_path)
    names = index.file_names.tolist()
    assert names == sorted(names) == [f"{image_id(i)}.jpg".encode() for i in range(6)]
    for i in range(len(index)):  # each image's boxes are its own (two per image, kept order)
        assert index.box_counts()[i] == 2


def test_cache_file_is_mapped_read_only_and_pickles_as_its_path(tmp_path):
    write_openimages(tmp_path, train_images=4, val_images=1)
    index, stats = build(tmp_path)
    index.meta["parse_stats"] = {"rows": stats.rows}
    path = tmp_path / "cache" / "train.index"
    index.save(str(path))
    loaded = DetectionIndex.load(str(path))
    assert_same(loaded, index)
    assert loaded.meta == {"parse_stats": {"rows": stats.rows}}
    for name in ARRAYS:
        array = getattr(loaded, name)
        assert isinstance(array, np.memmap) and not array.flags.writeable, name
    # A spawn worker receives the path, not the arrays, and maps the file itself.
    payload = pickle.dumps(loaded)
    assert len(payload) < 1000
    again = pickle.loads(payload)
    assert isinstance(again.boxes, np.memmap)
    assert_same(again, index)
    # An in-memory index (a subset) pickles its arrays.
    subset = loaded.select(np.arange(len(loaded)) < 2)
    assert_same(pickle.loads(pickle.dumps(subset)), subset)
    # A cut file is refused (cached_index then rebuilds it), in the header or in the arrays.
    whole = path.read_bytes()
    for size in (100, len(whole) - 100):
        path.write_bytes(whole[:size])
        with pytest.raises(ValueError, match="truncated index file"):
            DetectionIndex.load(str(path))


def test_index_is_reused_while_the_sources_are_unchanged_and_rebuilt_after(tmp_path):
    root = tmp_path / "oid"
    write_openimages(root, train_images=4, val_images=2)
    cfg = parse_config(
        ["--dataset", "openimages", "--data-root", str(root), "--output-dir", str(tmp_path / "o"),
         "--eval-every", "0"]
    )  # fmt: skip
    logs: list[str] = []
    first = build_datasets(cfg, CPU, logs.append)[0].index
    cache_files = sorted((tmp_path / "o" / "cache").glob("openimages-train-*.index"))
    assert len(cache_files) == 1 and first.path == str(cache_files[0])
    assert isinstance(first.boxes, np.memmap)
    build_datasets(cfg, CPU, logs.append)
    assert sum("parsing" in line for line in logs) == 1  # the second run read the cache
    # Rewrite the box CSV (one box fewer): new size and mtime -> a new key, parsed again.
    csv_path = root / "oidv6-train-annotations-bbox.csv"
    lines = csv_path.read_text().splitlines()
    csv_path.write_text("\n".join(lines[:-1]) + "\n")
    os.utime(csv_path, ns=(os.stat(csv_path).st_atime_ns, os.stat(csv_path).st_mtime_ns + 10**9))
    rebuilt = build_datasets(cfg, CPU, logs.append)[0].index
    assert sum("parsing" in line for line in logs) == 2
    assert rebuilt.num_boxes == first.num_boxes - 1
    assert len(list((tmp_path / "o" / "cache").glob("openimages-train-*.index"))) == 2


class _WhatTheWorkerSees(Dataset):
    """Reports, from inside a loader worker, how the index arrays reach it."""

    def __init__(self, index: DetectionIndex) -> None:
        self.index = index

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> dict:
        with open("/proc/self/maps", encoding="utf-8") as f:
            mapped = self.index.path in f.read()
        boxes = self.index.boxes
        return {
            "pid": os.getpid(),
            "memmap": isinstance(boxes, np.memmap),
            "writeable": boxes.flags.writeable,
            "file_mapped": mapped,
            "first_box": boxes[self.index.box_slice(i)][0].tolist(),
        }


def test_loader_workers_read_the_mapped_file_without_a_copy(tmp_path):
    # Fork, Linux's default; a spawn worker gets the index pickled, which is its path (see above).
    write_openimages(tmp_path, train_images=4, val_images=1)
    index, _ = build(tmp_path)
    index.save(str(tmp_path / "train.index"))
    mapped = DetectionIndex.load(str(tmp_path / "train.index"))
    loader = DataLoader(
        _WhatTheWorkerSees(mapped),
        batch_size=None,
        num_workers=1,
        multiprocessing_context="fork",
    )
    seen = list(loader)
    assert all(s["pid"] != os.getpid() for s in seen)  # really another process
    assert all(s["memmap"] and not s["writeable"] and s["file_mapped"] for s in seen)
    assert [s["first_box"] for s in seen] == [
        mapped.boxes[mapped.box_slice(i)][0].tolist() for i in range(2)
    ]


def test_benchmark_csv_generator_writes_what_the_parser_reads(tmp_path):
    """The full-size benchmark's generated CSV, at 1/10,000 scale, parsed by the trainer."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "openimages_index.py"
    spec = importlib.util.spec_from_file_location("openimages_index_benchmark", script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    written = bench.write_csv(tmp_path, scale=1e-4, chunk=500)
    assert written == {"images": 174, "boxes": 1461, "group_of": written["group_of"]}
    index, stats = openimages.build_openimages_index(
        str(tmp_path / "oidv6-train-annotations-bbox.csv"),
        str(tmp_path / "oidv7-class-descriptions-boxable.csv"),
        None,
        None,
        "positive",
        False,
    )
    assert (len(index), index.num_boxes, stats.rows) == (174, 1461, 1461)
    assert int(index.group_of.sum()) == written["group_of"] > 0
    assert len(index.class_names) == 600 and (index.heights == 0).all()  # no header scan
