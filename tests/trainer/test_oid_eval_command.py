"""`python -m trainer oid-eval`: a saved predictions file scored as the challenge's tool does, on
files written here with the AP worked out by hand; bad input is one line naming file, row and
column, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainer.oid_eval import evaluate_files

HIERARCHY = {
    "LabelName": "/m/0bl9f",
    "Subcategory": [
        {"LabelName": "/m/veh", "Subcategory": [{"LabelName": "/m/car"}, {"LabelName": "/m/bus"}]}
    ],
}


def write(tmp_path: Path, predictions: str, boxes: str | None = None) -> dict[str, str]:
    files = {
        "hierarchy": json.dumps(HIERARCHY),
        "boxes": boxes
        or "ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsGroupOf\n"
        "img1,x,/m/car,1,0,0.5,0,0.5,0\n"
        "img3,x,/m/bus,1,0,1,0,1,1\n",
        "labels": "ImageID,Source,LabelName,Confidence\nimg1,v,/m/car,1\nimg2,v,/m/veh,0\n",
        "predictions": "ImageID,LabelName,Score,XMin,YMin,XMax,YMax\n" + predictions,
    }
    paths = {}
    for name, text in files.items():
        path = tmp_path / f"{name}.csv"
        path.write_text(text)
        paths[name] = str(path)
    return paths


def run(paths: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    args = [f"--{k}={v}" for k, v in paths.items()]
    return subprocess.run(
        [sys.executable, "-m", "trainer", "oid-eval", *args, *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )


# img1: a Car box (Car verified present). img2: no box, Vehicle verified absent, so Car and Bus
# are absent too (descendants). img3: a group-of Bus box over the whole image.
# Predictions:
#   img1 Car .8 on the box       -> Car TP
#   img2 Car .9                  -> Car FP (verified absent; img2 has only image-level labels)
#   img3 Bus .0 inside the group -> absorbed at score 0: no entry (the official > 0 rule)
#   img3 Bus .7 [.5,.5,.5,.9]    -> zero width: dropped before matching
#   img4 Car .95                 -> img4 has no annotation at all: not evaluated
# As written (official):
#   Car: FP .9, TP .8, 1 positive -> precision 0, 1/2 -> AP 1/2
#   Bus: 1 positive (the group-of box), no entry -> AP 0
#   Vehicle: 2 positives (Car and Bus boxes expanded), no Vehicle prediction -> AP 0
#   mAP = (1/2 + 0 + 0) / 3 = 1/6
# With --expand-predictions each Car/Bus prediction also counts for Vehicle:
#   Vehicle: FP .9 (img2: Vehicle absent), TP .8 (img1), group-of at 0 no entry -> 2 positives:
#   precision 0, 1/2; recall 0, 1/2 -> AP 1/2 * 1/2 = 1/4
#   mAP = (1/2 + 0 + 1/4) / 3 = 1/4
PREDICTIONS = (
    "img1,/m/car,0.8,0,0,0.5,0.5\n"
    "img2,/m/car,0.9,0,0,0.5,0.5\n"
    "img3,/m/bus,0.0,0.1,0.1,0.2,0.2\n"
    "img3,/m/bus,0.7,0.5,0.5,0.5,0.9\n"
    "img4,/m/car,0.95,0,0,1,1\n"
)


def test_hand_computed_files_as_written_and_expanded(tmp_path: Path) -> None:
    paths = write(tmp_path, PREDICTIONS)
    official = evaluate_files(**paths)
    assert official.per_class == {"/m/veh": 0.0, "/m/car": 0.5, "/m/bus": 0.0}
    assert official.map == pytest.approx(1 / 6)
    ours = evaluate_files(**paths, expand=True)
    assert ours.per_class == {"/m/veh": 0.25, "/m/car": 0.5, "/m/bus": 0.0}
    assert ours.map == pytest.approx(1 / 4)


def test_the_command_prints_map_and_per_class_ap_and_json(tmp_path: Path) -> None:
    paths = write(tmp_path, PREDICTIONS)
    done = run(paths)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "mAP@0.5 0.166667 over 3 classes with ground truth"
    assert lines[1:] == ["0.000000  /m/bus", "0.500000  /m/car", "0.000000  /m/veh"]
    done = run(paths, "--json", "--expand-predictions")
    assert json.loads(done.stdout) == {
        "map": pytest.approx(0.25),
        "per_class": {"/m/veh": 0.25, "/m/car": 0.5, "/m/bus": 0.0},
    }


def test_a_class_without_ground_truth_is_null(tmp_path: Path) -> None:
    boxes = "ImageID,LabelName,XMin,XMax,YMin,YMax,IsGroupOf\nimg1,/m/car,0,0.5,0,0.5,0\n"
    paths = write(tmp_path, "img1,/m/car,0.8,0,0,0.5,0.5\n", boxes=boxes)
    # Car: TP .8, 1 positive -> AP 1. Vehicle: 1 positive (the Car box), scored as written no
    # Vehicle prediction -> AP 0. Bus: no ground truth -> null, out of the mean (1/2).
    done = run(paths, "--json")
    assert json.loads(done.stdout) == {
        "map": 0.5,
        "per_class": {"/m/veh": 0.0, "/m/car": 1.0, "/m/bus": None},
    }


@pytest.mark.parametrize(
    "predictions, message",
    [
        ("ImageID,LabelName,Score,XMin,YMin,XMax\n", "row 1: no column YMax"),
        ("ImageID,LabelName,Score,XMin,YMin,XMax,YMax\nimg1,/m/car,,0,0,1,1\n", "row 2: column Score is empty"),
        ("ImageID,LabelName,Score,XMin,YMin,XMax,YMax\nimg1,/m/car,0.5,0,0,1\n", "row 2: column YMax is empty"),
        ("ImageID,LabelName,Score,XMin,YMin,XMax,YMax\nimg1,/m/car,0.5,0,zero,1,1\n", "row 2: column YMin: 'zero' is not a number"),
    ],
)  # fmt: skip
def test_bad_rows_and_columns_are_one_line_exit_2(
    tmp_path: Path, predictions: str, message: str
) -> None:
    paths = write(tmp_path, "")
    Path(paths["predictions"]).write_text(predictions)
    done = run(paths)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"trainer: error: {paths['predictions']}: {message}"
        + (
            "; expected ImageID,LabelName,Score,XMin,YMin,XMax,YMax"
            if "no column" in message
            else ""
        )
    ]


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    paths = write(tmp_path, "")
    paths["boxes"] = str(tmp_path / "nowhere.csv")
    done = run(paths)
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == f"trainer: error: {tmp_path / 'nowhere.csv'}: cannot read (No such file or directory)"
    )
