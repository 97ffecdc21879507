"""Build the train and validation datasets a configuration asks for."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict

from trainer.config import TrainConfig
from trainer.data.coco import build_coco_index
from trainer.data.dataset import DatasetOptions, DetectionDataset, collate
from trainer.data.index import DetectionIndex, cache_key, cached_index
from trainer.data.openimages import (
    CLASSES,
    TRAIN_BOXES,
    VAL_BOXES,
    build_openimages_index,
    read_classes,
)
from trainer.data.synthetic import SyntheticDataset, make_synthetic_index, write_jpegs
from trainer.distributed import DistContext, barrier
from trainer.errors import ConfigError
from trainer.oid_metric import (
    HIERARCHY_FILE,
    VAL_IMAGE_LABELS,
    OidAnnotations,
    labelled_image_ids,
    read_hierarchy,
    read_image_labels,
)

__all__ = ["DetectionDataset", "build_datasets", "collate"]


def _path(explicit: str | None, root: str | None, default: str) -> str:
    if explicit:
        return explicit
    return os.path.join(root or ".", default)


def build_datasets(
    cfg: TrainConfig, ctx: DistContext, log: Callable[[str], None]
) -> tuple[DetectionDataset, DetectionDataset | None]:
    """(train, validation); validation is None when evaluation is off."""
    common: DatasetOptions = {
        "min_size": cfg.min_size,
        "max_size": cfg.max_size,
        "seed": cfg.seed,
        "fast_decode": cfg.fast_decode,
        "strict": cfg.strict,
    }
    want_val = cfg.eval_every > 0
    if cfg.dataset == "synthetic":
        return _synthetic(cfg, ctx, common, want_val)
    if cfg.dataset == "coco":
        return _coco(cfg, log, common, want_val)
    if cfg.dataset == "openimages":
        return _openimages(cfg, ctx, log, common, want_val)
    raise ConfigError(f"--dataset {cfg.dataset!r}: expected one of openimages, coco, synthetic")


def _coco(
    cfg: TrainConfig, log: Callable[[str], None], common: DatasetOptions, want_val: bool
) -> tuple[DetectionDataset, DetectionDataset | None]:
    train_json = _path(
        cfg.coco_train_annotations, cfg.data_root, "annotations/instances_train2017.json"
    )
    val_json = _path(cfg.coco_val_annotations, cfg.data_root, "annotations/instances_val2017.json")
    train_dir = _path(cfg.train_images, cfg.data_root, "train2017")
    val_dir = _path(cfg.val_images, cfg.data_root, "val2017")
    _require_files([train_json] + ([val_json] if want_val else []))
    train_index, stats = build_coco_index(train_json, train_dir, train=True, strict=cfg.strict)
    log(f"coco train: {_describe(train_index)}; dropped {stats}")
    train_index = _drop_empty(train_index, log)
    train = DetectionDataset(
        train_index, train_dir, train=True, hflip_probability=cfg.hflip, **common
    )
    val = None
    if want_val:
        val_index, stats = build_coco_index(val_json, val_dir, train=False, strict=cfg.strict)
        log(f"coco val: {_describe(val_index)}; dropped {stats}")
        val = DetectionDataset(val_index, val_dir, train=False, **common)
        _check_same_classes(train_index, val_index, train_json, val_json)
    return train, val


def _openimages(
    cfg: TrainConfig,
    ctx: DistContext,
    log: Callable[[str], None],
    common: DatasetOptions,
    want_val: bool,
) -> tuple[DetectionDataset, DetectionDataset | None]:
    classes = _path(cfg.oid_classes_file, cfg.data_root, CLASSES)
    train_csv = _path(cfg.oid_train_annotations, cfg.data_root, TRAIN_BOXES)
    val_csv = _path(cfg.oid_val_annotations, cfg.data_root, VAL_BOXES)
    train_dir = _path(cfg.train_images, cfg.data_root, "train")
    val_dir = _path(cfg.val_images, cfg.data_root, "validation")
    _require_files([classes, train_csv] + ([val_csv] if want_val else []))
    cache_dir = cfg.index_cache or os.path.join(cfg.output_dir, "cache")

    def split(
        csv_path: str, images_dir: str, name: str, label_only: str | None = None
    ) -> DetectionIndex:
        return _openimages_split(
            cfg, ctx, log, classes, cache_dir, csv_path, images_dir, name, label_only
        )

    train_index = _drop_empty(split(train_csv, train_dir, "train"), log)
    train = DetectionDataset(
        train_index, train_dir, train=True, hflip_probability=cfg.hflip, **common
    )
    val = None
    if want_val:
        if cfg.eval_metric != "oid":
            val_index = split(val_csv, val_dir, "validation")
            return train, DetectionDataset(val_index, val_dir, train=False, **common)
        root = cfg.data_root or os.path.dirname(os.path.abspath(val_csv))
        mids = read_classes(classes, cfg.classes).mids
        hierarchy = read_hierarchy(os.path.join(root, HIERARCHY_FILE), mids)
        labels = os.path.join(root, VAL_IMAGE_LABELS)
        val_index = split(val_csv, val_dir, "validation", labels)
        val = DetectionDataset(val_index, val_dir, train=False, **common)
        image_ids = [name.decode().rsplit(".", 1)[0] for name in val_index.file_names.tolist()]
        val.oid_annotations = OidAnnotations(hierarchy, read_image_labels(labels, image_ids, mids))
    return train, val


def _openimages_split(
    cfg: TrainConfig,
    ctx: DistContext,
    log: Callable[[str], None],
    classes: str,
    cache_dir: str,
    csv_path: str,
    images_dir: str,
    name: str,
    label_only: str | None,
) -> DetectionIndex:
    """One split's index, parsed from its CSV once and cached (keyed by what it was built from)."""
    key = cache_key(
        csv_path, classes, images_dir, cfg.classes, cfg.group_of, name, label_only or ""
    )
    cache_path = os.path.join(cache_dir, f"openimages-{name}-{key}.index")

    def build() -> DetectionIndex:
        log(f"openimages {name}: parsing {csv_path} (cached afterwards in {cache_dir})")
        extra: list[str] = []
        if label_only:  # the OID metric evaluates images with only image-level labels
            mids = read_classes(classes, cfg.classes).mids
            extra = labelled_image_ids(label_only, mids)
        index, stats = build_openimages_index(
            csv_path, classes, images_dir, cfg.classes, cfg.group_of, cfg.strict, extra
        )
        index.meta["parse_stats"] = asdict(stats)
        return index

    index = cached_index(ctx, cache_path, build)
    stats = index.meta.get("parse_stats", {})
    log(
        f"openimages {name}: {_describe(index)}; skipped missing images "
        f"{stats.get('missing_images', '?')}, degenerate boxes {stats.get('degenerate', '?')}, "
        f"group-of dropped {stats.get('group_of_dropped', '?')}, "
        f"other-class boxes {stats.get('other_classes', '?')}"
    )
    return index


def _require_files(paths: list[str]) -> None:
    for path in paths:
        if not os.path.isfile(path):
            raise ConfigError(
                f"{path}: annotation file not found (see trainer/README.md for the layout)"
            )


def _describe(index: DetectionIndex) -> str:
    return f"{len(index)} images, {index.num_boxes} boxes, {len(index.class_names)} classes"


def _drop_empty(index: DetectionIndex, log: Callable[[str], None]) -> DetectionIndex:
    """Training skips images with no boxes left after filtering."""
    has_boxes = index.box_counts() > 0
    if not has_boxes.all():
        log(f"training skips {int((~has_boxes).sum())} images without boxes")
        index = index.select(has_boxes)
    if len(index) == 0:
        raise ConfigError("the training split has no images with boxes after filtering")
    return index


def _check_same_classes(train: DetectionIndex, val: DetectionIndex, a: str, b: str) -> None:
    if train.class_names != val.class_names:
        raise ConfigError(f"{a} and {b} define different categories; use files from one release")


def _synthetic(
    cfg: TrainConfig, ctx: DistContext, common: DatasetOptions, want_val: bool
) -> tuple[DetectionDataset, DetectionDataset | None]:
    """Rendered on the fly, or (--synthetic-jpeg-size) as JPEG files written once by rank 0."""
    jpeg_size = cfg.synthetic_jpeg_size
    splits = [("train", cfg.synthetic_train_images)]
    if want_val:
        splits.append(("val", cfg.synthetic_val_images))
    datasets: list[DetectionDataset] = []
    for split, count in splits:
        size = jpeg_size or cfg.min_size
        index = make_synthetic_index(count, cfg.synthetic_classes, cfg.seed, size, split)
        # hflip_probability only counts for the training set (DetectionDataset).
        train, flip = split == "train", cfg.hflip
        if not jpeg_size:
            datasets.append(
                SyntheticDataset(index, "", train=train, hflip_probability=flip, **common)
            )
            continue
        key = cache_key(f"synthetic {split} {count} {cfg.synthetic_classes} {cfg.seed} {jpeg_size}")
        directory = os.path.join(
            cfg.index_cache or os.path.join(cfg.output_dir, "cache"), f"synthetic-{key}"
        )
        if ctx.is_main:
            write_jpegs(index, directory, cfg.seed)
        barrier(ctx)
        if not ctx.is_main:
            write_jpegs(index, directory, cfg.seed)  # fills in only if the cache is not shared
        datasets.append(
            DetectionDataset(index, directory, train=train, hflip_probability=flip, **common)
        )
    return datasets[0], datasets[1] if want_val else None
