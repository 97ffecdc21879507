#!/usr/bin/env python3
"""The Open Images annotation index at full size: build time, load time, memory per loader worker.

Writes a box CSV of the official train split's size (14,610,229 rows over 1,743,042 images, in the
21-column format of ``oidv6-train-annotations-bbox.csv``, sorted by ImageID as the official file
is) and a 600-class ``oidv7-class-descriptions-boxable.csv`` into a temporary directory, then, each
step in a fresh process so that one step's memory does not colour the next:

1. build: the trainer's parser (``build_openimages_index``, without the image-header scan, since
   there are no images) and the atomic write of the cache file; wall time and peak RSS;
2. load: ``DetectionIndex.load`` of the cache file, as every rank does; wall time;
3. workers: a real ``DataLoader`` (fork, persistent workers) over ``DetectionDataset`` on the loaded
   index, whose workers fetch random samples from the whole index (boxes, labels, file names; the
   JPEG decode is replaced by a blank image); then each worker's memory from
   ``/proc/<pid>/smaps_rollup``: RSS, PSS, USS (private pages), and the anonymous (heap,
   copy-on-write) part. The same is measured for a 1,000-image index as the baseline, and the
   difference is the index's cost per worker.

    python benchmarks/openimages_index.py                 # full size (about 2.2 GB of CSV)
    python benchmarks/openimages_index.py --scale 0.01    # 1 % of it
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
FULL_IMAGES = 1_743_042
FULL_BOXES = 14_610_229
CLASSES = 600
HEADER = (
    "ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,IsGroupOf,"
    "IsDepiction,IsInside,XClick1X,XClick2X,XClick3X,XClick4X,XClick1Y,XClick2Y,XClick3Y,XClick4Y\n"
)
HEX = np.frombuffer(b"0123456789abcdef", np.uint8)
ALNUM = np.frombuffer(b"0123456789abcdefghijklmnopqrstuvwxyz_", np.uint8)


def mids(count: int) -> list[str]:
    """Distinct MID-shaped names: /m/0 followed by 5 base-37 characters."""
    out = []
    for k in range(count):
        chars, n = [], k * 7919 + 12345
        for _ in range(5):
            n, r = divmod(n, len(ALNUM))
            chars.append(chr(ALNUM[r]))
        out.append("/m/0" + "".join(chars))
    return out


def _digits(values: np.ndarray, width: int, base_table: np.ndarray, base: int) -> np.ndarray:
    """[n, width] ASCII digits of non-negative integers, most significant first."""
    out = np.empty((len(values), width), np.uint8)
    v = values.astype(np.uint64).copy()
    for k in range(width - 1, -1, -1):
        out[:, k] = base_table[(v % base).astype(np.int64)]
        v //= base
    return out


def _fraction(micro: np.ndarray) -> np.ndarray:
    """'0.dddddd' for integers 0..999999 (millionths), as the official files print them."""
    text = np.empty((len(micro), 8), np.uint8)
    text[:, 0], text[:, 1] = ord("0"), ord(".")
    text[:, 2:] = _digits(micro, 6, np.frombuffer(b"0123456789", np.uint8), 10)
    return text


def write_csv(directory: Path, scale: float, seed: int = 0, chunk: int = 1_000_000) -> dict:
    """The box CSV and the class file; returns the counts written."""
    rng = np.random.default_rng(seed)
    n_images = max(1, round(FULL_IMAGES * scale))
    n_boxes = max(n_images, round(FULL_BOXES * scale))
    names = mids(CLASSES)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "oidv7-class-descriptions-boxable.csv", "w", encoding="utf-8") as f:
        f.write("LabelName,DisplayName\n")
        for k, mid in enumerate(names):
            f.write(f"{mid},Class {k}\n")
    mid_bytes = np.frombuffer("".join(names).encode(), np.uint8).reshape(CLASSES, -1)
    image_keys = np.sort(rng.choice(2**62, size=n_images, replace=False).astype(np.uint64))
    # Every image gets one box, the rest land on random images; sorted, as the file is by ImageID.
    image_of_box = np.sort(
        np.concatenate([np.arange(n_images), rng.integers(0, n_images, n_boxes - n_images)])
    )
    group_count = 0
    with open(directory / "oidv6-train-annotations-bbox.csv", "wb") as f:
        f.write(HEADER.encode())
        for begin in range(0, n_boxes, chunk):
            rows = image_of_box[begin : begin + chunk]
            n = len(rows)
            fields = [_digits(image_keys[rows], 16, HEX, 16)]
            fields.append(np.tile(np.frombuffer(b"xclick", np.uint8), (n, 1)))
            fields.append(mid_bytes[rng.integers(0, CLASSES, n)])
            fields.append(np.full((n, 1), ord("1"), np.uint8))
            x1 = rng.integers(0, 800_000, n)
            y1 = rng.integers(0, 800_000, n)
            x2 = x1 + rng.integers(10_000, 199_999, n)
            y2 = y1 + rng.integers(10_000, 199_999, n)
            fields += [_fraction(v) for v in (x1, x2, y1, y2)]  # XMin, XMax, YMin, YMax
            flags = (rng.random((n, 5)) < [0.3, 0.2, 0.05, 0.05, 0.02]).astype(np.uint8)
            group_count += int(flags[:, 2].sum())
            fields += [(flags[:, k : k + 1] + ord("0")).astype(np.uint8) for k in range(5)]
            clicks = [x1, x2, x1 + (x2 - x1) // 2, x1, y1, y1 + (y2 - y1) // 3, y2, y2]
            fields += [_fraction(v) for v in clicks]
            width = sum(a.shape[1] for a in fields) + len(fields)
            out = np.full((n, width), ord(","), np.uint8)
            at = 0
            for a in fields:
                out[:, at : at + a.shape[1]] = a
                at += a.shape[1] + 1
            out[:, -1] = ord("\n")
            f.write(out.tobytes())
    return {"images": n_images, "boxes": n_boxes, "group_of": group_count}


def rollup(pid: int) -> dict[str, float]:
    """MB figures from /proc/PID/smaps_rollup: rss, pss, uss (private), anon."""
    values: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[2] == "kB":
                values[parts[0].rstrip(":")] = int(parts[1])
    kb = {key: values.get(key, 0) for key in ("Rss", "Pss", "Private_Clean", "Private_Dirty")}
    return {
        "rss": kb["Rss"] / 1024,
        "pss": kb["Pss"] / 1024,
        "uss": (kb["Private_Clean"] + kb["Private_Dirty"]) / 1024,
        "anon": values.get("Anonymous", 0) / 1024,
    }


# ---- steps, each run in a child process (python benchmarks/openimages_index.py --step ...) ----


def step_build(directory: str, cache: str) -> dict:
    from trainer.data.openimages import build_openimages_index

    start = time.perf_counter()
    index, stats = build_openimages_index(
        os.path.join(directory, "oidv6-train-annotations-bbox.csv"),
        os.path.join(directory, "oidv7-class-descriptions-boxable.csv"),
        None,
        None,
        "positive",
        False,
    )
    parsed = time.perf_counter()
    index.save(cache)
    saved = time.perf_counter()
    return {
        "parse_s": parsed - start,
        "save_s": saved - parsed,
        "images": len(index),
        "boxes": index.num_boxes,
        "rows": stats.rows,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "file_mb": os.path.getsize(cache) / 2**20,
    }


def step_load(cache: str) -> dict:
    start = time.perf_counter()
    from trainer.data.index import DetectionIndex

    imported = time.perf_counter()
    index = DetectionIndex.load(cache)
    loaded = time.perf_counter()
    total = int(index.box_counts().sum())  # one pass over the offsets
    return {
        "import_s": imported - start,
        "load_s": loaded - imported,
        "first_pass_s": time.perf_counter() - loaded,
        "boxes": total,
        "memmap": type(index.boxes).__name__,
    }


def step_workers(cache: str, workers: int, samples: int, tiny: bool) -> dict:
    import torch
    from torch.utils.data import DataLoader, RandomSampler

    from trainer.data.dataset import DetectionDataset, collate
    from trainer.data.index import DetectionIndex

    torch.set_num_threads(1)

    class IndexOnly(DetectionDataset):
        """The real item path (boxes, labels, file name, flip), a blank image instead of a JPEG."""

        def load_image(self, i: int) -> torch.Tensor:
            self.index.file_name(i)
            return torch.zeros(3, 8, 8, dtype=torch.uint8)

    index = DetectionIndex.load(cache)
    if tiny:
        index = index.select(np.arange(len(index)) < 1000)
    dataset = IndexOnly(index, "", train=True, min_size=8, max_size=8)
    sampler = RandomSampler(
        dataset, num_samples=samples, generator=torch.Generator().manual_seed(0)
    )
    loader = DataLoader(
        dataset,
        batch_size=64,
        sampler=sampler,
        num_workers=workers,
        collate_fn=collate,
        persistent_workers=True,
        multiprocessing_context="fork",
    )
    iterator = iter(loader)
    boxes = 0
    start = time.perf_counter()
    for _, targets in iterator:
        boxes += sum(len(t["boxes"]) for t in targets)
    elapsed = time.perf_counter() - start
    pids = [w.pid for w in iterator._workers]  # the live persistent worker processes
    per_worker = [rollup(pid) for pid in pids]
    return {
        "images": len(index),
        "samples": samples,
        "boxes_read": boxes,
        "samples_per_s": samples / elapsed,
        "parent": rollup(os.getpid()),
        "workers": per_worker,
    }


def run_step(*args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    out = subprocess.run(
        [sys.executable, __file__, "--step", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        sys.exit(f"step {args[0]} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the full split")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    parser.add_argument(
        "--samples", type=int, default=20_000, help="random samples the workers fetch"
    )
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed after)")
    parser.add_argument("--step", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        name, *rest = args.step
        if name == "build":
            result = step_build(*rest)
        elif name == "load":
            result = step_load(*rest)
        else:
            result = step_workers(rest[0], int(rest[1]), int(rest[2]), rest[3] == "tiny")
        print(json.dumps(result))
        return

    directory = Path(args.dir or tempfile.mkdtemp(prefix="oid-index-bench-"))
    try:
        start = time.perf_counter()
        written = write_csv(directory, args.scale)
        csv_path = directory / "oidv6-train-annotations-bbox.csv"
        print(
            f"generated {written['boxes']:,} boxes over {written['images']:,} images "
            f"({csv_path.stat().st_size / 2**30:.2f} GiB CSV) in {time.perf_counter() - start:.1f} s"
        )
        cache = str(directory / "train.index")
        build = run_step("build", str(directory), cache)
        print(
            f"build: parse {build['parse_s']:.1f} s + write {build['save_s']:.1f} s, "
            f"peak RSS {build['peak_rss_mb']:.0f} MB, index file {build['file_mb']:.0f} MB "
            f"({build['images']:,} images, {build['boxes']:,} boxes)"
        )
        load = run_step("load", cache)
        print(
            f"load: {load['load_s'] * 1000:.1f} ms ({load['memmap']}), one pass over the offsets "
            f"{load['first_pass_s'] * 1000:.0f} ms, import of trainer.data {load['import_s']:.1f} s"
        )
        samples = min(args.samples, written["images"] * 4)
        results = {}
        for kind in ("full", "tiny"):
            results[kind] = run_step("workers", cache, str(args.workers), str(samples), kind)
            r = results[kind]
            print(
                f"workers over the {kind} index ({r['images']:,} images, {r['samples']:,} random "
                f"samples, {r['samples_per_s']:,.0f} samples/s): parent RSS "
                f"{r['parent']['rss']:.0f} MB"
            )
            for k, w in enumerate(r["workers"]):
                print(
                    f"  worker {k}: RSS {w['rss']:.0f} MB, PSS {w['pss']:.0f} MB, "
                    f"USS {w['uss']:.0f} MB, anonymous {w['anon']:.0f} MB"
                )
        for key in ("rss", "pss", "uss", "anon"):
            full = np.mean([w[key] for w in results["full"]["workers"]])
            tiny = np.mean([w[key] for w in results["tiny"]["workers"]])
            print(
                f"extra per worker, full index vs 1,000 images: {key.upper()} {full - tiny:+.1f} MB"
            )
    finally:
        if not args.dir:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
