"""Where training batches come from: files (a sampler over a map-style dataset) or shards (the
stream of trainer/data/stream.py), and the data contract a run records.

Both feeds answer the same two questions for the training loop: how many steps epoch e has on
this rank (``steps``, the same on every rank), and the batches of epoch e from batch k on
(``epoch_batches``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch.utils.data import DataLoader

from trainer.config import TrainConfig, parse_size
from trainer.data import build_datasets, collate
from trainer.data.dataset import DetectionDataset
from trainer.data.sampler import DistributedGroupedBatchSampler, aspect_ratio_groups
from trainer.data.shards import Manifest, load_manifest
from trainer.data.stream import ShardEvalDataset, ShardFeed, ShardStream
from trainer.distributed import DistContext
from trainer.errors import ConfigError


@dataclass
class InputMeter:
    """Shard input counters: ``take()`` gives this rank's [sample bytes read, shard cache hits,
    shard opens] since its previous call; the sums over ranks accumulate here for the records."""

    take: Callable[[], list[float]]
    cached: bool
    hits: float = 0.0
    opens: float = 0.0


class FileFeed:
    """File-per-image: the grouped batch sampler over a map-style dataset, same steps each epoch."""

    def __init__(self, sampler: DistributedGroupedBatchSampler, loader: DataLoader) -> None:
        self.sampler = sampler
        self.loader = loader

    def steps(self, epoch: int) -> int:
        return self.sampler.batches_per_rank

    def epoch_batches(self, epoch: int, start_batch: int) -> DataLoader:
        self.sampler.set_epoch(epoch, start_batch=start_batch)
        return self.loader


@dataclass
class TrainData:
    feed: ShardFeed | FileFeed
    val_set: DetectionDataset | None
    class_names: list[str]
    num_classes: int  # including background
    inputs: InputMeter | None  # shard input counters for the metrics records
    too_few: str  # the error when some epoch has no step
    info: dict[str, Any]  # the data contract for run.json and checkpoints


def build_train_data(
    cfg: TrainConfig, ctx: DistContext, log: Callable[[str], None]
) -> TrainData | None:
    """The feed and validation set the configuration asks for; None after --prepare-only."""
    pin_memory = cfg.pin_memory and ctx.device.type == "cuda"
    if cfg.data_format == "shards":
        return _shard_data(cfg, ctx, log, pin_memory)
    return _file_data(cfg, ctx, log, pin_memory)


def _shard_data(
    cfg: TrainConfig, ctx: DistContext, log: Callable[[str], None], pin_memory: bool
) -> TrainData | None:
    """The shard stream of --manifest, and --val-manifest's evaluation set when the run
    evaluates; None after --prepare-only."""
    manifest = load_manifest(str(cfg.manifest))
    class_names = manifest.class_names
    log(
        f"shards: {cfg.manifest} (version {manifest.version}): {len(manifest.shards)} shards, "
        f"{manifest.num_samples} samples, {len(class_names)} classes"
    )
    val_manifest: Manifest | None = None
    val_set: DetectionDataset | None = None
    if cfg.eval_every > 0:
        val_manifest = load_manifest(str(cfg.val_manifest))
        if val_manifest.class_names != class_names:
            raise ConfigError(
                f"{cfg.val_manifest} and {cfg.manifest} have different class tables; "
                "prepare both splits with the same --classes and class file"
            )
        val_set = ShardEvalDataset(
            val_manifest, train=False, min_size=cfg.min_size, max_size=cfg.max_size,
            seed=cfg.seed, fast_decode=cfg.fast_decode, strict=True,
        )  # fmt: skip
    if cfg.prepare_only:
        log("--prepare-only: manifests checked, exiting without training")
        return None
    stream = ShardStream(
        manifest, rank=ctx.rank, world_size=ctx.world_size, workers=cfg.workers,
        batch_size=cfg.batch_size, seed=cfg.seed, buffer_size=cfg.shuffle_buffer,
        min_size=cfg.min_size, max_size=cfg.max_size, hflip_probability=cfg.hflip,
        fast_decode=cfg.fast_decode, cache_dir=cfg.cache_dir,
        cache_max_bytes=parse_size(cfg.cache_max_bytes),
    )  # fmt: skip
    feed = ShardFeed(stream, cfg.workers, pin_memory, cfg.prefetch_factor)
    slots = ctx.world_size * stream.workers
    if len(manifest.shards) < slots:
        log(
            f"note: {len(manifest.shards)} shards for {slots} readers (ranks x workers): some "
            "read nothing; prepare with a smaller --shard-size"
        )
    too_few = (
        f"{manifest.num_samples} samples in {len(manifest.shards)} shards are too few for "
        f"--batch-size {cfg.batch_size} on {ctx.world_size} rank(s) x {stream.workers} "
        "worker(s) in some epoch; use fewer workers, a smaller batch or smaller shards"
    )
    inputs = InputMeter(feed.take_io, cached=bool(cfg.cache_dir))
    return TrainData(
        feed, val_set, list(class_names), len(class_names) + 1, inputs, too_few,
        data_contract(cfg, ctx, manifest, val_manifest),
    )  # fmt: skip


def _file_data(
    cfg: TrainConfig, ctx: DistContext, log: Callable[[str], None], pin_memory: bool
) -> TrainData | None:
    """The grouped batch sampler over the file-per-image datasets; None after --prepare-only."""
    train_set, val_set = build_datasets(cfg, ctx, log)
    if cfg.prepare_only:
        log("--prepare-only: datasets indexed, exiting without training")
        return None
    groups = aspect_ratio_groups(
        train_set.index.heights, train_set.index.widths, cfg.aspect_ratio_group_factor
    )
    sampler = DistributedGroupedBatchSampler(
        groups, cfg.batch_size, ctx.rank, ctx.world_size, cfg.seed
    )
    loader_options: dict[str, Any] = {}
    if cfg.workers > 0:
        loader_options = {"persistent_workers": True, "prefetch_factor": cfg.prefetch_factor}
    loader = DataLoader(
        train_set,
        batch_sampler=sampler,
        num_workers=cfg.workers,
        collate_fn=collate,
        pin_memory=pin_memory,
        **loader_options,
    )
    too_few = (
        f"{len(train_set)} training images are too few for --batch-size {cfg.batch_size} "
        f"on {ctx.world_size} rank(s) (per aspect-ratio group); add data, lower the batch size, "
        "or pass --aspect-ratio-group-factor -1"
    )
    return TrainData(
        FileFeed(sampler, loader), val_set, list(train_set.index.class_names),
        train_set.num_classes, None, too_few, data_contract(cfg, ctx, None, None),
    )  # fmt: skip


def data_contract(
    cfg: TrainConfig, ctx: DistContext, manifest: Manifest | None, val_manifest: Manifest | None
) -> dict:
    """Corpus view, transform policy and topology: with the config, what makes the run
    reproducible (written to run.json and every checkpoint)."""
    if manifest is not None:
        corpus = manifest.describe()
    else:
        corpus = {
            "format": "files",
            "dataset": cfg.dataset,
            "data_root": os.path.abspath(cfg.data_root) if cfg.data_root else None,
            "classes": cfg.classes,
            "group_of": cfg.group_of,
        }
    shards = manifest is not None
    return {
        "format": cfg.data_format,
        "corpus": corpus,
        "val_corpus": val_manifest.describe() if val_manifest else None,
        "transform_policy": {
            "version": 1,
            "decode": "Pillow RGB uint8"
            + (
                ", JPEG draft at the smallest DCT scale >= the model size"
                if cfg.fast_decode
                else ""
            ),
            "exif_orientation": "applied to pixels and boxes by prepare"
            if shards
            else "ignored (boxes in the stored-pixel frame)",
            "hflip": cfg.hflip,
            "hflip_rule": "coin from (seed, epoch, sample id)",
            "resize": f"in the model: shorter side {cfg.min_size}, longer at most {cfg.max_size}",
            "normalize": "in the model: ImageNet mean and std",
        },
        "topology": {
            "world_size": ctx.world_size,
            "loader_workers": cfg.workers,
            "batch_size": cfg.batch_size,
            "grad_accum": cfg.grad_accum,
            "global_batch": cfg.batch_size * ctx.world_size,
            "shuffle_buffer": cfg.shuffle_buffer if shards else None,
            "stream_slots": ctx.world_size * max(1, cfg.workers) if shards else None,
        },
        "seed": cfg.seed,
    }


def check_same_corpus(ckpt: dict, path: str, data_info: dict) -> None:
    """A resume binds to the manifest the run started with (seed 002: same corpus view)."""
    saved = (ckpt.get("data") or {}).get("corpus") or {}
    wanted = data_info["corpus"].get("manifest_version")
    if saved.get("manifest_version") not in (None, wanted):
        raise ConfigError(
            f"{path}: checkpoint trained on manifest version {saved['manifest_version']} "
            f"({saved.get('manifest')}), this run uses {wanted} ({data_info['corpus']['manifest']}); "
            "use the same manifest, or a fresh --output-dir / --resume none"
        )
