"""The accuracy-parity and time-to-target benchmarks, and the process timing under the GPU
figures: a side that fails shows its own last lines; evaluations are read from both trainers'
output; the parity verdict and loss-curve gap are computed from the runs. No timing is asserted."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from benchmarks import accuracy_parity, fig_target
from benchmarks.fig_trainer import timed_iterations


def test_a_failed_side_shows_its_own_last_lines(tmp_path: Path) -> None:
    """A child that exits before its iterations: its traceback reaches the error, not a
    ChildProcessError from reaping it twice."""
    script = tmp_path / "fails.py"
    script.write_text("print('it 1', flush=True)\nraise ValueError('Unknown model resnet_zero')\n")
    with pytest.raises(RuntimeError) as caught:
        timed_iterations([sys.executable, str(script)], {}, tmp_path, re.compile(rb"^it "), 4)
    text = str(caught.value)
    assert "exit 1, 1 of 4 iterations" in text
    assert "ValueError: Unknown model resnet_zero" in text


def test_time_to_target_stops_at_the_first_evaluation_that_reaches_it(tmp_path: Path) -> None:
    """The reference's pycocotools summary lines and our eval records, each from a real
    process: the clock stops at the first evaluation at or above the target."""
    line = " Average Precision  (AP) @[ IoU={iou} | area=   all | maxDets=100 ] = {value}"
    script = tmp_path / "reference.py"
    script.write_text(
        "import time\n"
        f"for ap, ap50 in ((0.01, 0.05), (0.2, 0.45), (0.3, 0.6), (0.4, 0.7)):\n"
        f"    print({line.format(iou='0.50:0.95', value='{ap:.3f}')!r}.format(ap=ap))\n"
        f"    print({line.format(iou='0.50     ', value='{ap50:.3f}')!r}.format(ap50=ap50))\n"
        "    print('Epoch: [1]', flush=True)\n"
        "    time.sleep(0.05)\n"
    )
    ref = fig_target.time_to_target(
        [sys.executable, str(script)], {}, tmp_path, fig_target.ReferenceEvals(), 0.5, "map50"
    )
    assert ref["reached"] and [e["map50"] for e in ref["evals"]] == [0.05, 0.45, 0.6]
    ours = tmp_path / "ours.py"
    ours.write_text(
        "import json\n"
        "for m in (0.1, 0.2):\n"
        "    print(json.dumps({'kind': 'eval', 'step': 1, 'map': m, 'map50': 2 * m}), flush=True)\n"
        "raise SystemExit(3)\n"
    )
    run = fig_target.time_to_target(
        [sys.executable, str(ours)], {}, tmp_path, fig_target.parse_ours, 0.5, "map"
    )
    assert not run["reached"] and run["best"] == 0.2 and run["exit"] == 3
    assert "NOT reached" in fig_target.describe("ours", run, 0.5, "map")
    lines = fig_target.verdict({"ours": run, "reference": ref}, 3.0, "map")
    assert lines and lines[0].startswith("time to the best map both reached (0.2000)")


def test_the_learnable_fixture_is_coco_the_reference_can_read(tmp_path: Path) -> None:
    fig_target.write_learnable_coco(tmp_path, train_images=3, val_images=2, base_size=64)
    document = json.loads((tmp_path / "annotations" / "instances_val2017.json").read_text())
    assert len(document["images"]) == 2 and {c["id"] for c in document["categories"]} == {1, 2, 3}
    for ann in document["annotations"]:
        x, y, w, h = ann["bbox"]
        assert ann["segmentation"][0][:4] == [x, y, x + w, y] and w > 0 and h > 0
    assert (tmp_path / "train2017" / "000000000003.jpg").is_file()


def test_parity_verdict_and_loss_gap() -> None:
    ref = accuracy_parity.spread([0.20, 0.24, 0.22])
    assert accuracy_parity.verdict(accuracy_parity.spread([0.21, 0.22, 0.23]), ref)[0]
    met, text = accuracy_parity.verdict(accuracy_parity.spread([0.19, 0.20, 0.21]), ref)
    assert not met and "-2.00 mAP points" in text  # within the spread but 2 points below
    runs = [{"losses": {1: 2.0, 2: 1.0}}, {"losses": {1: 2.0, 2: 1.5, 3: 1.0}}]
    gap = accuracy_parity.loss_gap(runs[:1], runs[1:])
    assert gap["steps"] == 2 and gap["max_abs"] == 0.5 and gap["last_quarter_mean"] == -0.5


@pytest.mark.slow
def test_the_parity_bench_runs_end_to_end(tmp_path: Path, capsys) -> None:
    """A toy size: one seed a side, two steps, ResNet-18 at 64 px."""
    out = tmp_path / "parity.json"
    argv = ["--quick", "--seeds", "1", "--steps", "2", "--out", str(out)]
    assert accuracy_parity.main(argv) == 0
    document = json.loads(out.read_text())
    assert set(document["runs"]) == {"fast", "reference"}
    assert document["gaps"]["fast"]["steps"] == 2 and isinstance(document["met"], bool)
    printed = capsys.readouterr().out
    assert "trainer: precision: bf16 (--amp bf16)" in printed  # the fast side's forced bf16
    assert "parity met" in printed or "parity NOT met" in printed


def test_gpu_figures_measures_the_other_rows_after_a_failed_one(tmp_path: Path, capsys) -> None:
    import argparse

    from benchmarks import gpu_figures

    args = argparse.Namespace(budget_s=600.0, out=tmp_path / "figures.json")
    done = gpu_figures.Rows(args)

    def fails() -> None:
        raise RuntimeError("train.py: exit 1; its last lines:\nValueError: Unknown model x")

    assert done.measure("reference speed", fails) is None
    assert done.measure("shipped defaults", lambda: {"name": "shipped"}) == {"name": "shipped"}
    args.budget_s = 0.0  # past the budget: the next row is not started
    assert done.measure("gpu_step.py", lambda: {"never": "run"}) is None
    done.save()
    document = json.loads(args.out.read_text())
    assert document["failed"] == ["reference speed"] and document["skipped"] == ["gpu_step.py"]
    printed = capsys.readouterr().out
    assert "reference speed: FAILED: train.py: exit 1" in printed
    assert "ValueError: Unknown model x" in printed
