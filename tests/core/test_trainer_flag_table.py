"""The trainer's flags as runai-tui reads them (runai_tui/trainer_flags/table.py) are generated
from the trainer's own configuration: the file is what scripts/trainer_flags.py makes now, so a
flag added to trainer/config.py fails here until the table is made again (one command, no edit),
and then reaches `--set trainer.NAME=VALUE`, lint, plan, compare and the sweeps."""

from __future__ import annotations

import dataclasses

from runai_tui import trainer_flags
from scripts.trainer_flags import COMMAND, TABLE, render
from trainer.config import TrainConfig, build_parser


def test_the_table_is_made_from_the_trainers_configuration() -> None:
    assert TABLE.read_text(encoding="utf-8") == render(), f"{TABLE.name} is stale: run {COMMAND}"


def test_every_flag_reads_to_the_trainers_default() -> None:
    assert {f.name.replace("_", "-") for f in dataclasses.fields(TrainConfig)} == set(
        trainer_flags.FLAGS
    )
    assert trainer_flags.TrainerArgs().values == vars(build_parser().parse_args([]))
    assert trainer_flags.parse([]).given == frozenset()


def test_one_reader_behind_parse_set_the_output_dir_and_compares_pairs() -> None:
    words = ["--compile", "--output-dir=/o1", "--seed", "3", "--no-sync-bn", "--unknown", "x",
             "--output-dir", "/o2", "--channels-last", "on"]  # fmt: skip
    assert [(t.flag, t.raw) for t in trainer_flags.tokens(words)] == [
        ("--compile", None),  # a switch alone: on
        ("--output-dir", "/o1"),
        ("--seed", "3"),
        ("--no-sync-bn", None),
        ("--unknown", "x"),  # another program's flag: the next word when it is no flag
        ("--output-dir", "/o2"),
        ("--channels-last", "on"),
    ]
    assert trainer_flags.value_of(words, "output-dir") == "/o2"  # the last, as argparse
    read = trainer_flags.parse(words)
    known, extra = build_parser().parse_known_args(words)
    assert extra == ["--unknown", "x"]
    assert read.values == vars(known)
    assert read.given == {"compile", "output_dir", "seed", "sync_bn", "channels_last"}
    command, args = trainer_flags.set_flag(["python", "-m", "trainer"], words, "output-dir", "/o3")
    assert command == ["python", "-m", "trainer"]
    assert args == ["--compile", "--output-dir=/o3", "--seed", "3", "--no-sync-bn", "--unknown",
                    "x", "--channels-last", "on"]  # fmt: skip
