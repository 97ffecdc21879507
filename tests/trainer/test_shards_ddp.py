"""Training from shards under real DDP: 2 gloo processes x 2 loader workers, a shared node cache.

One uninterrupted run is the reference: no sample twice in an epoch across ranks and workers,
equal steps on both ranks, the data contract in run.json and checkpoints. A second run is killed
with SIGKILL after a checkpoint mid-epoch and resumed: it must see the same samples at the same
steps and compute the same losses.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import torch
from test_ddp import children_of, finish, records, samples, stdout_records, torchrun, wait_gone
from trainer_fixtures import add_hygiene_cases, write_openimages

from trainer import __main__ as entry
from trainer.data.shards import load_manifest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def manifest_path(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("oid")
    write_openimages(root, train_images=16, val_images=2)
    add_hygiene_cases(root)
    out = tmp_path_factory.mktemp("shards")
    for split in ("train", "validation"):
        assert entry.main(["prepare", "--dataset", "openimages", "--data-root", str(root),
                           "--split", split, "--out", str(out / split), "--shard-size", "12KB"]) == 0  # fmt: skip
    return out / "train" / "manifest.json"


def run_args(manifest: Path, out_dir: Path, cache: Path) -> list[str]:
    return [
        "--data-format", "shards", "--manifest", str(manifest), "--output-dir", str(out_dir),
        "--cache-dir", str(cache), "--cache-max-bytes", "40KB", "--shuffle-buffer", "3",
        "--model", "retinanet_resnet18_fpn", "--trainable-backbone-layers", "0",  # the shards are the subject
        "--min-size", "64", "--max-size", "64",
        "--batch-size", "2", "--workers", "2", "--epochs", "2", "--checkpoint-every", "2",
        "--val-manifest", str(manifest.parent.parent / "validation" / "manifest.json"),
        "--eval-every", "1", "--log-every", "1", "--lr", "0.01", "--warmup-steps", "2",
        "--log-samples", "--amp", "none",
        "--device", "cpu",  # two gloo ranks, whatever GPUs the machine has
    ]  # fmt: skip


@pytest.fixture(scope="module")
def reference(manifest_path, tmp_path_factory):
    base = tmp_path_factory.mktemp("reference")
    proc = torchrun(run_args(manifest_path, base / "out", base / "cache"))
    out = finish(proc)
    assert proc.returncode == 0, out
    return base / "out", out


def test_shard_run_sees_each_sample_once_per_epoch_with_equal_steps(reference, manifest_path):
    out_dir, out = reference
    manifest = load_manifest(str(manifest_path))
    seen = samples(out_dir)
    by_epoch: dict[int, list[int]] = {}
    steps: dict[tuple[int, int], int] = {}
    for (rank, _step), rec in seen.items():
        by_epoch.setdefault(rec["epoch"], []).extend(rec["indices"])
        steps[(rank, rec["epoch"])] = steps.get((rank, rec["epoch"]), 0) + 1
    assert sorted(by_epoch) == [0, 1]
    for indices in by_epoch.values():
        assert len(indices) == len(set(indices))  # 2 ranks x 2 workers, no sample twice
        assert set(indices) <= set(range(manifest.num_samples))
    for epoch in (0, 1):
        assert steps[(0, epoch)] == steps[(1, epoch)] > 0  # DDP never waits on an uneven tail

    train = [r for r in records(out_dir / "metrics.jsonl") if r["kind"] == "train"]
    assert all("cache_hit_rate" in r and r["input_bytes_per_sec"] >= 0 for r in train)
    assert sum(r["input_bytes_per_sec"] for r in train) > 0
    assert stdout_records(out)[-1]["kind"] == "done"
    evals = [r for r in records(out_dir / "metrics.jsonl") if r["kind"] == "eval"]
    assert [r["images"] for r in evals] == [2, 2]  # the validation shards, split over 2 ranks

    # run.json and every checkpoint carry the corpus view, transform policy and topology.
    run = json.loads((out_dir / "run.json").read_text())
    data = run["data"]
    assert data["format"] == "shards"
    assert data["corpus"]["manifest_version"] == manifest.version
    assert data["corpus"]["manifest_sha256"] == manifest.sha256
    assert data["topology"]["world_size"] == 2 and data["topology"]["loader_workers"] == 2
    assert data["transform_policy"]["exif_orientation"].startswith("applied")
    for ckpt_path in (out_dir / "checkpoints").glob("step-*.pt"):
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=True)
        assert ckpt["data"] == data
        assert [p["topology"] for p in ckpt["stream"]] == [[2, 2], [2, 2]]


def test_killed_shard_run_resumes_with_the_same_samples_and_losses(
    reference, manifest_path, tmp_path
):
    ref_dir, _ = reference
    out_dir = tmp_path / "out"
    args = run_args(manifest_path, out_dir, tmp_path / "cache")
    proc = torchrun(args)
    for line in proc.stdout:
        if "saved checkpoint" in line and "step-000000002.pt" in line:
            break
    else:
        pytest.fail("the run ended before its first checkpoint:\n" + finish(proc))
    trainers = children_of(proc.pid)
    os.killpg(proc.pid, signal.SIGKILL)  # kill -9 of the launcher's process group
    proc.wait(timeout=30)
    assert wait_gone(trainers) == []
    newest = max(int(p.stem.split("-")[1]) for p in (out_dir / "checkpoints").glob("step-*.pt"))
    first_epoch_steps = len(
        [1 for (r, _), rec in samples(ref_dir).items() if r == 0 and rec["epoch"] == 0]
    )
    assert 2 <= newest < first_epoch_steps  # mid-epoch: the stream position matters

    resumed = torchrun(args)
    out = finish(resumed)
    assert resumed.returncode == 0, out
    assert f"resumed from {out_dir}/checkpoints/step-{newest:09d}.pt: step {newest}" in out
    assert [r for r in stdout_records(out) if r["kind"] == "train"][0]["step"] == newest + 1

    assert samples(out_dir) == samples(ref_dir)
    ref_train = {r["step"]: r for r in records(ref_dir / "metrics.jsonl") if r["kind"] == "train"}
    got = [r for r in records(out_dir / "metrics.jsonl") if r["kind"] == "train"]
    assert [r["step"] for r in got] == sorted(ref_train)
    for rec in got:
        assert rec["loss"] == pytest.approx(ref_train[rec["step"]]["loss"], rel=1e-4, abs=1e-5)
