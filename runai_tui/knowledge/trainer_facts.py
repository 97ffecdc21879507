"""The trainer, as far as the plan and the checks need it: its datasets and models (trainer/config.py
and the real torchvision models are the source; tests/trainer/test_plan_tables.py compares), and
reading its arguments from a profile. Its flags, their defaults and the reading of its words are
runai_tui/trainer_flags/ (generated from the trainer's own configuration), re-exported here.

Split from plan.py so that `lint` (and the checks `submit` runs) import no statistics or progress
parsing. plan.py re-exports it all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runai_tui.trainer_flags import (
    ENTRY_SCRIPT,
    FLAGS,
    HOOK_EXPECTED,
    HOOK_SPEC,
    TrainerArgs,
    parse,
    spelled,
    trainer_start,
)

if TYPE_CHECKING:
    from runai_tui.profiles import Profile

__all__ = ["ENTRY_SCRIPT", "HOOK_EXPECTED", "HOOK_SPEC", "TrainerArgs"]

# The share of the fp32 gradient bytes each --ddp-comm-hook sends (PowerSGD's depends on the
# layer shapes: None).
HOOK_WIRE_SHARE: dict[str, float | None] = {"none": 1.0, "bf16": 0.5, "fp16": 0.5, "powersgd": None}
# The learning rate at --lr-base-batch images when --lr is absent (trainer OPTIMIZER_DEFAULTS).
OPTIMIZER_LR: dict[str, float] = {"sgd": 0.02, "adamw": 1e-4}

# Documented train-split sizes (images) of the datasets the trainer reads.
DATASET_SIZES: dict[str, tuple[int, str]] = {
    "openimages": (1_743_042, "Open Images V7 train, boxable"),
    "coco": (118_287, "COCO train2017"),
}
# Object classes without the background class the model adds.
DATASET_CLASSES: dict[str, int] = {"openimages": 600, "coco": 80}

# Parameters of the ResNet body by group, as (conv, batch-norm) counts: the trainer freezes by
# group (--trainable-backbone-layers), and v1 from weights uses frozen BN (no parameters).
RESNET50_BODY = {
    "conv1": (9_408, 0),
    "bn1": (0, 128),
    "layer1": (212_992, 2_816),
    "layer2": (1_212_416, 7_168),
    "layer3": (7_077_888, 20_480),
    "layer4": (14_942_208, 22_528),
}
RESNET18_BODY = {
    "conv1": (9_408, 0),
    "bn1": (0, 128),
    "layer1": (147_456, 512),
    "layer2": (524_288, 1_280),
    "layer3": (2_097_152, 2_560),
    "layer4": (8_388_608, 5_120),
}
# model: (body groups, parameters outside the body except the class logits: FPN and heads).
MODEL_PARAMETERS: dict[str, tuple[dict[str, tuple[int, int]], int]] = {
    "retinanet_resnet50_fpn_v2": (RESNET50_BODY, 12_803_108),
    "retinanet_resnet50_fpn": (RESNET50_BODY, 8_672_292),
    "retinanet_resnet18_fpn": (RESNET18_BODY, 7_984_164),
}


# ---------------------------------------------------------------------------------------------
# Reading the trainer's arguments from a profile


def trainer_args(profile: Profile) -> list[str] | None:
    """The words the trainer parses, or None when the profile's command does not run it
    (trainer_flags.trainer_start)."""
    words = [*profile.command, *profile.args]
    start = trainer_start(words)
    return None if start is None else words[start:]


def read_trainer_args(profile: Profile) -> TrainerArgs | None:
    """The trainer's flags as the profile passes them (lint, plan, the remedies, a sweep's output
    dirs); None when its command does not run the trainer. Raises UsageError for a value the
    trainer would refuse."""
    words = trainer_args(profile)
    return None if words is None else parse(words)


def _said(choices: tuple[str, ...]) -> str:
    return ", ".join(choices[:-1]) + " or " + choices[-1]


def trainer_args_problem(args: TrainerArgs) -> str:
    """What the trainer would refuse among the values the plan reads ("" when nothing)."""
    for name in ("batch_size", "grad_accum", "epochs", "lr_base_batch"):
        if getattr(args, name) < 1:
            return f"--{spelled(name)} {getattr(args, name)}: must be at least 1"
    for name in ("max_steps", "workers"):
        if getattr(args, name) < 0:
            return f"--{spelled(name)} {getattr(args, name)}: must be 0 or more"
    if args.batch_size % args.grad_accum:  # the trainer's words (trainer/config.py validate)
        return (
            f"--batch-size {args.batch_size} does not divide into --grad-accum "
            f"{args.grad_accum} micro-batches; pick a batch size that is a multiple of --grad-accum"
        )
    if args.optimizer not in OPTIMIZER_LR:
        return f"--optimizer {args.optimizer!r}: expected sgd or adamw"
    if args.model not in MODEL_PARAMETERS:
        return f"--model {args.model!r}: expected one of " + ", ".join(MODEL_PARAMETERS)
    if args.dataset not in FLAGS["dataset"].choices:
        return f"--dataset {args.dataset!r}: expected " + _said(FLAGS["dataset"].choices)
    if args.dataset == "synthetic" and min(args.synthetic_train_images, args.synthetic_classes) < 1:
        return "--synthetic-train-images and --synthetic-classes must be at least 1"
    if not HOOK_SPEC.match(args.ddp_comm_hook):
        return f"--ddp-comm-hook {args.ddp_comm_hook!r}: {HOOK_EXPECTED}"
    if args.ddp_bucket_mb < 0:
        return f"--ddp-bucket-mb {args.ddp_bucket_mb}: must be 0 (PyTorch's default) or more"
    values = args.values
    for name, flag in sorted(FLAGS.items()):
        value = values[name.replace("-", "_")]
        if flag.kind == "switch" and value not in flag.choices:
            return f"--{name} {value!r}: expected {_said(flag.choices)}"
    if args.min_size < 32 or args.max_size < args.min_size:
        return (
            f"--min-size {args.min_size} / --max-size {args.max_size}: need 32 <= min-size <= "
            "max-size"
        )
    layers = args.trainable_backbone_layers
    if layers is not None and not 0 <= layers <= 5:
        return f"--trainable-backbone-layers {layers}: must be 0..5"
    return ""
