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
