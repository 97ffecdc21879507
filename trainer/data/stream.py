"""Training from shards: a resumable, rank- and worker-aware stream of batches.

Assignment. Each epoch the manifest's shards are permuted from (seed, epoch) and dealt round-robin
to ``world_size x workers`` slots: shard j goes to global slot g = j mod slots, which is rank
g mod world_size, loader worker g div world_size. Every shard belongs to exactly one (rank,
worker) per epoch, so no sample is seen twice in an epoch.

Order. A slot reads its shards in order and shuffles through a bounded buffer (``--shuffle-buffer``
samples): once full, each new sample replaces a randomly drawn one, which is emitted; at the end
the buffer drains in random order. Draw n of a slot is a hash of (seed, epoch, slot, n), so the
order is a pure function of the seed, the manifest and the topology. A slot emits whole batches
only (its last partial batch is dropped), and the DataLoader takes one batch from each worker in
turn (its in-order round robin).

Equal steps. A rank's batches in an epoch are known from the manifest counts before reading;
every rank trains ``min`` over ranks of that number, so DDP never waits for an uneven tail. What
is dropped: per slot fewer than ``batch_size`` samples, per rank the batches beyond the minimum.
The assignment changes every epoch, so it is not the same samples every epoch.

Position. Each batch carries its slot's state after it: batches emitted, the next stream position
to read, and the stream positions of the samples in the buffer (in buffer order). Checkpoints
store the last state of every slot; a resume re-reads only the buffered samples and continues
from the read position (tar headers are skipped by seeking, samples before it are never read),
and starts the loader's worker round robin at the slot after the last one consumed. The resumed
stream is therefore exactly the uninterrupted one. A resume with another world size or worker
count cannot map the position: it starts the next epoch (and says so).
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import threading
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, TypedDict

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from trainer.data.dataset import DetectionDataset, Target
from trainer.data.index import build_from_rows
from trainer.data.shard_cache import ShardCache
from trainer.data.shards import Manifest, RawSample, ShardInfo, read_shard, read_shard_at
from trainer.data.transforms import decode_image, flip_decision, hflip, resized_size
from trainer.data.workers import LoaderWorkers
from trainer.errors import TrainerError


class Snapshot(TypedDict):
    """Where a slot's reading stands as a sample is emitted (see Position above)."""

    read: int  # the next stream position to read
    buffer: list[int]  # stream positions of the buffered samples, in buffer order


class SlotState(Snapshot):
    """One slot's place in its stream after a batch."""

    batches: int  # batches emitted


class StreamPosition(TypedDict):
    """One rank's place for a checkpoint: every slot's last state and the slot consumed last."""

    epoch: int
    topology: list[int]  # [ranks, loader workers]
    last_slot: int
    slots: dict[str, SlotState]  # by worker, as text (a checkpoint's keys are plain data)


def epoch_slots(num_shards: int, seed: int, epoch: int, slots: int) -> list[list[int]]:
    """Shard positions (in manifest order) of every global slot for one epoch, in reading order."""
    order = np.random.default_rng((seed, epoch, 2002)).permutation(num_shards).tolist()
    return [order[g::slots] for g in range(slots)]


def global_slot(rank: int, worker: int, world_size: int) -> int:
    return worker * world_size + rank


def slot_batches(manifest: Manifest, shard_ids: list[int], batch_size: int) -> int:
    return sum(manifest.shards[j].samples for j in shard_ids) // batch_size


def steps_in_epoch(
    manifest: Manifest, seed: int, epoch: int, world_size: int, workers: int, batch_size: int
) -> int:
    """The same number on every rank: the fewest batches any rank's slots can form."""
    per_slot = epoch_slots(len(manifest.shards), seed, epoch, world_size * workers)
    return min(
        sum(
            slot_batches(manifest, per_slot[global_slot(r, w, world_size)], batch_size)
            for w in range(workers)
        )
        for r in range(world_size)
    )


def draw(seed: int, epoch: int, slot: int, n: int) -> int:
    digest = hashlib.blake2b(f"{seed}/{epoch}/{slot}/{n}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class ShardStream(IterableDataset):
    """Yields ``("batch", images, targets, info)`` per batch, or ``("error", message)`` once."""

    def __init__(
        self,
        manifest: Manifest,
        *,
        rank: int,
        world_size: int,
        workers: int,
        batch_size: int,
        seed: int,
        buffer_size: int,
        min_size: int,
        max_size: int,
        hflip_probability: float,
        fast_decode: bool,
        cache_dir: str | None = None,
        cache_max_bytes: int = 0,
    ) -> None:
        self.manifest = manifest
        self.rank = rank
        self.world_size = world_size
        self.workers = max(1, workers)  # 0 loader processes: one slot, read in the main process
        self.batch_size = batch_size
        self.seed = seed
        self.buffer_size = max(1, buffer_size)
        self.min_size = min_size
        self.max_size = max_size
        self.hflip_probability = hflip_probability
        self.fast_decode = fast_decode
        self.cache = ShardCache(cache_dir, cache_max_bytes) if cache_dir else None
        self.epoch = 0
        self.rotation = 0
        self.start: dict[int, SlotState] = {}
        self._io = {"bytes": 0, "hits": 0, "lookups": 0}
        self._ahead: tuple[ShardInfo, threading.Thread, list[bool]] | None = None

    def configure(self, epoch: int, rotation: int, start: dict[int, SlotState]) -> None:
        """Before a DataLoader is built for an epoch: worker i plays slot (i + rotation) mod W."""
        self.epoch, self.rotation, self.start = epoch, rotation, start
        self._ahead = None

    def slot_shards(self, worker: int) -> list[ShardInfo]:
        per_slot = epoch_slots(
            len(self.manifest.shards), self.seed, self.epoch, self.world_size * self.workers
        )
        return [
            self.manifest.shards[j]
            for j in per_slot[global_slot(self.rank, worker, self.world_size)]
        ]

    def __iter__(self) -> Iterator[tuple]:
        info = get_worker_info()
        worker = ((info.id if info else 0) + self.rotation) % self.workers
        try:
            yield from self._batches(worker)
        except TrainerError as exc:
            yield ("error", str(exc))
        except OSError as exc:
            yield ("error", f"{getattr(exc, 'filename', None) or 'shard'}: cannot read ({exc})")

    # The stream of one slot -----------------------------------------------------------------
    def _batches(self, worker: int) -> Iterator[tuple]:
        slot = global_slot(self.rank, worker, self.world_size)
        shards = self.slot_shards(worker)
        total = sum(s.samples for s in shards)
        state = self.start.get(worker)
        batches = state["batches"] if state else 0
        if batches >= total // self.batch_size:
            return
        samples: list[RawSample] = []
        for sample, snapshot in self._emitted(slot, shards, state):
            samples.append(sample)
            if len(samples) < self.batch_size:
                continue
            images, targets = zip(*(self._decode(s) for s in samples), strict=True)
            samples = []
            batches += 1
            io_stats, self._io = self._io, {"bytes": 0, "hits": 0, "lookups": 0}
            yield (
                "batch",
                list(images),
                list(targets),
                {"slot": worker, "state": {"batches": batches, **snapshot()}, "io": io_stats},
            )
            if batches >= total // self.batch_size:
                return  # the rest is a partial batch

    def _emitted(
        self, slot: int, shards: list[ShardInfo], state: SlotState | None
    ) -> Iterator[tuple[RawSample, Callable[[], Snapshot]]]:
        """Samples in emission order from the state's position; with each, a snapshot function."""
        n = state["batches"] * self.batch_size if state else 0
        read_from = state["read"] if state else 0
        wanted = list(state["buffer"]) if state else []
        fetched: dict[int, RawSample] = {}
        buffer: list[tuple[int, RawSample]] | None = None if wanted else []
        cursor = read_from

        def snapshot() -> Snapshot:
            return {"read": cursor, "buffer": [p for p, _ in buffer or []]}

        def restore() -> list[tuple[int, RawSample]]:
            missing = [p for p in wanted if p not in fetched]
            if missing:
                raise TrainerError(f"resume: buffered stream positions {missing[:3]} not found")
            return [(p, fetched[p]) for p in wanted]

        for pos, sample in self._read(shards, read_from, set(wanted)):
            if pos < read_from:
                fetched[pos] = sample
                continue
            if buffer is None:
                buffer = restore()
            cursor = pos + 1
            if len(buffer) < self.buffer_size:
                buffer.append((pos, sample))
                continue
            j = draw(self.seed, self.epoch, slot, n) % len(buffer)
            out = buffer[j][1]
            buffer[j] = (pos, sample)
            n += 1
            yield out, snapshot
        if buffer is None:
            buffer = restore()
        while buffer:
            j = draw(self.seed, self.epoch, slot, n) % len(buffer)
            out = buffer[j][1]
            buffer[j] = buffer[-1]
            buffer.pop()
            n += 1
            yield out, snapshot

    def _read(
        self, shards: list[ShardInfo], read_from: int, wanted: set[int]
    ) -> Iterator[tuple[int, RawSample]]:
        """(stream position, sample): the ``wanted`` positions before ``read_from``, then all."""
        base = 0
        for k, shard in enumerate(shards):
            end = base + shard.samples
            ordinals = {p - base for p in wanted if base <= p < end}
            if end <= read_from and not ordinals:
                base = end
                continue
            handle = self._open(shard)
            if k + 1 < len(shards):
                self._fetch_ahead(shards[k + 1])
            with handle:
                if base >= read_from:
                    samples = read_shard(
                        handle, shard, self.manifest.shard_path(shard), self.cache is None
                    )
                else:
                    samples = read_shard_at(
                        handle, shard, self.manifest.shard_path(shard), ordinals, read_from - base
                    )
                for sample in samples:
                    self._io["bytes"] += sample.size
                    yield base + sample.sample_id - shard.first_id, sample
            base = end

    def _open(self, shard: ShardInfo) -> BinaryIO:
        path = self.manifest.shard_path(shard)
        self._io["lookups"] += 1
        if self.cache is None:
            return open(path, "rb")  # noqa: SIM115 -- closed by the caller
        ahead = self._ahead
        if ahead is not None and ahead[0] is shard:
            ahead[1].join()  # never copy the same shard twice; it is (nearly) there
        handle, hit, _copied = self.cache.open(path, shard)
        if ahead is not None and ahead[0] is shard and ahead[2]:
            hit = ahead[2][0]  # a hit means: in the cache before this reader asked for it
        self._ahead = None
        self._io["hits"] += int(hit)
        return handle

    def _fetch_ahead(self, shard: ShardInfo) -> None:
        """With a cache, copy the reader's next shard in a background thread while this one is
        read and decoded, so a cold cache does not stall the reader at each shard boundary.
        Errors are left for the real open to report."""
        if self.cache is None:
            return
        cache, path, result = self.cache, self.manifest.shard_path(shard), []

        def fetch() -> None:
            try:
                handle, hit, _ = cache.open(path, shard)
                handle.close()
                result.append(hit)
            except (TrainerError, OSError):
                pass

        thread = threading.Thread(target=fetch, name="shard-fetch-ahead", daemon=True)
        thread.start()
        self._ahead = (shard, thread, result)

    def _decode(self, sample: RawSample) -> tuple[torch.Tensor, Target]:
        try:
            meta = json.loads(sample.meta)
            height, width = int(meta["height"]), int(meta["width"])
            draft = resized_size(height, width, self.min_size, self.max_size)
            image = decode_image(io.BytesIO(sample.jpeg), draft if self.fast_decode else None)  # type: ignore[arg-type]
        except (OSError, ValueError, KeyError, SyntaxError) as exc:
            raise TrainerError(
                f"sample {sample.key} (id {sample.sample_id}) of manifest "
                f"{self.manifest.path}: cannot decode ({exc}); re-run prepare"
            ) from None
        h, w = image.shape[-2:]
        boxes = torch.tensor(meta["boxes"], dtype=torch.float32).reshape(-1, 4)
        boxes[:, 0::2] *= w
        boxes[:, 1::2] *= h
        if flip_decision(self.seed, self.epoch, sample.sample_id, self.hflip_probability):
            image, boxes = hflip(image, boxes)
        return image, {
            "boxes": boxes,
            "labels": torch.tensor(meta["labels"], dtype=torch.int64),
            "index": sample.sample_id,
            "key": sample.key,
            "orig_size": (height, width),
            "skipped": [],
        }


def _identity(item: object) -> object:
    return item


class ShardFeed:
    """The training loop's view of the stream on one rank: a DataLoader per epoch, the stream
    position for checkpoints, and the input counters for metrics records."""

    def __init__(
        self, stream: ShardStream, loader_workers: int, pin_memory: bool, prefetch_factor: int
    ) -> None:
        self.stream = stream
        self.loader_workers = loader_workers
        self.pin_memory = pin_memory
        self.prefetch_factor = prefetch_factor
        self.epoch = 0
        self.slots: dict[int, SlotState] = {}
        self.last_slot = -1
        self._restored: StreamPosition | None = None
        self.totals = {"bytes": 0, "hits": 0, "lookups": 0}
        self._window = {"bytes": 0, "hits": 0, "lookups": 0}
        self._steps: dict[int, int] = {}

    @property
    def topology(self) -> list[int]:
        return [self.stream.world_size, self.stream.workers]

    def steps(self, epoch: int) -> int:
        if epoch not in self._steps:
            s = self.stream
            self._steps[epoch] = steps_in_epoch(
                s.manifest, s.seed, epoch, s.world_size, s.workers, s.batch_size
            )
        return self._steps[epoch]

    def position(self) -> StreamPosition:
        """Plain data for the checkpoint (one per rank)."""
        return {
            "epoch": self.epoch,
            "topology": self.topology,
            "last_slot": self.last_slot,
            "slots": {str(k): v for k, v in self.slots.items()},
        }

    def restore(self, position: StreamPosition | None, epoch: int, step_in_epoch: int) -> str:
        """Use a checkpoint's position for ``epoch``; returns a note when it cannot be used."""
        if not step_in_epoch:
            return ""
        if not position or position.get("epoch") != epoch:
            return "no stream position for this epoch in the checkpoint: the epoch restarts"
        if list(position.get("topology", [])) != self.topology:
            return (
                f"checkpoint stream topology (ranks, workers) {position.get('topology')} differs "
                f"from this run's {self.topology}: the position cannot be mapped"
            )
        done = sum(int(state["batches"]) for state in position.get("slots", {}).values())
        if done != step_in_epoch:
            return (
                f"the checkpoint's stream position covers {done} batches of epoch {epoch}, "
                f"its progress {step_in_epoch}"
            )
        self._restored = position
        return ""

    def epoch_batches(self, epoch: int, start_batch: int) -> Iterator[tuple[list, list]]:
        self.epoch = epoch
        restored, self._restored = self._restored, None
        if restored and start_batch:
            self.slots = {int(k): v for k, v in restored["slots"].items()}
            self.last_slot = int(restored["last_slot"])
            rotation = (self.last_slot + 1) % self.stream.workers
        else:
            self.slots, self.last_slot, rotation = {}, -1, 0
        self.stream.configure(epoch, rotation, dict(self.slots))
        options: dict[str, Any] = {}
        if self.loader_workers > 0:
            options = {"prefetch_factor": self.prefetch_factor, "in_order": True}
        loader = DataLoader(
            self.stream,
            batch_size=None,
            num_workers=self.loader_workers,
            collate_fn=_identity,
            pin_memory=self.pin_memory,
            **options,
        )
        remaining = self.steps(epoch) - start_batch
        if remaining <= 0:
            return
        workers = LoaderWorkers("training", self.stream.rank)
        batches = workers.start(loader)
        try:
            for item in batches:
                if item[0] == "error":
                    raise TrainerError(item[1])
                _, images, targets, info = item
                self.slots[info["slot"]] = info["state"]
                self.last_slot = info["slot"]
                for key, value in info["io"].items():
                    self._window[key] += value
                    self.totals[key] += value
                yield images, targets
                remaining -= 1
                if remaining == 0:
                    return
        finally:
            # Ended, left mid-epoch or closed: DataLoader shuts the workers down as the iterator
            # goes; one that would not exit is killed.
            del batches
            workers.reap()
        raise TrainerError(
            f"the shard stream of epoch {epoch} ended {remaining} batch(es) early; "
            f"the manifest's counts are wrong (verify with `python -m trainer verify`)"
        )

    def take_io(self) -> list[float]:
        """[sample bytes read, shard cache hits, shard opens] since the previous call."""
        window, self._window = self._window, {"bytes": 0, "hits": 0, "lookups": 0}
        return [float(window["bytes"]), float(window["hits"]), float(window["lookups"])]


class ShardEvalDataset(DetectionDataset):
    """A validation manifest as the map-style dataset evaluation uses: annotations are read once
    from the shards' JSON members, images by offset from the tar (random access, no extraction)."""

    def __init__(self, manifest: Manifest, **options: Any) -> None:
        names: list[str] = []
        rows_img: list[int] = []
        boxes: list[list[float]] = []
        labels: list[int] = []
        groups: list[bool] = []
        heights: list[int] = []
        widths: list[int] = []
        self.locations: list[tuple[str, int, int]] = []
        for shard in manifest.shards:
            path = manifest.shard_path(shard)
            with tarfile.open(path, mode="r:") as tar:
                for member in tar:
                    if member.name.endswith(".jpg"):
                        self.locations.append((path, member.offset_data, member.size))
                        continue
                    handle = tar.extractfile(member)
                    meta = json.loads(handle.read() if handle else b"{}")
                    i = len(names)
                    names.append(f"{meta['key']}.jpg")
                    heights.append(meta["height"])
                    widths.append(meta["width"])
                    for box, label, group in zip(
                        meta["boxes"], meta["labels"], meta["group_of"], strict=True
                    ):
                        rows_img.append(i)
                        boxes.append(box)
                        labels.append(label)
                        groups.append(group)
        if len(names) != manifest.num_samples or len(self.locations) != len(names):
            raise TrainerError(
                f"{manifest.path}: shards hold {len(names)} samples, the manifest lists "
                f"{manifest.num_samples}; verify with `python -m trainer verify`"
            )
        index = build_from_rows(
            np.array(rows_img, np.int64), np.array(names, dtype="S"),
            np.array(boxes, np.float32).reshape(-1, 4), np.array(labels, np.int32),
            np.array(groups, np.uint8), manifest.class_names,
            np.array(heights, np.int32), np.array(widths, np.int32),
        )  # fmt: skip
        super().__init__(index, manifest.directory, **options)

    def image_path(self, i: int) -> str:
        path, offset, _ = self.locations[i]
        return f"{path}@{offset}"

    def load_image(self, i: int) -> torch.Tensor:
        path, offset, size = self.locations[i]
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(size)
        draft = None
        if self.fast_decode:
            draft = resized_size(
                int(self.index.heights[i]), int(self.index.widths[i]), self.min_size, self.max_size
            )
        return decode_image(io.BytesIO(data), draft)  # type: ignore[arg-type]
