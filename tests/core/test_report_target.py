"""The morning report says where each chain reached its --target-map: the trainer's `target`
record read from the log with the other figures, a resumed run's last word winning."""

from __future__ import annotations

import json

from runai_tui.cli.report_commands import _target
from runai_tui.knowledge.records.redone import redone


def _line(record: dict[str, object]) -> str:
    return "[rank0]: " + json.dumps(record)


NOT_REACHED = {"kind": "target", "status": "not reached", "metric": "map50", "target": 0.5,
               "value": 0.12, "step": 8, "wall_time": 40.0, "images": 64, "gpu_hours": None,
               "eval_seconds": 4.0, "eval_share": 0.1}  # fmt: skip
REACHED = {**NOT_REACHED, "status": "reached", "value": 0.51, "step": 14, "wall_time": 4000.0}


def test_the_newest_target_record_of_a_chain_is_its_time_to_target() -> None:
    lines = [
        _line({"kind": "train", "step": 8, "loss": 1.5, "time": 1.0}),
        _line(NOT_REACHED),  # the first attempt ended short of the target
        "trainer: resumed from /data/runs/x/step-6.pt: step 6",
        _line({"kind": "train", "step": 7, "loss": 1.2, "time": 2.0}),
        _line({"kind": "eval", "step": 14, "map": 0.3}),
        _line(REACHED),
    ]
    seen = redone(lines)
    assert seen.target is not None and seen.target.reached
    assert (seen.target.step, seen.target.value) == (14, 0.51)
    assert seen.steps == 2  # steps 7 and 8 trained again
    assert _target(seen.target.to_dict()) == "step 14, 1h07m"


def test_a_run_that_never_reached_or_never_aimed_says_so() -> None:
    assert _target(redone([_line(NOT_REACHED)]).target.to_dict()) == "not reached"  # type: ignore[union-attr]
    no_target = redone([_line({"kind": "train", "step": 1, "loss": 2.0, "time": 1.0})])
    assert no_target.target is None
    assert _target(None) == "-"
