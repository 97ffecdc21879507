"""The trainer, as far as the plan and the checks need it: its flags and their defaults, its
datasets and models (trainer/config.py is the source; tests/trainer/test_plan_tables.py compares),
and reading its arguments from a profile.

Split from plan.py so that `lint` (and the checks `submit` runs) import no statistics or progress
parsing. plan.py re-exports it all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, NamedTuple, get_args, get_type_hints

from runai_tui.errors import UsageError

if TYPE_CHECKING:
    from runai_tui.profiles import Profile

# ---------------------------------------------------------------------------------------------
# The trainer's flags, datasets and models

ENTRY_SCRIPT = "train-retinanet-ddp.sh"


@dataclass(frozen=True)
class TrainerArgs:
    """The trainer flags the plan and the checks read, each with the trainer's default
    (trainer/config.py), and `given`: the ones the profile sets."""

    dataset: str = "openimages"
    synthetic_train_images: int = 256
    synthetic_classes: int = 3
    classes: str | None = None
    workers: int = 4
    model: str = "retinanet_resnet50_fpn_v2"
    weights: str | None = None
    weights_backbone: str = "none"
    trainable_backbone_layers: int | None = None
    epochs: int = 26
    max_steps: int = 0
    batch_size: int = 2
    grad_accum: int = 1
    optimizer: str = "sgd"
    lr: float | None = None
    lr_base_batch: int = 16
    sync_bn: bool = False
    amp: str = "auto"
    channels_last: str = "auto"
    compile: str = "auto"
    min_size: int = 800
    max_size: int = 1333
    ddp_comm_hook: str = "none"
    ddp_bucket_mb: int = 0
    output_dir: str = "runs/retinanet"  # a sweep gives each job its own
    given: frozenset[str] = frozenset()

    @property
    def values(self) -> dict[str, Any]:
        """Every flag's value by name."""
        return {name: getattr(self, name) for name in TRAINER_DEFAULTS}


TRAINER_DEFAULTS: dict[str, Any] = {
    field.name: field.default for field in fields(TrainerArgs) if field.name != "given"
}


def _value_type(annotation: Any) -> type:
    """`int` for `int` and for `int | None`."""
    found: type = next((t for t in get_args(annotation) if t is not type(None)), annotation)
    return found


# The type of each flag's value (`--lr` is a float even though its default is None).
TRAINER_TYPES: dict[str, type] = {
    name: _value_type(hint) for name, hint in get_type_hints(TrainerArgs).items() if name != "given"
}
# --ddp-comm-hook values (trainer/config.py HOOK_SPEC), and the share of the fp32 gradient bytes
# each sends (PowerSGD's depends on the layer shapes: None).
HOOK_SPEC = re.compile(r"^(none|bf16|fp16|powersgd(:[1-9][0-9]*)?)$")
HOOK_EXPECTED = "expected none, bf16, fp16, powersgd or powersgd:RANK (e.g. powersgd:2)"
HOOK_WIRE_SHARE: dict[str, float | None] = {"none": 1.0, "bf16": 0.5, "fp16": 0.5, "powersgd": None}
# The learning rate at --lr-base-batch images when --lr is absent (trainer OPTIMIZER_DEFAULTS).
OPTIMIZER_LR: dict[str, float] = {"sgd": 0.02, "adamw": 1e-4}

# Flags that take auto, on or off, and keep their boolean spellings: --flag (on), --no-flag (off).
SWITCHES = frozenset({"channels_last", "compile"})
SWITCH_CHOICES = ("auto", "on", "off")

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
    """The words the trainer parses, or None when the profile's command does not run it.

    Recognised: the entry script (`.../train-retinanet-ddp.sh ARGS`, which passes ARGS on) and
    `... -m trainer ARGS` (python or torchrun).
    """
    words = [*profile.command, *profile.args]
    start = _trainer_start(words)
    return None if start is None else words[start:]


def read_trainer_args(profile: Profile) -> TrainerArgs | None:
    """The trainer's flags as the profile passes them (lint, plan, the remedies, a sweep's output
    dirs); None when its command does not run the trainer. Raises UsageError for a value the
    trainer would refuse."""
    words = trainer_args(profile)
    return None if words is None else parse_trainer_args(words)


def parse_trainer_args(words: Sequence[str]) -> TrainerArgs:
    """The flags of TRAINER_DEFAULTS as the trainer's argparse reads them (last one wins).

    Flags must be spelled in full (`--batch-size 4` or `--batch-size=4`); other flags are skipped.
    Raises UsageError for a value the trainer would refuse.
    """
    values = dict(TRAINER_DEFAULTS)
    given: set[str] = set()
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("--"):
            continue
        name, sep, inline = word[2:].partition("=")
        key = name.replace("-", "_")
        if key.startswith("no_") and TRAINER_TYPES.get(key[3:]) is bool and not sep:
            values[key[3:]] = False
            given.add(key[3:])
            continue
        if key.startswith("no_") and key[3:] in SWITCHES and not sep:
            values[key[3:]] = "off"
            given.add(key[3:])
            continue
        if key in SWITCHES and not sep and (i >= len(words) or words[i].startswith("-")):
            values[key] = "on"  # argparse's nargs="?": the flag alone
            given.add(key)
            continue
        kind = TRAINER_TYPES.get(key)
        if kind is None:
            other = TRAINER_FLAGS.get(name)
            if other is not None and other.kind in ("int", "float", "str") and not sep:
                i += 1  # a flag the plan does not read: its value is skipped with it
            continue
        if kind is bool:
            if not sep:
                values[key] = True
                given.add(key)
            continue
        if sep:
            raw = inline
        elif i < len(words):
            raw = words[i]
            i += 1
        else:
            raise UsageError(
                f"args: --{name}: expected a value after it", f"e.g. --{name} {values[key]}"
            )
        values[key] = _convert(name, raw, kind)
        given.add(key)
    return TrainerArgs(**values, given=frozenset(given))


def trainer_args_problem(args: TrainerArgs) -> str:
    """What the trainer would refuse among the values the plan reads ("" when nothing)."""
    for name in ("batch_size", "grad_accum", "epochs", "lr_base_batch"):
        if args.values[name] < 1:
            return f"--{name.replace('_', '-')} {args.values[name]}: must be at least 1"
    for name in ("max_steps", "workers"):
        if args.values[name] < 0:
            return f"--{name.replace('_', '-')} {args.values[name]}: must be 0 or more"
    if args.batch_size % args.grad_accum:  # the trainer's words (trainer/config.py validate)
        return (
            f"--batch-size {args.batch_size} does not divide into --grad-accum "
            f"{args.grad_accum} micro-batches; pick a batch size that is a multiple of --grad-accum"
        )
    if args.optimizer not in OPTIMIZER_LR:
        return f"--optimizer {args.optimizer!r}: expected sgd or adamw"
    if args.model not in MODEL_PARAMETERS:
        return f"--model {args.model!r}: expected one of " + ", ".join(MODEL_PARAMETERS)
    if args.dataset not in ("openimages", "coco", "synthetic"):
        return f"--dataset {args.dataset!r}: expected openimages, coco or synthetic"
    if args.dataset == "synthetic" and min(args.synthetic_train_images, args.synthetic_classes) < 1:
        return "--synthetic-train-images and --synthetic-classes must be at least 1"
    if not HOOK_SPEC.match(args.ddp_comm_hook):
        return f"--ddp-comm-hook {args.ddp_comm_hook!r}: {HOOK_EXPECTED}"
    if args.ddp_bucket_mb < 0:
        return f"--ddp-bucket-mb {args.ddp_bucket_mb}: must be 0 (PyTorch's default) or more"
    for name in sorted(SWITCHES):
        if args.values[name] not in SWITCH_CHOICES:
            return f"--{name.replace('_', '-')} {args.values[name]!r}: expected auto, on or off"
    if args.min_size < 32 or args.max_size < args.min_size:
        return (
            f"--min-size {args.min_size} / --max-size {args.max_size}: need 32 <= min-size <= "
            "max-size"
        )
    layers = args.trainable_backbone_layers
    if layers is not None and not 0 <= layers <= 5:
        return f"--trainable-backbone-layers {layers}: must be 0..5"
    return ""


def _convert(name: str, raw: str, kind: type) -> Any:
    try:
        return kind(raw)
    except ValueError:
        expected = {int: "a whole number", float: "a number"}.get(kind, "a value")
        raise UsageError(
            f"args: --{name} {raw!r}: expected {expected} (the trainer would refuse it)",
            f"fix the profile's args, or override it: --set trainer.{name}=VALUE",
        ) from None


# ---------------------------------------------------------------------------------------------
# Every flag of the trainer, and setting one in a profile's words (`--set trainer.NAME=VALUE`,
# the remedies): trainer/config.py build_parser is the source, tests/trainer/test_plan_tables.py
# compares this table with `python -m trainer --help`.


class TrainerFlag(NamedTuple):
    """`kind`: int, float, str, bool (`--flag` / `--no-flag`) or switch (auto, on or off, and
    the boolean spellings); `choices`: the values a str flag accepts (empty: any)."""

    kind: str
    choices: tuple[str, ...] = ()


TRAINER_FLAGS: dict[str, TrainerFlag] = {
    "dataset": TrainerFlag("str", ("openimages", "coco", "synthetic")),
    "data-root": TrainerFlag("str"),
    "oid-train-annotations": TrainerFlag("str"),
    "oid-val-annotations": TrainerFlag("str"),
    "oid-classes-file": TrainerFlag("str"),
    "train-images": TrainerFlag("str"),
    "val-images": TrainerFlag("str"),
    "coco-train-annotations": TrainerFlag("str"),
    "coco-val-annotations": TrainerFlag("str"),
    "classes": TrainerFlag("str"),
    "group-of": TrainerFlag("str", ("positive", "drop")),
    "strict": TrainerFlag("bool"),
    "synthetic-train-images": TrainerFlag("int"),
    "synthetic-val-images": TrainerFlag("int"),
    "synthetic-classes": TrainerFlag("int"),
    "synthetic-jpeg-size": TrainerFlag("int"),
    "index-cache": TrainerFlag("str"),
    "prepare-only": TrainerFlag("bool"),
    "data-format": TrainerFlag("str", ("files", "shards")),
    "manifest": TrainerFlag("str"),
    "val-manifest": TrainerFlag("str"),
    "shuffle-buffer": TrainerFlag("int"),
    "cache-dir": TrainerFlag("str"),
    "cache-max-bytes": TrainerFlag("str"),
    "workers": TrainerFlag("int"),
    "aspect-ratio-group-factor": TrainerFlag("int"),
    "fast-decode": TrainerFlag("bool"),
    "hflip": TrainerFlag("float"),
    "model": TrainerFlag("str", tuple(MODEL_PARAMETERS)),
    "weights": TrainerFlag("str"),
    "weights-backbone": TrainerFlag("str"),
    "trainable-backbone-layers": TrainerFlag("int"),
    "score-thresh": TrainerFlag("float"),
    "detections-per-image": TrainerFlag("int"),
    "min-size": TrainerFlag("int"),
    "max-size": TrainerFlag("int"),
    "epochs": TrainerFlag("int"),
    "max-steps": TrainerFlag("int"),
    "batch-size": TrainerFlag("int"),
    "grad-accum": TrainerFlag("int"),
    "optimizer": TrainerFlag("str", tuple(OPTIMIZER_LR)),
    "lr": TrainerFlag("float"),
    "lr-base-batch": TrainerFlag("int"),
    "momentum": TrainerFlag("float"),
    "weight-decay": TrainerFlag("float"),
    "norm-weight-decay": TrainerFlag("float"),
    "lr-schedule": TrainerFlag("str", ("cosine", "constant")),
    "warmup-steps": TrainerFlag("int"),
    "warmup-factor": TrainerFlag("float"),
    "amp": TrainerFlag("str", ("auto", "none", "fp16", "bf16")),
    "loss": TrainerFlag("str", ("batched", "torchvision")),
    "sync-bn": TrainerFlag("bool"),
    "clip-grad": TrainerFlag("float"),
    "channels-last": TrainerFlag("switch", SWITCH_CHOICES),
    "compile": TrainerFlag("switch", SWITCH_CHOICES),
    "compile-cache-dir": TrainerFlag("str"),
    "seed": TrainerFlag("int"),
    "output-dir": TrainerFlag("str"),
    "checkpoint-every": TrainerFlag("int"),
    "keep-checkpoints": TrainerFlag("int"),
    "resume": TrainerFlag("str"),
    "log-every": TrainerFlag("int"),
    "eval-every": TrainerFlag("int"),
    "eval-max-images": TrainerFlag("int"),
    "eval-metric": TrainerFlag("str", ("coco", "oid")),
    "oid-expand-predictions": TrainerFlag("bool"),
    "log-samples": TrainerFlag("bool"),
    "tensorboard": TrainerFlag("bool"),
    "device": TrainerFlag("str", ("auto", "cuda", "cpu")),
    "pin-memory": TrainerFlag("bool"),
    "prefetch-factor": TrainerFlag("int"),
    "dist-timeout": TrainerFlag("int"),
    "ddp-comm-hook": TrainerFlag("str"),
    "ddp-bucket-mb": TrainerFlag("int"),
    "gradient-as-bucket-view": TrainerFlag("bool"),
    "comm-check": TrainerFlag("str", ("auto", "on", "off")),
    "peak-tflops": TrainerFlag("float"),
    "debug": TrainerFlag("bool"),
}
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def trainer_flag_name(name: str) -> str | None:
    """The flag's name as the trainer spells it (`batch_size` -> `batch-size`), None when the
    trainer has no such flag."""
    spelled = name.strip().removeprefix("--").replace("_", "-")
    return spelled if spelled in TRAINER_FLAGS else None


def trainer_flag_words(name: str, raw: str) -> list[str]:
    """The words that pass `raw` to the trainer's `--name` (a name of TRAINER_FLAGS): `--lr 0.01`;
    for a bool `--flag` (true) or `--no-flag` (false); [] for an empty value (the trainer's
    default). Raises ValueError saying what the trainer accepts."""
    flag = TRAINER_FLAGS[name]
    value = raw.strip()
    if not value:
        return []
    if flag.kind == "bool":
        if value.lower() in _TRUE:
            return [f"--{name}"]
        if value.lower() in _FALSE:
            return [f"--no-{name}"]
        raise ValueError(f"{raw!r}: expected true or false (--{name} or --no-{name})")
    if flag.kind in ("int", "float"):
        try:
            {"int": int, "float": float}[flag.kind](value)
        except ValueError:
            expected = "a whole number" if flag.kind == "int" else "a number"
            raise ValueError(f"{raw!r}: expected {expected} (the trainer's --{name})") from None
    if flag.choices and value not in flag.choices:
        raise ValueError(f"{raw!r}: expected one of " + ", ".join(flag.choices))
    if name == "ddp-comm-hook" and not HOOK_SPEC.match(value):
        raise ValueError(f"{raw!r}: {HOOK_EXPECTED}")
    return [f"--{name}", value]


def _trainer_start(words: Sequence[str]) -> int | None:
    """The index of the first word the trainer parses (see trainer_args), None without one."""
    for i, word in enumerate(words):
        if word.rsplit("/", 1)[-1] == ENTRY_SCRIPT:
            return i + 1
        if word == "-m" and i + 1 < len(words) and words[i + 1] == "trainer":
            return i + 2
    return None


def _flag_span(words: Sequence[str], i: int, name: str) -> int:
    """How many words from words[i] pass `--name` (0: words[i] is not that flag)."""
    word, kind = words[i], TRAINER_FLAGS[name].kind
    if word.startswith(f"--{name}=") or (kind in ("bool", "switch") and word == f"--no-{name}"):
        return 1
    if word != f"--{name}":
        return 0
    if kind == "bool" or i + 1 >= len(words):
        return 1
    # argparse's nargs="?": a switch alone is `on`, followed by a flag it takes no value
    return 1 if kind == "switch" and words[i + 1].startswith("-") else 2


def set_trainer_flag(
    command: Sequence[str], args: Sequence[str], name: str, raw: str
) -> tuple[list[str], list[str]]:
    """(command, args) with the trainer's `--name` set to `raw`, passed exactly once: the first
    place that passes it now gets the new value (keeping a `--name=value` spelling), any other
    place loses it, and args gains `--name value` when nothing passed it. An empty `raw` removes
    the flag. Raises ValueError when the words do not run the trainer or the value is refused."""
    new = trainer_flag_words(name, raw)
    words = [*command, *args]
    start = _trainer_start(words)
    if start is None:
        raise ValueError(
            f"the command does not run the trainer (.../{ENTRY_SCRIPT} or -m trainer); "
            "set args or command instead"
        )
    out: list[tuple[str, bool]] = [(w, i < len(command)) for i, w in enumerate(words[:start])]
    placed = False
    i = start
    while i < len(words):
        span = _flag_span(words, i, name)
        if not span:
            out.append((words[i], i < len(command)))
            i += 1
            continue
        if not placed:
            equals = "=" in words[i] and len(new) == 2
            spelled = [f"{new[0]}={new[1]}"] if equals else new
            out += [(w, i < len(command)) for w in spelled]
            placed = True
        i += span
    if not placed:
        out += [(w, False) for w in new]
    return [w for w, in_command in out if in_command], [
        w for w, in_command in out if not in_command
    ]


# ---------------------------------------------------------------------------------------------
# The path a job takes: --channels-last auto and --compile auto (a copy of trainer/fast_path.py,
# which the trainer decides with; tests/trainer/test_plan_tables.py keeps the two equal)

GPU_EAGER_IMAGES_PER_SEC = 89.6
GPU_COMPILED_IMAGES_PER_SEC = 109.0
GPU_COLD_COMPILE_SECONDS = 110.0
GPU_REFERENCE_PIXELS = 800 * 1066
WARM_COMPILE_SHARE = 0.25
CPU_FP32_CHANNELS_LAST = 1.10
CPU_BF16_CHANNELS_LAST = 0.65
CPU_EAGER_SECONDS_PER_IMAGE = 43.3 / 2
CPU_COMPILED_SECONDS_PER_IMAGE = 35.2 / 2
CPU_COLD_COMPILE_SECONDS = 138.0
CPU_REFERENCE_PIXELS = 800 * 1066


class PathChoice(NamedTuple):
    on: bool
    why: str

    @property
    def value(self) -> str:
        return "on" if self.on else "off"


def channels_last_choice(asked: str, device_type: str, amp: str | None) -> PathChoice:
    """--channels-last: `asked` is auto, on or off; `device_type` cuda or cpu; `amp` the
    precision the run trains in (none, fp16, bf16), None where not known yet (--amp auto on a
    CPU, measured at start)."""
    if asked != "auto":
        return PathChoice(asked == "on", f"--channels-last {asked}")
    if device_type == "cuda":
        return PathChoice(True, "auto: cuDNN's convolutions are faster in channels-last")
    if amp is None:
        return PathChoice(False, "auto on a CPU: on with bf16, off with fp32 (measured at start)")
    if amp == "bf16":
        return PathChoice(
            True, f"auto: on a CPU in bf16, {CPU_BF16_CHANNELS_LAST:.2f}x the NCHW step time"
        )
    return PathChoice(
        False,
        f"auto: on a CPU in {'fp32' if amp == 'none' else amp}, channels-last took "
        f"{CPU_FP32_CHANNELS_LAST:.2f}x the NCHW step time",
    )


def compile_seconds_saved(device_type: str, images: int, height: int, width: int) -> float:
    """Seconds torch.compile saves over `images` images resized to height x width."""
    if device_type == "cuda":
        per_image = 1 / GPU_EAGER_IMAGES_PER_SEC - 1 / GPU_COMPILED_IMAGES_PER_SEC
        reference = GPU_REFERENCE_PIXELS
    else:
        per_image = CPU_EAGER_SECONDS_PER_IMAGE - CPU_COMPILED_SECONDS_PER_IMAGE
        reference = CPU_REFERENCE_PIXELS
    return images * per_image * height * width / reference


def compile_cost_seconds(device_type: str, warm_cache: bool) -> float:
    """The compile time a run pays at start: cold, or the share a warm cache leaves."""
    cold = GPU_COLD_COMPILE_SECONDS if device_type == "cuda" else CPU_COLD_COMPILE_SECONDS
    return cold * WARM_COMPILE_SHARE if warm_cache else cold


def compile_choice(
    asked: str, device_type: str, images: int, height: int, width: int, warm_cache: bool
) -> PathChoice:
    """--compile: `images` is what each process will train on (remaining steps x batch size),
    height x width the resized image; `warm_cache` whether the compile cache holds anything."""
    if asked != "auto":
        return PathChoice(asked == "on", f"--compile {asked}")
    saved = compile_seconds_saved(device_type, images, height, width)
    cost = compile_cost_seconds(device_type, warm_cache)
    cache = "warm" if warm_cache else "cold"
    figures = (
        f"{images:,} images at {height}x{width} save about {saved:,.0f} s against about "
        f"{cost:,.0f} s to compile with a {cache} cache"
    )
    if saved > cost:
        return PathChoice(True, f"auto: {figures}")
    return PathChoice(False, f"auto: too short to repay it: {figures}")
