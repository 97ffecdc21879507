"""The plan's tables (runai_tui/knowledge/plan.py) against the trainer they describe: the core cannot import
the trainer (torch), so these tests fail when trainer/config.py or the real torchvision models
change and the tables do not."""

from __future__ import annotations

import dataclasses

import pytest

from runai_tui import trainer_flags
from runai_tui.knowledge import plan
from runai_tui.profiles import Profile
from trainer import model as trainer_model
from trainer.config import OPTIMIZER_DEFAULTS, TrainConfig, build_parser

pytestmark = pytest.mark.slow  # trains or runs the real model


def test_the_optimizer_defaults_are_the_trainers() -> None:
    assert {k: v.lr for k, v in OPTIMIZER_DEFAULTS.items()} == plan.OPTIMIZER_LR


def test_the_plan_reads_arguments_as_the_trainer_does() -> None:
    words = ["--batch-size", "8", "--grad-accum=4", "--sync-bn", "--lr", "0.1", "--workers", "0"]
    cfg = TrainConfig(**vars(build_parser().parse_args(words)))
    read = trainer_flags.parse(words)
    assert read.values == cfg.to_dict()
    assert read.given == {"batch_size", "grad_accum", "sync_bn", "lr", "workers"}
    assert plan.scaled_lr(read.lr, 64, read.lr_base_batch) == cfg.resolved_lr(64)


# Each case builds one real model with no weights (well under a second each).
@pytest.mark.parametrize(
    "words",
    [
        [],  # the default: v2 on Open Images (601 classes), every layer trains
        ["--model", "retinanet_resnet50_fpn", "--weights-backbone", "b.pth", "--dataset", "coco"],
        [
            "--model",
            "retinanet_resnet18_fpn",
            "--trainable-backbone-layers",
            "2",
            "--dataset",
            "synthetic",
            "--synthetic-classes",
            "7",
        ],
    ],
)
def test_parameter_table_matches_the_real_models(
    monkeypatch: pytest.MonkeyPatch, words: list[str]
) -> None:
    """The plan's count of a profile's model equals the real model's, built as the trainer
    builds it (v1 from backbone weights gets frozen BN and 3 trainable layers)."""
    # Loading weights is not what is counted: skip the file, keep everything build_model decides.
    monkeypatch.setattr(trainer_model, "_load_backbone", lambda model, path: None)
    profile = Profile(name="p", workers=1, command=["python", "-m", "trainer"], args=words)
    planned = plan.make_plan(profile, dataset_size=100)
    cfg = TrainConfig(**vars(build_parser().parse_args(words)))
    params = list(trainer_model.build_model(cfg, planned.num_classes).parameters())
    assert planned.parameters == sum(p.numel() for p in params if p.requires_grad)
    assert planned.parameters_total == sum(p.numel() for p in params)


def test_the_comm_hook_spelling_is_the_trainers() -> None:
    from runai_tui.knowledge import trainer_facts
    from trainer import config

    assert trainer_facts.HOOK_SPEC.pattern == config.HOOK_SPEC.pattern
    assert set(trainer_facts.HOOK_WIRE_SHARE) == {"none", "bf16", "fp16", "powersgd"}


def test_the_plans_fast_path_rule_is_the_trainers() -> None:
    """`plan` and the submit form say which path a job takes with trainer/fast_path.py itself:
    runai_tui/trainer_flags/fast_path.py is a link to it (the core imports no trainer)."""
    from pathlib import Path

    from runai_tui.trainer_flags import fast_path as ours
    from trainer import config, fast_path

    link = Path(trainer_flags.__file__).parent / "fast_path.py"
    assert link.is_symlink() and link.resolve() == Path(fast_path.__file__).resolve()
    assert ours.compile_choice("auto", "cpu", 6, 64, 64, False) == fast_path.compile_choice(
        "auto", "cpu", 6, 64, 64, False
    )
    switches = {n for n, f in trainer_flags.FLAGS.items() if f.kind == "switch"}
    assert switches == {"channels-last", "compile"}
    assert {trainer_flags.FLAGS[n].choices for n in switches} == {config.SWITCH_CHOICES}


def test_the_plan_reads_the_switches_as_the_trainer_does() -> None:
    for words in (
        ["--channels-last", "--compile", "--min-size", "640"],
        ["--no-channels-last", "--no-compile", "--max-size", "900"],
        ["--channels-last", "auto", "--compile=on"],
        ["--compile"],
    ):
        cfg = TrainConfig(**vars(build_parser().parse_args(words)))
        read = trainer_flags.parse(words)
        for name in ("channels_last", "compile", "min_size", "max_size"):
            assert getattr(cfg, name) == getattr(read, name), (words, name)


def test_the_flag_table_of_trainer_settings_is_the_trainers_help() -> None:
    """`--set trainer.NAME=VALUE` validates against trainer_flags.FLAGS: the same flags as
    `python -m trainer --help` prints, each with the trainer's type and choices."""
    import re
    import subprocess
    import sys

    from runai_tui.trainer_flags import FLAGS as TRAINER_FLAGS

    shown = subprocess.run(
        [sys.executable, "-m", "trainer", "--help"], capture_output=True, text=True, check=True
    ).stdout
    usage = shown.split("\n\n", 1)[0]  # the usage lists every flag once, with its choices
    flags = set(re.findall(r"\[--([a-z][a-z0-9-]*)", usage))
    assert flags == set(TRAINER_FLAGS)
    for name, flag in TRAINER_FLAGS.items():
        if flag.kind == "bool":
            assert f"[--{name} | --no-{name}]" in usage, name
        elif flag.kind == "switch":
            assert f"[--{name} [{{{','.join(flag.choices)}}}]]" in usage, name
        elif flag.choices:
            assert f"[--{name} {{{','.join(flag.choices)}}}]" in usage, name
        else:
            metavar = {"int": "N", "float": "X", "str": "VALUE"}[flag.kind]
            assert f"[--{name} {metavar}]" in usage, name
    fields = {f.name.replace("_", "-"): f for f in dataclasses.fields(TrainConfig)}
    assert set(fields) == set(TRAINER_FLAGS)


# A value of each kind that is not the trainer's default for any flag of that kind.
_SAMPLES = {"int": "7", "float": "0.375", "str": "x/y"}


def test_every_flag_of_the_table_is_read_by_the_trainers_parser_as_set() -> None:
    """Each flag of trainer_flags.FLAGS, written as `--set trainer.NAME=VALUE` writes it,
    goes through the trainer's own argparse to the value set: the table's kinds, choices and
    spellings (--no-NAME, a switch alone) are the parser's, flag by flag."""
    from runai_tui.trainer_flags import FLAGS as TRAINER_FLAGS
    from runai_tui.trainer_flags import flag_words as trainer_flag_words

    parser = build_parser()
    for name, flag in TRAINER_FLAGS.items():
        field = name.replace("-", "_")
        if flag.kind == "bool":
            cases = [("true", True), ("false", False)]
        elif flag.choices:
            cases = [(choice, choice) for choice in flag.choices]
        elif name == "ddp-comm-hook":
            cases = [("powersgd:2", "powersgd:2")]
        else:
            raw = _SAMPLES[flag.kind]
            cases = [(raw, {"int": int, "float": float, "str": str}[flag.kind](raw))]
        for raw, value in cases:
            words = trainer_flag_words(name, raw)
            assert getattr(parser.parse_args(words), field) == value, (name, words)
        if flag.kind == "switch":
            assert getattr(parser.parse_args([f"--{name}"]), field) == "on", name
            assert getattr(parser.parse_args([f"--no-{name}"]), field) == "off", name


def test_a_rule_both_sides_check_is_said_in_the_trainers_words() -> None:
    """lint and plan refuse what the trainer's validate refuses, in the same words."""
    from runai_tui.knowledge.trainer_facts import trainer_args_problem
    from trainer.config import validate
    from trainer.errors import ConfigError

    for words in (
        ["--batch-size", "3", "--grad-accum", "2"],
        ["--ddp-comm-hook", "int8"],
        ["--epochs", "0"],
        ["--max-steps", "-1"],
        ["--workers", "-2"],
        ["--ddp-bucket-mb", "-1"],
        ["--min-size", "900", "--max-size", "800"],
        ["--trainable-backbone-layers", "6"],
        ["--synthetic-classes", "0"],
    ):
        words = ["--dataset", "synthetic", "--eval-every", "0", *words]
        with pytest.raises(ConfigError) as refused:
            validate(TrainConfig(**vars(build_parser().parse_args(words))))
        assert trainer_args_problem(trainer_flags.parse(words)) == str(refused.value), words


def test_trainer_settings_reach_the_trainer_as_set() -> None:
    """`--set trainer.NAME=VALUE` words, parsed by the trainer's own parser, give the values set
    (a replaced `=` spelling, an appended flag, a boolean's --no- form, an auto/on/off switch)."""
    from runai_tui.knowledge.trainer_facts import trainer_args
    from runai_tui.profiles import ProfileStore, apply_overrides

    local = ProfileStore().load("retinanet-local")
    base = apply_overrides(
        local, ["args=[--dataset, synthetic, --batch-size=2, --compile, --sync-bn]"]
    )
    sets = [
        "trainer.batch-size=6",
        "trainer.grad-accum=3",
        "trainer.lr=0.005",
        "trainer.sync-bn=false",
        "trainer.compile=off",
        "trainer.amp=none",
        "trainer.pin-memory=false",
    ]
    words = trainer_args(apply_overrides(base, sets))
    assert words is not None
    cfg = TrainConfig(**vars(build_parser().parse_args(words)))
    assert (cfg.batch_size, cfg.grad_accum, cfg.lr, cfg.amp) == (6, 3, 0.005, "none")
    assert (cfg.sync_bn, cfg.compile, cfg.pin_memory, cfg.dataset) == (
        False,
        "off",
        False,
        "synthetic",
    )
    assert words.count("--batch-size=6") == 1 and "--sync-bn" not in words
    assert trainer_flags.parse(words).values == cfg.to_dict()


@pytest.mark.parametrize("name", ["retinanet-local", "retinanet-tcp", "retinanet-rdma"])
def test_a_shipped_profiles_trainer_words_are_a_valid_trainer_config(name: str) -> None:
    """The real-run tests on the local cluster shrink the model, the images and the precision
    with `--set trainer.*` (tests/local/test_hang_rank.py); that the shipped profile's own words
    are a run the trainer takes is shown here, by the trainer's own parser and validation."""
    from runai_tui.knowledge.trainer_facts import trainer_args
    from runai_tui.profiles import ProfileStore
    from trainer.config import parse_config

    words = trainer_args(ProfileStore().load(name))
    assert words is not None
    cfg = parse_config(words)
    assert cfg.model == "retinanet_resnet50_fpn_v2"
    if name == "retinanet-local":  # what the shrunk runs replace
        assert (cfg.dataset, cfg.min_size, cfg.amp, cfg.max_steps) == ("synthetic", 128, "auto", 20)
