"""Shards: prepare (hygiene, manifest), rejection of bad shards, the stream's assignment and exact
resume (in process, real DataLoader workers), the shard cache. DDP runs are in test_shards_ddp.py."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import signal
import tarfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps
from torch.utils.data import get_worker_info
from trainer_fixtures import add_hygiene_cases, write_coco, write_openimages

from tests.trainer.test_loader_workers import killed_workers
from trainer import __main__ as entry
from trainer.data.prepare import orient_boxes
from trainer.data.shard_cache import ShardCache
from trainer.data.shards import load_manifest
from trainer.data.stream import ShardEvalDataset, ShardFeed, ShardStream, steps_in_epoch
from trainer.errors import ConfigError, TrainerError


def prepare(capsys, *args: str) -> tuple[int, str, str]:
    code = entry.main(["prepare", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def oid(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("oid")
    write_openimages(root, train_images=24, val_images=4)
    return root, add_hygiene_cases(root)


@pytest.fixture(scope="module")
def shards(oid, tmp_path_factory) -> Path:
    root, _ = oid
    out = tmp_path_factory.mktemp("shards")
    code = entry.main(["prepare", "--dataset", "openimages", "--data-root", str(root),
                       "--split", "train", "--out", str(out), "--shard-size", "12KB",
                       "--threads", "2"])  # fmt: skip
    assert code == 0
    return out


def stream(manifest, rank=0, world=1, workers=1, batch=2, buffer=4, epoch=0, seed=5):
    s = ShardStream(
        manifest, rank=rank, world_size=world, workers=workers, batch_size=batch, seed=seed,
        buffer_size=buffer, min_size=32, max_size=64, hflip_probability=0.5, fast_decode=True,
    )  # fmt: skip
    s.configure(epoch, 0, {})
    return s


def ids(batch_item) -> list[int]:
    return [t["index"] for t in batch_item[2]]


def played_by(s: ShardStream, worker: int) -> list:
    """The items loader worker `worker` yields, through the stream's own iteration: in this
    process it is worker 0, and the rotation makes it play `worker`'s slot."""
    s.configure(s.epoch, worker, s.start)
    return list(s)


def test_prepare_leaves_out_corrupt_and_duplicate_and_turns_rotated_upright(oid, shards):
    root, cases = oid
    manifest = json.loads((shards / "manifest.json").read_text())
    totals = manifest["totals"]
    # 24 good images + the rotated one; out: the truncated, the byte copy, the listed-missing one.
    assert totals["samples"] == 25 and totals["listed_images"] == 28
    assert [c["file"] for c in manifest["corrupt"]] == [cases["corrupt"]]
    assert "truncated" in manifest["corrupt"][0]["error"]
    assert manifest["duplicates"] == [
        {"file": cases["duplicate"], "same_as": cases["duplicate_of"]}
    ]
    assert len(manifest["missing"]) == 1 and totals["rotated"] == 1
    assert [s["path"].rsplit("/", 1)[1] for s in manifest["sources"]] == [
        "oidv7-class-descriptions-boxable.csv", "oidv6-train-annotations-bbox.csv",
    ]  # fmt: skip
    assert all(len(s["sha256"]) == 64 for s in manifest["sources"])
    assert [c["name"] for c in manifest["classes"]] == ["Person", "Car", "Tree"]
    assert len(manifest["shards"]) > 4 and sum(s["samples"] for s in manifest["shards"]) == 25
    for entry_ in manifest["shards"]:
        path = shards / entry_["file"]
        assert path.stat().st_size == entry_["bytes"]
        with tarfile.open(path) as tar:
            names = tar.getnames()
        assert len(names) == 2 * entry_["samples"]
        assert [n.rsplit(".", 1)[1] for n in names] == ["jpg", "json"] * entry_["samples"]

    # The rotated image: stored 80x48 with orientation 6, now upright 48x80, box turned with it.
    rotated = None
    for entry_ in manifest["shards"]:
        with tarfile.open(shards / entry_["file"]) as tar:
            if f"{cases['rotated']}.json" in tar.getnames():
                meta = json.loads(tar.extractfile(f"{cases['rotated']}.json").read())
                rotated = Image.open(io.BytesIO(tar.extractfile(f"{cases['rotated']}.jpg").read()))
                rotated.load()
    assert rotated is not None
    assert (meta["width"], meta["height"]) == (48, 80) == rotated.size
    assert meta["exif_orientation"] == 6 and 0x0112 not in rotated.getexif()
    x1, y1, x2, y2 = meta["boxes"][0]
    assert (x1, y1, x2, y2) == pytest.approx((0.4, 0.1, 0.8, 0.4), abs=1e-6)
    pixels = np.asarray(rotated.convert("RGB")).astype(int)
    inside = pixels[int(y1 * 80) + 2 : int(y2 * 80) - 2, int(x1 * 48) + 2 : int(x2 * 48) - 2]
    assert inside[..., 0].mean() > 200 and inside[..., 1:].mean() < 40  # the red rectangle
    outside = pixels[int(y2 * 80) + 3 :, :]
    assert outside[..., 0].mean() < 40


def test_orientation_moves_boxes_as_exif_transpose_moves_pixels():
    """All 8 orientations: a one-pixel marker's position after exif_transpose equals the box's."""
    stored = np.zeros((6, 10, 3), np.uint8)
    stored[1, 7] = 255  # x=7, y=1 in a 10 x 6 image
    box = np.array([[0.7, 1 / 6, 0.8, 2 / 6]], np.float32)
    for orientation in range(1, 9):
        img = Image.fromarray(stored)
        exif = Image.Exif()
        exif[0x0112] = orientation
        buf = io.BytesIO()
        img.save(buf, format="PNG", exif=exif)
        upright = np.asarray(ImageOps.exif_transpose(Image.open(buf)))
        ys, xs = np.nonzero(upright[..., 0])
        h, w = upright.shape[:2]
        x1, y1, x2, y2 = orient_boxes(box, orientation)[0]
        assert (x1 * w, y1 * h, x2 * w, y2 * h) == pytest.approx(
            (xs[0], ys[0], xs[0] + 1, ys[0] + 1), abs=1e-4
        ), orientation


def test_prepare_is_reproducible_and_verifies(oid, shards, tmp_path, capsys):
    root, _ = oid
    code, out, err = prepare(capsys, "--dataset", "openimages", "--data-root", str(root),
                             "--split", "train", "--out", str(tmp_path), "--shard-size", "12KB")  # fmt: skip
    assert code == 0, err
    first = json.loads((shards / "manifest.json").read_text())
    again = json.loads((tmp_path / "manifest.json").read_text())
    assert again["shards"] == first["shards"] and again["version"] == first["version"]
    assert entry.main(["verify", "--manifest", str(tmp_path / "manifest.json")]) == 0
    assert "25 samples" in capsys.readouterr().out


def test_prepare_coco_with_a_class_subset(tmp_path, capsys):
    write_coco(tmp_path / "coco", train_images=6, val_images=2)
    code, out, err = prepare(capsys, "--dataset", "coco", "--data-root", str(tmp_path / "coco"),
                             "--split", "validation", "--out", str(tmp_path / "s"),
                             "--classes", "car,person")  # fmt: skip
    assert code == 0, err
    manifest = load_manifest(str(tmp_path / "s" / "manifest.json"))
    assert manifest.class_names == ["person", "car"] and manifest.num_samples == 2
    assert manifest.data["filter_policy"]["images_without_boxes"] == "kept"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shard-size", "lots"], "--shard-size: not a size: 'lots'"),
        (["--data-root", "/nope"], "--data-root '/nope': no such directory"),
    ],
)
def test_prepare_bad_input_is_one_line(capsys, tmp_path, args, message):
    code, _, err = prepare(capsys, "--dataset", "coco", "--split", "train", "--out",
                           str(tmp_path), *args)  # fmt: skip
    assert code == 2
    assert err.strip().startswith(f"trainer prepare: error: {message}")
    assert len(err.strip().splitlines()) == 1


def copy_shards(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for p in src.iterdir():
        (dst / p.name).write_bytes(p.read_bytes())
    return dst / "manifest.json"


def test_manifest_rejects_a_shard_whose_count_or_checksum_disagrees(shards, tmp_path, capsys):
    # A count that disagrees: verify names the shard; so does the training stream on reading it.
    path = copy_shards(shards, tmp_path / "count")
    data = json.loads(path.read_text())
    data["shards"][1]["samples"] += 1
    path.write_text(json.dumps(data))
    assert entry.main(["verify", "--manifest", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    name = data["shards"][1]["file"]
    assert err.startswith(f"trainer verify: error: {tmp_path}/count/{name}: ")
    assert f"manifest says {data['shards'][1]['samples']}" in err and len(err.splitlines()) == 1

    # Same size, one byte changed: the checksum disagrees.
    path = copy_shards(shards, tmp_path / "sum")
    name = json.loads(path.read_text())["shards"][2]["file"]
    blob = bytearray((tmp_path / "sum" / name).read_bytes())
    blob[700] ^= 0xFF  # inside the first JPEG's data
    (tmp_path / "sum" / name).write_bytes(bytes(blob))
    assert entry.main(["verify", "--manifest", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert f"{name}: sha256" in err and "differs from the manifest's" in err
    manifest = load_manifest(str(path))
    feed = ShardFeed(stream(manifest, batch=1, buffer=1), 0, False, 2)
    with pytest.raises(TrainerError, match=f"{name}: sha256"):
        for epoch in range(2):  # every shard is read within an epoch (1 slot, batch 1)
            list(feed.epoch_batches(epoch, 0))

    # A truncated shard is refused when the manifest loads, before any training.
    path = copy_shards(shards, tmp_path / "short")
    (tmp_path / "short" / name).write_bytes(blob[:-1000])
    with pytest.raises(ConfigError, match=f"{name}: {len(blob) - 1000} bytes, manifest"):
        load_manifest(str(path))


def test_every_shard_goes_to_one_rank_and_worker_and_ranks_get_equal_steps(shards):
    manifest = load_manifest(str(shards / "manifest.json"))
    world, workers, batch = 2, 2, 2
    for epoch in range(3):
        seen: list[int] = []
        per_rank = []
        for rank in range(world):
            count = 0
            for worker in range(workers):
                s = stream(manifest, rank, world, workers, batch, epoch=epoch)
                batches = played_by(s, worker)
                count += len(batches)
                seen += [i for b in batches for i in ids(b)]
                shard_samples = sum(x.samples for x in s.slot_shards(worker))
                assert len(batches) == shard_samples // batch  # only a partial batch is dropped
            per_rank.append(count)
        assert len(seen) == len(set(seen))  # no sample twice in an epoch, across ranks and workers
        assert set(seen) <= set(range(manifest.num_samples))
        steps = steps_in_epoch(manifest, 5, epoch, world, workers, batch)
        assert steps == min(per_rank) > 0
    orders = [[ids(b) for b in stream(manifest, epoch=e)] for e in (0, 1)]
    assert orders[0] != orders[1]  # reshuffled per epoch


def test_stream_resumes_exactly_mid_buffer_and_mid_drain(shards):
    manifest = load_manifest(str(shards / "manifest.json"))
    full = list(stream(manifest, buffer=5))
    assert len(full) == 12
    for k in (1, 4, 9, 11):  # buffer filling / steady state / draining
        s = stream(manifest, buffer=5)
        s.configure(0, 0, {0: full[k - 1][3]["state"]})
        rest = list(s)
        assert [ids(b) for b in rest] == [ids(b) for b in full[k:]], k


def test_feed_resumes_exactly_with_two_loader_workers(shards):
    """Real DataLoader workers: stop after k batches, restore the position in a new feed."""
    manifest = load_manifest(str(shards / "manifest.json"))

    def feed():
        return ShardFeed(stream(manifest, workers=2, buffer=3), 2, False, 2)

    reference = feed()
    full = [[t["index"] for t in targets] for _, targets in reference.epoch_batches(0, 0)]
    assert len(full) == reference.steps(0) >= 8
    for k in (3, 6):
        first = feed()
        batches = first.epoch_batches(0, 0)
        for _ in range(k):
            next(batches)
        position = json.loads(json.dumps(first.position()))  # plain data, as in a checkpoint
        batches.close()
        resumed = feed()
        assert resumed.restore(position, 0, k) == ""
        rest = [[t["index"] for t in targets] for _, targets in resumed.epoch_batches(0, k)]
        assert rest == full[k:], k
    assert "topology" in feed().restore({**position, "topology": [2, 2]}, 0, 3)


class UnkillableStream(ShardStream):
    """Worker 0 can be neither terminated (SIGTERM ignored) nor exit (a non-daemon thread sleeps),
    as a worker blocked inside its fork with the trainer's SIGTERM handler could not."""

    def __iter__(self):
        info = get_worker_info()
        if info is not None and info.id == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            threading.Thread(target=time.sleep, args=(3600,)).start()
        return super().__iter__()


@pytest.mark.slow  # about 12 s, mostly DataLoader's own joins of the stuck worker
def test_a_feed_left_mid_epoch_kills_a_worker_that_cannot_exit(shards, capsys):
    manifest = load_manifest(str(shards / "manifest.json"))
    s = UnkillableStream(
        manifest, rank=0, world_size=1, workers=2, batch_size=2, seed=5, buffer_size=4,
        min_size=32, max_size=64, hflip_probability=0.5, fast_decode=True,
    )  # fmt: skip
    before = {p.pid for p in multiprocessing.active_children()}
    batches = ShardFeed(s, 2, False, 2).epoch_batches(0, 0)
    try:
        next(batches), next(batches)  # one batch from each worker
        batches.close()  # left mid-epoch, as at --max-steps or a stop
        err = capsys.readouterr().err
        assert len(killed_workers(err, "training")) == 1, err
        assert [p.pid for p in multiprocessing.active_children() if p.pid not in before] == []
    finally:  # whatever happened, leave no worker for this test process to wait for at exit
        for proc in multiprocessing.active_children():
            if proc.pid not in before:
                proc.kill()
                proc.join()


def test_validation_manifest_as_an_evaluation_dataset(oid, tmp_path):
    root, _ = oid
    assert entry.main(["prepare", "--dataset", "openimages", "--data-root", str(root), "--split",
                       "validation", "--out", str(tmp_path), "--shard-size", "8KB"]) == 0  # fmt: skip
    manifest = load_manifest(str(tmp_path / "manifest.json"))
    data = ShardEvalDataset(manifest, train=False, min_size=32, max_size=64)
    assert len(data) == manifest.num_samples == 4 and len(manifest.shards) >= 2
    image, target = data[3]
    assert image.shape[0] == 3 and target["orig_size"] == (64, 80)
    assert len(target["boxes"]) == data.index.box_counts()[3] > 0


def _open_all(directory: str, sources: list[str], infos: list) -> None:
    cache = ShardCache(directory, 0)
    for src, info in zip(sources, infos, strict=True):
        handle, _, _ = cache.open(src, info)
        handle.read()
        handle.close()


def test_cache_copies_verifies_and_evicts_least_recently_used(shards, tmp_path):
    manifest = load_manifest(str(shards / "manifest.json"))
    a, b, c = manifest.shards[:3]
    cap = a.bytes + b.bytes + c.bytes - 1  # room for two of the three
    cache = ShardCache(str(tmp_path / "cache"), cap)
    for shard in (a, b):
        handle, hit, copied = cache.open(manifest.shard_path(shard), shard)
        handle.close()
        assert not hit and copied == shard.bytes
    handle, hit, _ = cache.open(manifest.shard_path(a), a)  # a is now the most recently used
    handle.close()
    assert hit
    os.utime(cache.cached_path(b), (1, 1))  # make b clearly the least recently used
    handle, hit, _ = cache.open(manifest.shard_path(c), c)
    assert not hit and handle.read(512)
    handle.close()
    left = sorted(p.name for p in (tmp_path / "cache").iterdir() if not p.name.startswith("."))
    assert left == sorted(os.path.basename(cache.cached_path(s)) for s in (a, c))
    # A source that disagrees with the manifest never enters the cache.
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"\0" * b.bytes)
    with pytest.raises(TrainerError, match="bad.tar: sha256"):
        cache.open(str(bad), b)
    assert not os.path.exists(cache.cached_path(b))
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(".tmp-")]


def test_the_next_shard_is_fetched_into_the_cache_while_one_is_read(shards, tmp_path):
    manifest = load_manifest(str(shards / "manifest.json"))
    cold = stream(manifest, buffer=1)
    cold.cache = ShardCache(str(tmp_path / "cache"))
    order = cold.slot_shards(0)
    batches = iter(cold)
    first = next(batches)
    # While a shard is read, the one after it lands in the cache (whole: it is renamed in).
    ahead = order[first[3]["io"]["lookups"]]  # after the shards opened for the first batch
    deadline = time.monotonic() + 30
    while not os.path.exists(cold.cache.cached_path(ahead)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert os.path.getsize(cold.cache.cached_path(ahead)) == ahead.bytes
    infos = [first[3]] + [b[3] for b in batches]
    # Fetched ahead is not a hit: nothing was in the cache before this reader needed it.
    assert sum(i["io"]["hits"] for i in infos) == 0
    assert sum(i["io"]["lookups"] for i in infos) == len(order)
    warm = stream(manifest, buffer=1)
    warm.cache = ShardCache(str(tmp_path / "cache"))
    infos = [b[3] for b in warm]
    assert (
        sum(i["io"]["hits"] for i in infos) == sum(i["io"]["lookups"] for i in infos) == len(order)
    )


def test_cache_shared_by_concurrent_processes(shards, tmp_path):
    """Four processes fill one cache directory with the same shards at once: every file ends
    complete (atomic rename), and every reader saw whole shards."""
    manifest = load_manifest(str(shards / "manifest.json"))
    infos = manifest.shards
    sources = [manifest.shard_path(s) for s in infos]
    directory = str(tmp_path / "shared")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_open_all, args=(directory, sources, infos)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    cache = ShardCache(directory, 0)
    for info in infos:
        assert os.path.getsize(cache.cached_path(info)) == info.bytes
    assert not [n for n in os.listdir(directory) if n.startswith(".tmp-")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data-format", "shards"], "--data-format shards needs --manifest PATH"),
        (["--manifest", "m.json"], "--manifest applies to --data-format shards only"),
        (["--data-format", "shards", "--manifest", "/nope.json"], "--manifest '/nope.json': no such file"),
        (["--dataset", "synthetic", "--cache-max-bytes", "big"], "--cache-max-bytes: not a size: 'big'"),
        (["--dataset", "synthetic", "--shuffle-buffer", "0"], "--shuffle-buffer 0: must be at least 1"),
    ],
)  # fmt: skip
def test_shard_flags_bad_input_is_one_line(capsys, monkeypatch, args, message):
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert entry.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"trainer: error: {message}") and len(err.splitlines()) == 1


def test_shard_training_needs_a_validation_manifest_to_evaluate(shards, capsys):
    args = ["--data-format", "shards", "--manifest", str(shards / "manifest.json")]
    assert entry.main(args) == 2
    err = capsys.readouterr().err
    assert "evaluates on --val-manifest PATH" in err and "--eval-every 0" in err


def test_resume_refuses_a_checkpoint_of_another_manifest_version():
    from trainer.data.feeds import check_same_corpus

    ours = {"corpus": {"manifest": "/s/new/manifest.json", "manifest_version": "bbbb"}}
    saved = {"data": {"corpus": {"manifest": "/s/old/manifest.json", "manifest_version": "aaaa"}}}
    with pytest.raises(ConfigError, match="manifest version aaaa .*this run uses bbbb"):
        check_same_corpus(saved, "ckpt.pt", ours)
    check_same_corpus({"data": {"corpus": {"manifest_version": "bbbb"}}}, "ckpt.pt", ours)
    check_same_corpus({}, "ckpt.pt", ours)  # a checkpoint from before shards: nothing to compare
