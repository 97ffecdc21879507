"""The training configuration: one dataclass, the command line built from it, checks before any work.

Every field is a flag (``batch_size`` -> ``--batch-size``). The whole dataclass is saved as plain data
into ``run.json`` and into every checkpoint, so a run can always be reconstructed.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import re
from dataclasses import dataclass, field
from typing import Any

from trainer.errors import ConfigError
from trainer.fast_path import SWITCH_CHOICES

# --ddp-comm-hook: a hook name, PowerSGD with an optional rank (trainer/comm.py reads it).
HOOK_SPEC = re.compile(r"^(none|bf16|fp16|powersgd(:[1-9][0-9]*)?)$")
MODELS = ("retinanet_resnet50_fpn_v2", "retinanet_resnet50_fpn", "retinanet_resnet18_fpn")
DATASETS = ("openimages", "coco", "synthetic")


# Defaults that depend on the optimiser (recipes: seed SGD recipe, torchvision's v2 AdamW recipe).
@dataclass(frozen=True)
class OptimizerDefaults:
    """The learning rate at --lr-base-batch images, the weight decay, and the weight decay of norm
    layers (None: the same as the others)."""

    lr: float
    weight_decay: float
    norm_weight_decay: float | None


OPTIMIZER_DEFAULTS = {
    "sgd": OptimizerDefaults(lr=0.02, weight_decay=1e-4, norm_weight_decay=None),
    "adamw": OptimizerDefaults(lr=1e-4, weight_decay=0.05, norm_weight_decay=0.0),
}


SIZE_UNITS = {"": 1, "B": 1, "K": 10**3, "KB": 10**3, "M": 10**6, "MB": 10**6, "G": 10**9,
              "GB": 10**9, "T": 10**12, "TB": 10**12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30,
              "TIB": 2**40}  # fmt: skip


def parse_size(text: str) -> int:
    """'1GB' -> 10**9, '512MiB' -> 512 * 2**20, '123' -> 123 bytes; ValueError otherwise."""
    number = text.strip().upper()
    digits = number.rstrip("KMGTIB").strip()
    unit = number[len(number.rstrip("KMGTIB")) :]
    try:
        value = float(digits) * SIZE_UNITS[unit]
    except (KeyError, ValueError):
        raise ValueError(
            f"not a size: {text!r} (expected e.g. 1GB, 512MB, 64MiB or a number of bytes)"
        ) from None
    if value < 0:
        raise ValueError(f"not a size: {text!r} (negative)")
    return int(value)


def _opt(help_text: str, group: str = "training", **kwargs: Any) -> dict[str, Any]:
    return {"help": help_text, "group": group, **kwargs}


@dataclass
class TrainConfig:
    # data
    dataset: str = field(
        default="openimages",
        metadata=_opt("which loader: openimages, coco or synthetic", "data", choices=DATASETS),
    )
    data_root: str | None = field(
        default=None, metadata=_opt("dataset directory (see README for the layout)", "data")
    )
    oid_train_annotations: str | None = field(
        default=None,
        metadata=_opt(
            "train boxes CSV (default DATA_ROOT/oidv6-train-annotations-bbox.csv)", "data"
        ),
    )
    oid_val_annotations: str | None = field(
        default=None,
        metadata=_opt(
            "validation boxes CSV (default DATA_ROOT/validation-annotations-bbox.csv)", "data"
        ),
    )
    oid_classes_file: str | None = field(
        default=None,
        metadata=_opt("class CSV (default DATA_ROOT/oidv7-class-descriptions-boxable.csv)", "data"),
    )
    train_images: str | None = field(
        default=None,
        metadata=_opt(
            "train images dir (default DATA_ROOT/train, COCO: DATA_ROOT/train2017)", "data"
        ),
    )
    val_images: str | None = field(
        default=None,
        metadata=_opt(
            "validation images dir (default DATA_ROOT/validation, COCO: val2017)", "data"
        ),
    )
    coco_train_annotations: str | None = field(
        default=None,
        metadata=_opt(
            "COCO train JSON (default DATA_ROOT/annotations/instances_train2017.json)", "data"
        ),
    )
    coco_val_annotations: str | None = field(
        default=None,
        metadata=_opt(
            "COCO val JSON (default DATA_ROOT/annotations/instances_val2017.json)", "data"
        ),
    )
    classes: str | None = field(
        default=None,
        metadata=_opt("keep only these classes: comma list of names or Open Images MIDs", "data"),
    )
    group_of: str = field(
        default="positive",
        metadata=_opt(
            "Open Images group-of boxes: train on them (positive) or drop them",
            "data",
            choices=("positive", "drop"),
        ),
    )
    strict: bool = field(
        default=False,
        metadata=_opt("fail on a missing or corrupt image instead of skipping it", "data"),
    )
    synthetic_train_images: int = field(
        default=256, metadata=_opt("images in the synthetic train split", "data")
    )
    synthetic_val_images: int = field(
        default=16, metadata=_opt("images in the synthetic validation split", "data")
    )
    synthetic_classes: int = field(
        default=3, metadata=_opt("object classes in the synthetic dataset", "data")
    )
    synthetic_jpeg_size: int = field(
        default=0,
        metadata=_opt(
            "write synthetic images once as JPEG files of this shorter side and read them back "
            "(real decode cost, as with photos); 0 renders them in memory",
            "data",
        ),
    )
    index_cache: str | None = field(
        default=None,
        metadata=_opt(
            "where parsed annotation indexes are cached (default OUTPUT_DIR/cache)", "data"
        ),
    )
    prepare_only: bool = field(
        default=False,
        metadata=_opt(
            "build (and cache) the annotation indexes, then exit without training", "data"
        ),
    )
    data_format: str = field(
        default="files",
        metadata=_opt(
            "files: one file per image (--dataset); shards: tar shards of a manifest", "data",
            choices=("files", "shards"),
        ),
    )  # fmt: skip
    manifest: str | None = field(
        default=None,
        metadata=_opt("train manifest.json written by `python -m trainer prepare`", "data"),
    )
    val_manifest: str | None = field(
        default=None, metadata=_opt("validation manifest.json (shards: evaluation data)", "data")
    )
    shuffle_buffer: int = field(
        default=512,
        metadata=_opt("shards: samples each loader worker shuffles through (memory bound)", "data"),
    )
    cache_dir: str | None = field(
        default=None,
        metadata=_opt("shards: node-local directory shards are copied to on first use", "data"),
    )
    cache_max_bytes: str = field(
        default="0",
        metadata=_opt(
            "shards: cache size cap (e.g. 200GB); least recently used shards go first; 0: none",
            "data",
        ),
    )
    workers: int = field(default=4, metadata=_opt("data loader processes per rank", "data"))
    aspect_ratio_group_factor: int = field(
        default=3,
        metadata=_opt(
            "aspect-ratio bins = 2*K+2 (torchvision's rule); -1 turns grouping off", "data"
        ),
    )
    fast_decode: bool = field(
        default=True,
        metadata=_opt(
            "JPEG DCT-domain downscale to just above the target size while decoding", "data"
        ),
    )
    hflip: float = field(default=0.5, metadata=_opt("horizontal flip probability", "data"))
    # model
    model: str = field(
        default="retinanet_resnet50_fpn_v2",
        metadata=_opt("detector architecture", "model", choices=MODELS),
    )
    weights: str | None = field(
        default=None,
        metadata=_opt("full-model weights file (.pth state dict or checkpoint)", "model"),
    )
    weights_backbone: str = field(
        default="none", metadata=_opt("backbone weights file, or none", "model")
    )
    trainable_backbone_layers: int | None = field(
        default=None,
        metadata=_opt("0-5 (default 3 with weights, 5 from scratch)", "model"),
    )
    score_thresh: float = field(
        default=0.05, metadata=_opt("detections below this score are dropped at inference", "model")
    )
    detections_per_image: int = field(
        default=300, metadata=_opt("detections kept per image at inference", "model")
    )
    min_size: int = field(default=800, metadata=_opt("shorter image side after resize", "model"))
    max_size: int = field(
        default=1333, metadata=_opt("longest image side cap after resize", "model")
    )
    # optimisation
    epochs: int = field(default=26, metadata=_opt("passes over the train split"))
    max_steps: int = field(
        default=0, metadata=_opt("stop after this many steps in total (0: no cap)")
    )
    batch_size: int = field(default=2, metadata=_opt("images per process per optimiser step"))
    grad_accum: int = field(
        default=1,
        metadata=_opt("split each batch into K micro-batches (gradient sync on the last)"),
    )
    optimizer: str = field(default="sgd", metadata=_opt("sgd or adamw", choices=("sgd", "adamw")))
    lr: float | None = field(
        default=None,
        metadata=_opt("learning rate at --lr-base-batch images (default sgd 0.02, adamw 1e-4)"),
    )
    lr_base_batch: int = field(
        default=16, metadata=_opt("global batch --lr refers to; the lr scales linearly from it")
    )
    momentum: float = field(default=0.9, metadata=_opt("SGD momentum"))
    weight_decay: float | None = field(
        default=None, metadata=_opt("weight decay (default sgd 1e-4, adamw 0.05)")
    )
    norm_weight_decay: float | None = field(
        default=None,
        metadata=_opt("weight decay of norm layers (default sgd: same as --weight-decay, adamw 0)"),
    )
    lr_schedule: str = field(
        default="cosine",
        metadata=_opt("after warmup: cosine decay or constant", choices=("cosine", "constant")),
    )
    warmup_steps: int = field(default=1000, metadata=_opt("linear warmup length in steps"))
    warmup_factor: float = field(default=0.001, metadata=_opt("lr multiplier at step 0"))
    amp: str = field(
        default="auto",
        metadata=_opt(
            "mixed precision: auto (CUDA: bf16 where supported, else fp16; CPU: the faster of "
            "fp32 and bf16, measured at start), none, fp16 (adds a grad scaler) or bf16",
            choices=("auto", "none", "fp16", "bf16"),
        ),
    )
    loss: str = field(
        default="batched",
        metadata=_opt(
            "training loss: batched (matcher and focal loss over the whole batch, checked equal "
            "to torchvision's on the first batch) or torchvision (its per-image loop)",
            choices=("batched", "torchvision"),
        ),
    )
    sync_bn: bool = field(default=False, metadata=_opt("SyncBatchNorm across ranks"))
    clip_grad: float = field(default=0.0, metadata=_opt("max gradient norm (0: off)"))
    channels_last: str = field(
        default="auto",
        metadata=_opt(
            "channels-last weights and backbone input: auto (on with CUDA, off on a CPU where "
            "it measured slower), on or off; --channels-last alone is on, --no-channels-last off",
            choices=SWITCH_CHOICES, switch=True,
        ),
    )  # fmt: skip
    compile: str = field(
        default="auto",
        metadata=_opt(
            "torch.compile the backbone, FPN and head in place (anchors, loss and "
            "post-processing stay eager; batches pad to multiples of 32, so a run meets a "
            "bounded set of shapes): auto (when the run's planned images repay the compile "
            "time, trainer/fast_path.py), on or off; --compile alone is on, --no-compile off",
            choices=SWITCH_CHOICES, switch=True,
        ),
    )  # fmt: skip
    compile_cache_dir: str | None = field(
        default=None,
        metadata=_opt(
            "torch.compile's on-disk caches (FX graphs, autotuning, Triton kernels), so a "
            "second job of the same shape, a resubmit or a restart starts in seconds (default: "
            ".compile-cache beside OUTPUT_DIR, on the same volume)"
        ),
    )
    seed: int = field(default=0, metadata=_opt("seed for sample order, augmentation and init"))
    # checkpoints, logs, evaluation
    output_dir: str = field(
        default="runs/retinanet",
        metadata=_opt("checkpoints, metrics.jsonl and run.json go here", "output"),
    )
    checkpoint_every: int = field(
        default=1000, metadata=_opt("save every N steps (0: only at the end)", "output")
    )
    keep_checkpoints: int = field(
        default=3, metadata=_opt("keep the newest K checkpoints", "output")
    )
    resume: str = field(
        default="auto", metadata=_opt("auto (newest in output dir), none, or a file", "output")
    )
    log_every: int = field(default=20, metadata=_opt("metrics record every N steps", "output"))
    eval_every: int = field(
        default=1, metadata=_opt("evaluate every N epochs and at the end (0: never)", "output")
    )
    eval_max_images: int = field(
        default=0, metadata=_opt("evaluate on the first N validation images (0: all)", "output")
    )
    eval_every_steps: int = field(
        default=0,
        metadata=_opt(
            "also evaluate every K steps (0: at epoch ends only); with --eval-max-images N each "
            "evaluation is the same fixed subset, cheap enough to run often",
            "output",
        ),
    )
    target_map: float | None = field(
        default=None,
        metadata=_opt(
            "stop the run at the first evaluation whose --target-metric reaches X (0 < X <= 1), "
            "as MLPerf runs do; run.json's target and a target record hold the step, wall time, "
            "images and GPU-hours it took, or say it was not reached",
            "output",
        ),
    )
    target_metric: str = field(
        default="map",
        metadata=_opt(
            "what --target-map compares: map (mAP@[.5:.95]) or map50 (mAP@.5)",
            "output",
            choices=("map", "map50"),
        ),
    )
    eval_metric: str = field(
        default="coco",
        metadata=_opt(
            "coco: mAP@[.5:.95] and mAP@.5 (pycocotools); oid: also the Open Images challenge "
            "mAP@.5 (hierarchy, group-of, image-level labels) as oid_map",
            "output",
            choices=("coco", "oid"),
        ),
    )
    oid_expand_predictions: bool = field(
        default=True,
        metadata=_opt(
            "with --eval-metric oid: count each detection for its class's ancestors too before "
            "scoring (ours; the official evaluator scores predictions as written: "
            "--no-oid-expand-predictions gives its figure)",
            "output",
        ),
    )
    log_samples: bool = field(
        default=False,
        metadata=_opt(
            "each rank appends its sample indices per step to OUTPUT_DIR/samples/", "output"
        ),
    )
    tensorboard: bool = field(
        default=False,
        metadata=_opt(
            "also write TensorBoard event files into OUTPUT_DIR (when the tensorboard package is "
            "installed; otherwise a note and JSONL only)",
            "output",
        ),
    )
    # runtime
    device: str = field(
        default="auto",
        metadata=_opt("auto, cuda or cpu", "runtime", choices=("auto", "cuda", "cpu")),
    )
    pin_memory: bool = field(
        default=True, metadata=_opt("pinned host buffers (CUDA only)", "runtime")
    )
    prefetch_factor: int = field(
        default=4, metadata=_opt("batches each loader worker prepares", "runtime")
    )
    dist_timeout: int = field(default=30, metadata=_opt("collective timeout in minutes", "runtime"))
    ddp_comm_hook: str = field(
        default="none",
        metadata=_opt(
            "how DDP sends gradients: none (fp32), bf16 or fp16 (half the bytes), "
            "powersgd[:RANK] (low-rank, rank 1 by default, after --warmup-steps); PyTorch's "
            "public DDP communication hooks",
            "runtime",
        ),
    )
    ddp_bucket_mb: int = field(
        default=0,
        metadata=_opt(
            "DDP gradient bucket size in MiB (0: PyTorch's default, 25 with a 1 MiB first bucket)",
            "runtime",
        ),
    )
    gradient_as_bucket_view: bool = field(
        default=True,
        metadata=_opt("gradients are views into DDP's buckets (no copy, less memory)", "runtime"),
    )
    comm_check: str = field(
        default="auto",
        metadata=_opt(
            "measure the wire before the first step (all-reduce busbw by size, the slowest "
            "pair of neighbouring ranks; one comm record, trainer/comm_check.py): auto (when the "
            "job spans more than one pod), on or off",
            "runtime",
            choices=("auto", "on", "off"),
        ),
    )
    peak_tflops: float | None = field(
        default=None,
        metadata=_opt(
            "the chip's dense bf16 peak in TFLOP/s, for each record's mfu (default: the "
            "datasheet's for a known CUDA device; none on a CPU, so no mfu there)",
            "runtime",
        ),
    )
    debug: bool = field(default=False, metadata=_opt("tracebacks on errors", "runtime"))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    # Derived values, kept out of the dataclass fields so they never reach the command line.
    def resolved_lr(self, global_batch: int) -> float:
        base = self.lr if self.lr is not None else OPTIMIZER_DEFAULTS[self.optimizer].lr
        return base * global_batch / self.lr_base_batch

    def resolved_weight_decay(self) -> tuple[float, float]:
        defaults = OPTIMIZER_DEFAULTS[self.optimizer]
        wd = self.weight_decay if self.weight_decay is not None else defaults.weight_decay
        norm_wd = self.norm_weight_decay
        if norm_wd is None:
            norm_wd = defaults.norm_weight_decay
        return wd, wd if norm_wd is None else norm_wd

    @property
    def micro_batch_size(self) -> int:
        return self.batch_size // self.grad_accum


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m trainer",
        description="Distributed RetinaNet training (torchrun) on Open Images V7, COCO or synthetic data.",
        epilog="Shards: `python -m trainer prepare --help` packs a split into tar shards and a "
        "manifest; `python -m trainer verify --manifest M` re-reads them (trainer/README.md).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    groups: dict[str, argparse._ArgumentGroup] = {}
    for f in dataclasses.fields(TrainConfig):
        meta = dict(f.metadata)
        group_name = meta.pop("group")
        group = groups.get(group_name) or groups.setdefault(
            group_name, parser.add_argument_group(group_name)
        )
        flag = "--" + f.name.replace("_", "-")
        kind = f.type if isinstance(f.type, str) else f.type.__name__
        if kind == "bool":
            group.add_argument(
                flag, action=argparse.BooleanOptionalAction, default=f.default, **meta
            )
            continue
        if meta.pop("switch", False):
            # auto/on/off, and the boolean spellings it had before: --flag (on), --no-flag (off).
            group.add_argument(flag, nargs="?", const="on", default=f.default, **meta)
            group.add_argument(
                "--no-" + flag[2:], dest=f.name, action="store_const", const="off",
                help=argparse.SUPPRESS,
            )  # fmt: skip
            continue
        base = kind.replace(" | None", "")
        scalar = {"int": int, "float": float, "str": str}[base]
        if "choices" not in meta:
            meta["metavar"] = {"int": "N", "float": "X", "str": "VALUE"}[base]
        group.add_argument(flag, type=scalar, default=f.default, **meta)
    return parser


def parse_config(argv: list[str] | None = None) -> TrainConfig:
    """Parse the command line (argparse exits 2 on unknown flags or bad choices)."""
    namespace = build_parser().parse_args(argv)
    return TrainConfig(**vars(namespace))


def validate(cfg: TrainConfig) -> None:
    """Fail early, naming the flag and the fix, before any process group or data work."""

    def bad(flag: str, value: object, expected: str) -> ConfigError:
        return ConfigError(f"--{flag} {value!r}: {expected}")

    for name in ("epochs", "batch_size", "grad_accum", "log_every", "lr_base_batch"):
        if getattr(cfg, name) < 1:
            raise bad(name.replace("_", "-"), getattr(cfg, name), "must be at least 1")
    for name in ("max_steps", "checkpoint_every", "eval_every", "eval_every_steps", "workers",
                 "warmup_steps"):  # fmt: skip
        if getattr(cfg, name) < 0:
            raise bad(name.replace("_", "-"), getattr(cfg, name), "must be 0 or more")
    if cfg.ddp_bucket_mb < 0:
        raise bad("ddp-bucket-mb", cfg.ddp_bucket_mb, "must be 0 (PyTorch's default) or more")
    if not HOOK_SPEC.match(cfg.ddp_comm_hook):
        raise bad(
            "ddp-comm-hook", cfg.ddp_comm_hook,
            "expected none, bf16, fp16, powersgd or powersgd:RANK (e.g. powersgd:2)",
        )  # fmt: skip
    if cfg.peak_tflops is not None and not cfg.peak_tflops > 0:
        raise bad("peak-tflops", cfg.peak_tflops, "must be more than 0 (e.g. 989 for an H100 SXM)")
    if cfg.keep_checkpoints < 1:
        raise bad("keep-checkpoints", cfg.keep_checkpoints, "must be at least 1")
    if cfg.batch_size % cfg.grad_accum:
        raise ConfigError(
            f"--batch-size {cfg.batch_size} does not divide into --grad-accum {cfg.grad_accum} "
            "micro-batches; pick a batch size that is a multiple of --grad-accum"
        )
    if cfg.min_size < 32 or cfg.max_size < cfg.min_size:
        raise ConfigError(
            f"--min-size {cfg.min_size} / --max-size {cfg.max_size}: need 32 <= min-size <= max-size"
        )
    if not 0.0 <= cfg.score_thresh < 1.0:
        raise bad("score-thresh", cfg.score_thresh, "must be in [0, 1)")
    if cfg.detections_per_image < 1:
        raise bad("detections-per-image", cfg.detections_per_image, "must be at least 1")
    if not 0.0 <= cfg.hflip <= 1.0:
        raise bad("hflip", cfg.hflip, "must be a probability in [0, 1]")
    if cfg.trainable_backbone_layers is not None and not 0 <= cfg.trainable_backbone_layers <= 5:
        raise bad("trainable-backbone-layers", cfg.trainable_backbone_layers, "must be 0..5")
    if cfg.dataset == "synthetic" and min(cfg.synthetic_train_images, cfg.synthetic_classes) < 1:
        raise ConfigError("--synthetic-train-images and --synthetic-classes must be at least 1")
    for flag, path in (("weights", cfg.weights), ("weights-backbone", cfg.weights_backbone)):
        if path not in (None, "none") and not os.path.isfile(path):
            raise ConfigError(
                f"--{flag} {path!r}: no such file (weights load from files only, never downloaded)"
            )
    if cfg.resume not in ("auto", "none") and not os.path.isfile(cfg.resume):
        raise ConfigError(f"--resume {cfg.resume!r}: no such checkpoint file (or use auto / none)")
    _validate_target(cfg)
    if cfg.eval_every > 0 and importlib.util.find_spec("pycocotools") is None:
        raise ConfigError(
            "evaluation needs pycocotools, which is not installed: `pip install pycocotools`, "
            "or pass --eval-every 0"
        )
    _validate_shards(cfg)
    if cfg.data_format == "files" and cfg.dataset != "synthetic" and not cfg.data_root:
        needs_root = cfg.dataset == "coco" or not (
            cfg.oid_train_annotations and cfg.oid_classes_file and cfg.train_images
        )
        if needs_root:
            raise ConfigError(
                f"--dataset {cfg.dataset} needs --data-root DIR (see trainer/README.md)"
            )
    if cfg.data_root and not os.path.isdir(cfg.data_root):
        raise ConfigError(f"--data-root {cfg.data_root!r}: no such directory")


def _validate_target(cfg: TrainConfig) -> None:
    """--target-map is a fraction that evaluations can reach; step evaluations need any."""
    if cfg.target_map is not None and not 0.0 < cfg.target_map <= 1.0:
        raise ConfigError(
            f"--target-map {cfg.target_map!r}: must be in (0, 1], mAP as a fraction "
            "(e.g. 0.35 for 35 mAP)"
        )
    for flag, asked in (("target-map", cfg.target_map), ("eval-every-steps", cfg.eval_every_steps)):
        if asked and cfg.eval_every == 0:
            raise ConfigError(
                f"--{flag} {asked:g} needs evaluations, but --eval-every 0 turns them off; "
                "pass --eval-every 1 (or more)"
            )


def _validate_shards(cfg: TrainConfig) -> None:
    try:
        parse_size(cfg.cache_max_bytes)
    except ValueError as exc:
        raise ConfigError(f"--cache-max-bytes: {exc}") from None
    if cfg.shuffle_buffer < 1:
        raise ConfigError(f"--shuffle-buffer {cfg.shuffle_buffer}: must be at least 1")
    if cfg.data_format != "shards":
        for flag, value in (
            ("manifest", cfg.manifest),
            ("val-manifest", cfg.val_manifest),
            ("cache-dir", cfg.cache_dir),
        ):
            if value:
                raise ConfigError(f"--{flag} applies to --data-format shards only; add that flag")
        return
    if not cfg.manifest:
        raise ConfigError(
            "--data-format shards needs --manifest PATH (written by `python -m trainer prepare`)"
        )
    for flag, path in (("manifest", cfg.manifest), ("val-manifest", cfg.val_manifest)):
        if path and not os.path.isfile(path):
            raise ConfigError(f"--{flag} {path!r}: no such file")
    if cfg.eval_every > 0 and not cfg.val_manifest:
        raise ConfigError(
            "--data-format shards evaluates on --val-manifest PATH (prepare --split validation); "
            "pass one, or --eval-every 0"
        )
