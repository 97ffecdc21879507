"""The trainer's run and the local cluster's job spec read top to bottom in pieces of a screen.

`train()` is what a researcher reads first; it and the long functions it leaned on were split
into steps. This keeps each step, and each piece split out of them, under 60 lines (from `def`
to the last line, as the AST counts them), so none grows back into a wall.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 60  # lines; a function must be shorter

# Each module's split functions: the one that was long first, then the pieces it became.
SPLIT = {
    "trainer/train.py": [
        "train",
        "make_log",
        "setup",
        "count_steps",
        "choose_precision",
        "wrap_model",
        "_compile",
        "_wrap_ddp",
        "build_optimizer",
        "open_metrics",
        "resume",
        "record_start",
        "train_epochs",
        "stop_preempted",
        "finish",
        "save",
        "run_eval",
    ],
    "trainer/engine.py": [
        "train_one_epoch",
        "_forward_backward",
        "_launch_reduce",
        "_read_due",
        "_read_step",
        "_optimizer_step",
        "_count_step",
    ],
    "trainer/data/prepare.py": ["prepare", "_check_prepare_args", "_write_shards", "_manifest"],
    "trainer/data/__init__.py": ["build_datasets", "_coco", "_openimages", "_openimages_split"],
    "runai_tui/local/jobspec.py": [
        "build_spec",
        "_mounts",
        "_mount_records",
        "_grace_seconds",
        "_workload_name",
        "_pod_counts",
        "_pod_commands",
        "_working_dir",
        "_restart_policies",
        "_pods",
        "_pod",
        "_place",
        "_resources",
        "_add_machine_notes",
    ],
}


def function_lengths(path: Path) -> dict[str, int]:
    """Module-level functions of a file and their lengths in lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {
        node.name: (node.end_lineno or node.lineno) - node.lineno + 1
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


@pytest.mark.parametrize("module", sorted(SPLIT))
def test_split_functions_stay_under_a_screen(module: str) -> None:
    lengths = function_lengths(ROOT / module)
    missing = [name for name in SPLIT[module] if name not in lengths]
    assert not missing, f"{module}: no function {missing}; renamed? update SPLIT in this test"
    too_long = {name: lengths[name] for name in SPLIT[module] if lengths[name] >= LIMIT}
    assert not too_long, (
        f"{module}: {too_long} lines; split them into steps under {LIMIT} lines, as train() is"
    )


def test_length_counts_from_def_to_last_line(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    x = 1\n\n    return x\n\n\ndef g():\n    pass\n")
    assert function_lengths(source) == {"f": 4, "g": 2}
