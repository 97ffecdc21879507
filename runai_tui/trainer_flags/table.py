"""The trainer's flags: GENERATED from trainer/config.py (TrainConfig, whose
fields build_parser turns into the trainer's argparse flags) by `python scripts/trainer_flags.py`.
Do not edit: tests/core/test_trainer_flag_table.py fails while this file and the trainer disagree.
"""

from __future__ import annotations

from typing import NamedTuple


class Flag(NamedTuple):
    """`kind`: int, float, str, bool (`--flag` / `--no-flag`) or switch (auto, on or off, and
    the boolean spellings: `--flag` alone is on, `--no-flag` off); `choices`: the values it
    accepts (empty: any)."""

    kind: str
    choices: tuple[str, ...] = ()


# fmt: off
# The trainer's flags by name, as it spells them on its command line.
FLAGS: dict[str, Flag] = {
    "dataset": Flag("str", ("openimages", "coco", "synthetic")),
    "data-root": Flag("str"),
    "oid-train-annotations": Flag("str"),
    "oid-val-annotations": Flag("str"),
    "oid-classes-file": Flag("str"),
    "train-images": Flag("str"),
    "val-images": Flag("str"),
    "coco-train-annotations": Flag("str"),
    "coco-val-annotations": Flag("str"),
    "classes": Flag("str"),
    "group-of": Flag("str", ("positive", "drop")),
    "strict": Flag("bool"),
    "synthetic-train-images": Flag("int"),
    "synthetic-val-images": Flag("int"),
    "synthetic-classes": Flag("int"),
    "synthetic-jpeg-size": Flag("int"),
    "index-cache": Flag("str"),
    "prepare-only": Flag("bool"),
    "data-format": Flag("str", ("files", "shards")),
    "manifest": Flag("str"),
    "val-manifest": Flag("str"),
    "shuffle-buffer": Flag("int"),
    "cache-dir": Flag("str"),
    "cache-max-bytes": Flag("str"),
    "workers": Flag("int"),
    "aspect-ratio-group-factor": Flag("int"),
    "fast-decode": Flag("bool"),
    "hflip": Flag("float"),
    "model": Flag("str", ("retinanet_resnet50_fpn_v2", "retinanet_resnet50_fpn", "retinanet_resnet18_fpn")),
    "weights": Flag("str"),
    "weights-backbone": Flag("str"),
    "trainable-backbone-layers": Flag("int"),
    "score-thresh": Flag("float"),
    "detections-per-image": Flag("int"),
    "min-size": Flag("int"),
    "max-size": Flag("int"),
    "epochs": Flag("int"),
    "max-steps": Flag("int"),
    "batch-size": Flag("int"),
    "grad-accum": Flag("int"),
    "optimizer": Flag("str", ("sgd", "adamw")),
    "lr": Flag("float"),
    "lr-base-batch": Flag("int"),
    "momentum": Flag("float"),
    "weight-decay": Flag("float"),
    "norm-weight-decay": Flag("float"),
    "lr-schedule": Flag("str", ("cosine", "constant")),
    "warmup-steps": Flag("int"),
    "warmup-factor": Flag("float"),
    "amp": Flag("str", ("auto", "none", "fp16", "bf16")),
    "loss": Flag("str", ("batched", "torchvision")),
    "sync-bn": Flag("bool"),
    "clip-grad": Flag("float"),
    "channels-last": Flag("switch", ("auto", "on", "off")),
    "compile": Flag("switch", ("auto", "on", "off")),
    "compile-cache-dir": Flag("str"),
    "seed": Flag("int"),
    "output-dir": Flag("str"),
    "checkpoint-every": Flag("int"),
    "keep-checkpoints": Flag("int"),
    "resume": Flag("str"),
    "log-every": Flag("int"),
    "eval-every": Flag("int"),
    "eval-max-images": Flag("int"),
    "eval-every-steps": Flag("int"),
    "target-map": Flag("float"),
    "target-metric": Flag("str", ("map", "map50")),
    "eval-metric": Flag("str", ("coco", "oid")),
    "oid-expand-predictions": Flag("bool"),
    "log-samples": Flag("bool"),
    "tensorboard": Flag("bool"),
    "device": Flag("str", ("auto", "cuda", "cpu")),
    "pin-memory": Flag("bool"),
    "prefetch-factor": Flag("int"),
    "dist-timeout": Flag("int"),
    "ddp-comm-hook": Flag("str"),
    "ddp-bucket-mb": Flag("int"),
    "gradient-as-bucket-view": Flag("bool"),
    "comm-check": Flag("str", ("auto", "on", "off")),
    "peak-tflops": Flag("float"),
    "debug": Flag("bool"),
}


class TrainerArgs(NamedTuple):
    """Every flag's value as the trainer parses a command line, the trainer's default where
    the line leaves it out; `given`: the flags (field names) the line passes. A NamedTuple:
    every runai-tui command that lints a profile builds this class of a hundred fields, and
    as a frozen dataclass it took a twentieth of `submit --dry-run`'s start."""

    dataset: str = "openimages"
    data_root: str | None = None
    oid_train_annotations: str | None = None
    oid_val_annotations: str | None = None
    oid_classes_file: str | None = None
    train_images: str | None = None
    val_images: str | None = None
    coco_train_annotations: str | None = None
    coco_val_annotations: str | None = None
    classes: str | None = None
    group_of: str = "positive"
    strict: bool = False
    synthetic_train_images: int = 256
    synthetic_val_images: int = 16
    synthetic_classes: int = 3
    synthetic_jpeg_size: int = 0
    index_cache: str | None = None
    prepare_only: bool = False
    data_format: str = "files"
    manifest: str | None = None
    val_manifest: str | None = None
    shuffle_buffer: int = 512
    cache_dir: str | None = None
    cache_max_bytes: str = "0"
    workers: int = 4
    aspect_ratio_group_factor: int = 3
    fast_decode: bool = True
    hflip: float = 0.5
    model: str = "retinanet_resnet50_fpn_v2"
    weights: str | None = None
    weights_backbone: str = "none"
    trainable_backbone_layers: int | None = None
    score_thresh: float = 0.05
    detections_per_image: int = 300
    min_size: int = 800
    max_size: int = 1333
    epochs: int = 26
    max_steps: int = 0
    batch_size: int = 2
    grad_accum: int = 1
    optimizer: str = "sgd"
    lr: float | None = None
    lr_base_batch: int = 16
    momentum: float = 0.9
    weight_decay: float | None = None
    norm_weight_decay: float | None = None
    lr_schedule: str = "cosine"
    warmup_steps: int = 1000
    warmup_factor: float = 0.001
    amp: str = "auto"
    loss: str = "batched"
    sync_bn: bool = False
    clip_grad: float = 0.0
    channels_last: str = "auto"
    compile: str = "auto"
    compile_cache_dir: str | None = None
    seed: int = 0
    output_dir: str = "runs/retinanet"
    checkpoint_every: int = 1000
    keep_checkpoints: int = 3
    resume: str = "auto"
    log_every: int = 20
    eval_every: int = 1
    eval_max_images: int = 0
    eval_every_steps: int = 0
    target_map: float | None = None
    target_metric: str = "map"
    eval_metric: str = "coco"
    oid_expand_predictions: bool = True
    log_samples: bool = False
    tensorboard: bool = False
    device: str = "auto"
    pin_memory: bool = True
    prefetch_factor: int = 4
    dist_timeout: int = 30
    ddp_comm_hook: str = "none"
    ddp_bucket_mb: int = 0
    gradient_as_bucket_view: bool = True
    comm_check: str = "auto"
    peak_tflops: float | None = None
    debug: bool = False
    given: frozenset[str] = frozenset()

    @property
    def values(self) -> dict[str, object]:
        """Every flag's value by field name (`batch_size`)."""
        return {name: value for name, value in self._asdict().items() if name != "given"}
