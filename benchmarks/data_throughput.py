#!/usr/bin/env python3
"""Loader-only throughput: file-per-image vs shards (no cache, cold cache, warm cache).

Generates one Open Images-shaped dataset (synthetic photos written as JPEG files plus the box and
class CSVs), packs it with ``python -m trainer prepare``, then runs one epoch of each input path
through the trainer's own loaders (DataLoader workers, decode, flips; no model) and prints images/s
and input MB/s. Every row reads the same images at the same decode size. The "read only" rows
time the I/O part alone (no decode, one process): opening and reading every file vs reading
every shard sequentially with its sha256 check. The cases run interleaved, --repeats rounds;
each row is its best pass.

    python benchmarks/data_throughput.py                       # 256 images, 800 px, 2 workers
    python benchmarks/data_throughput.py --images 1000 --workers 4 --shard-size 64MB

What "cold" and "warm" mean here: cold = an empty --cache-dir, so each shard is copied in and
verified (sha256) on first use; warm = the same epoch again with the cache filled. The source
files sit on the same local disk and in the OS page cache for every row, so this measures the
data path's CPU costs (open/stat per image vs sequential tar reads, copy + hash), not a network
filesystem; on a PVC or object store the per-file latency that shards avoid is far larger.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OID_COLUMNS = ["ImageID", "Source", "LabelName", "Confidence", "XMin", "XMax", "YMin", "YMax",
               "IsOccluded", "IsTruncated", "IsGroupOf", "IsDepiction", "IsInside"]  # fmt: skip
sys.path.insert(0, str(REPO))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--jpeg-size", type=int, default=800, help="shorter side of the photos")
    parser.add_argument("--min-size", type=int, default=512, help="the model's decode target")
    parser.add_argument("--max-size", type=int, default=853)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader processes")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--shard-size", default="2MB", help="about 18 shards per worker here")
    parser.add_argument("--shuffle-buffer", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3, help="rounds; each row's best counts")
    parser.add_argument("--keep", help="build the data in this directory and keep it")
    return parser.parse_args()


def generate(root: Path, count: int, size: int) -> None:
    """An Open Images layout: class CSV, train box CSV, train/<ImageID>.jpg."""
    from trainer.data.synthetic import make_synthetic_index, write_jpegs

    index = make_synthetic_index(count, 3, 0, size, "train")
    write_jpegs(index, str(root / "train"), 0)
    with open(root / "oidv7-class-descriptions-boxable.csv", "w", newline="") as f:
        csv.writer(f).writerows([[f"/m/c{k}", name] for k, name in enumerate(index.class_names)])
    with open(root / "oidv6-train-annotations-bbox.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(OID_COLUMNS)
        for i in range(len(index)):
            image_id = index.file_name(i)[: -len(".jpg")]
            for (x1, y1, x2, y2), label in zip(
                index.boxes[index.box_slice(i)], index.labels[index.box_slice(i)], strict=True
            ):
                writer.writerow([image_id, "gen", f"/m/c{label - 1}", 1, f"{x1:.5f}",
                                 f"{x2:.5f}", f"{y1:.5f}", f"{y2:.5f}", 0, 0, 0, 0, 0])  # fmt: skip


def files_epoch(root: Path, args: argparse.Namespace) -> dict:
    from torch.utils.data import DataLoader

    from trainer.data import collate
    from trainer.data.dataset import DetectionDataset
    from trainer.data.openimages import build_openimages_index
    from trainer.data.sampler import DistributedGroupedBatchSampler, aspect_ratio_groups

    index, _ = build_openimages_index(
        str(root / "oidv6-train-annotations-bbox.csv"),
        str(root / "oidv7-class-descriptions-boxable.csv"),
        str(root / "train"), None, "positive", False,
    )  # fmt: skip
    dataset = DetectionDataset(
        index, str(root / "train"), train=True, min_size=args.min_size, max_size=args.max_size
    )
    sampler = DistributedGroupedBatchSampler(
        aspect_ratio_groups(index.heights, index.widths, -1), args.batch_size, 0, 1, 0
    )
    loader = DataLoader(
        dataset, batch_sampler=sampler, num_workers=args.workers, collate_fn=collate,
        **({"prefetch_factor": 4} if args.workers else {}),
    )  # fmt: skip
    sizes = {i: os.path.getsize(root / "train" / index.file_name(i)) for i in range(len(index))}
    started = time.perf_counter()
    images = nbytes = 0
    for batch_images, targets in loader:
        images += len(batch_images)
        nbytes += sum(sizes[t["index"]] for t in targets)
    return {"images": images, "seconds": time.perf_counter() - started, "bytes": nbytes}


def shards_epoch(manifest_path: Path, args: argparse.Namespace, cache: Path | None) -> dict:
    from trainer.data.shards import load_manifest
    from trainer.data.stream import ShardFeed, ShardStream

    manifest = load_manifest(str(manifest_path))
    stream = ShardStream(
        manifest, rank=0, world_size=1, workers=args.workers, batch_size=args.batch_size,
        seed=0, buffer_size=args.shuffle_buffer, min_size=args.min_size, max_size=args.max_size,
        hflip_probability=0.5, fast_decode=True, cache_dir=str(cache) if cache else None,
    )  # fmt: skip
    feed = ShardFeed(stream, args.workers, False, 4)
    started = time.perf_counter()
    images = 0
    for batch_images, _ in feed.epoch_batches(0, 0):
        images += len(batch_images)
    seconds = time.perf_counter() - started
    return {
        "images": images,
        "seconds": seconds,
        "bytes": feed.totals["bytes"],
        "hit_rate": feed.totals["hits"] / max(feed.totals["lookups"], 1) if cache else None,
    }


def files_read_only(root: Path) -> dict:
    """The I/O part alone: open and read every JPEG file, no decode."""
    started = time.perf_counter()
    images = nbytes = 0
    for path in sorted((root / "train").iterdir()):
        with open(path, "rb") as f:
            nbytes += len(f.read())
        images += 1
    return {"images": images, "seconds": time.perf_counter() - started, "bytes": nbytes}


def shards_read_only(manifest_path: Path, cache: Path | None) -> dict:
    """The I/O part alone: every shard read sequentially, its sha256 checked (by the cache when
    copying it in, else while reading), as the training stream does."""
    from trainer.data.shard_cache import ShardCache
    from trainer.data.shards import load_manifest, read_shard

    manifest = load_manifest(str(manifest_path))
    store = ShardCache(str(cache)) if cache else None
    started = time.perf_counter()
    images = nbytes = hits = 0
    for shard in manifest.shards:
        path = manifest.shard_path(shard)
        if store:
            handle, hit, _ = store.open(path, shard)
            hits += hit
        else:
            handle = open(path, "rb")  # noqa: SIM115
        with handle:
            for sample in read_shard(handle, shard, path, verify=store is None):
                images += 1
                nbytes += sample.size
    seconds = time.perf_counter() - started
    hit_rate = hits / len(manifest.shards) if cache else None
    return {"images": images, "seconds": seconds, "bytes": nbytes, "hit_rate": hit_rate}


def interleaved(cases: list[tuple[str, object, object]], repeats: int) -> list[tuple[str, dict]]:
    """Each case once per round, rounds repeated; the best pass of each case counts. Interleaving
    spreads a busy machine's slow moments over all cases instead of one."""
    results: dict[str, list[dict]] = {name: [] for name, _, _ in cases}
    for _ in range(repeats):
        for name, run, before in cases:
            if before:
                before()
            results[name].append(run())
    return [(name, min(results[name], key=lambda r: r["seconds"])) for name, _, _ in cases]


def main() -> int:
    args = parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="data-bench-"))
    try:
        root = base / "oid"
        if not (root / "oidv6-train-annotations-bbox.csv").exists():
            started = time.perf_counter()
            generate(root, args.images, args.jpeg_size)
            print(f"generated {args.images} JPEGs in {time.perf_counter() - started:.1f} s")
        from trainer.data.prepare import build_parser, prepare

        started = time.perf_counter()
        prepare(
            build_parser().parse_args(
                [
                    "--dataset",
                    "openimages",
                    "--data-root",
                    str(root),
                    "--split",
                    "train",
                    "--out",
                    str(base / "shards"),
                    "--shard-size",
                    args.shard_size,
                    "--threads",
                    str(max(1, os.cpu_count() or 1)),
                ]
            ),  # fmt: skip
            lambda message: print(message),
        )
        prep_seconds = time.perf_counter() - started
        manifest = base / "shards" / "manifest.json"
        cache = base / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        n = args.repeats

        def empty_cache() -> None:
            shutil.rmtree(cache, ignore_errors=True)

        warm = None  # the warm cases run after a cold one has filled the cache

        rows = interleaved(
            [
                ("files (one JPEG per image)", lambda: files_epoch(root, args), warm),
                ("shards, no cache", lambda: shards_epoch(manifest, args, None), warm),
                ("shards, cold cache", lambda: shards_epoch(manifest, args, cache), empty_cache),
                ("shards, warm cache", lambda: shards_epoch(manifest, args, cache), warm),
            ],
            n,
        ) + interleaved(
            [
                ("read only: files", lambda: files_read_only(root), warm),
                ("read only: shards", lambda: shards_read_only(manifest, None), warm),
                ("read only: shards cold", lambda: shards_read_only(manifest, cache), empty_cache),
                ("read only: shards warm", lambda: shards_read_only(manifest, cache), warm),
            ],
            n,
        )
        print()
        print(
            f"{platform.node()} · {os.cpu_count()} CPUs · {platform.processor() or platform.machine()}"
            f" · {datetime.now(timezone.utc):%Y-%m-%d} · {args.images} images, shorter side "
            f"{args.jpeg_size} px, decoded for {args.min_size} px, {args.workers} loader workers,"
            f" batch {args.batch_size}, shards of {args.shard_size}; prepare took {prep_seconds:.1f} s"
        )
        print(f"{'input path':<28} {'images/s':>9} {'input MB/s':>11} {'cache hits':>11}")
        for k, (name, r) in enumerate(rows):
            ref = rows[0 if k < 4 else 4][1]
            files_rate = ref["images"] / ref["seconds"]
            rate = r["images"] / r["seconds"]
            hit = r.get("hit_rate")
            print(
                f"{name:<28} {rate:>9.1f} {r['bytes'] / r['seconds'] / 1e6:>11.1f} "
                f"{'-' if hit is None else f'{hit:.0%}':>11}   ({rate / files_rate:.2f}x files)"
            )
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
