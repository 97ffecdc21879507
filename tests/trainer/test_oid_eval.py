"""--eval-metric oid wired through the trainer: files read from the data root, the metric on the
validation index, and the eval record of a real (tiny) training run."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from oid_fixtures import write_oid_eval_files
from trainer_fixtures import MIDS, image_id, write_jpeg, write_openimages

from trainer import __main__ as entry
from trainer.config import parse_config
from trainer.data import build_datasets
from trainer.distributed import DistContext
from trainer.errors import ConfigError
from trainer.evaluate import oid_metrics

CPU = DistContext(0, 1, 0, torch.device("cpu"), None)


def config(root, out, *extra):
    return parse_config(
        ["--dataset", "openimages", "--data-root", str(root), "--output-dir", str(out),
         "--eval-metric", "oid", *extra]
    )  # fmt: skip


def ground_truth_as_predictions(index):
    out = {}
    for i in range(len(index)):
        rows = index.box_slice(i)
        scale = np.array([index.widths[i], index.heights[i]] * 2, dtype=np.float32)
        boxes = index.boxes[rows] * scale
        out[i] = (boxes, np.linspace(0.9, 0.5, len(boxes)), index.labels[rows].astype(np.int64))
    return out


def test_validation_set_carries_hierarchy_and_image_labels(tmp_path):
    root = tmp_path / "oid"
    write_openimages(root, train_images=4, val_images=4)
    verified = write_oid_eval_files(root)
    _, val = build_datasets(config(root, tmp_path / "out"), CPU, lambda _m: None)
    annotations = val.oid_annotations
    assert annotations is not None
    # Tree's Part (Person) is not an ancestor: the three classes stay flat.
    assert [a.tolist() for a in annotations.hierarchy.ancestors[1:]] == [[1], [2], [3]]
    label_of = {mid: k + 1 for k, mid in enumerate(MIDS)}
    for i in range(len(val)):
        image_id = val.index.file_name(i)[: -len(".jpg")]
        labels = annotations.image_labels
        got = sorted([*labels.positive[i].tolist(), *labels.negative[i].tolist()])
        assert got == sorted(label_of[m] for m in verified[image_id])
    # The ground truth fed back scores 1. A Car detection on no box, on an image where Car is
    # verified present, is an FP ranked first for Car (score .99): Car's precision at its first
    # TP drops to 1/2, so its AP and the mean fall below 1.
    perfect = ground_truth_as_predictions(val.index)
    result = oid_metrics(val.index, perfect, list(range(len(val))), annotations)
    assert result == {"oid_map": 1.0, "oid_classes": 3}
    boxes, scores, labels = perfect[0]
    perfect[0] = (
        np.concatenate([boxes, [[0, 0, 2, 2]]]),
        np.concatenate([scores, [0.99]]),
        np.concatenate([labels, [2]]),
    )
    assert oid_metrics(val.index, perfect, list(range(len(val))), annotations)["oid_map"] < 1.0


def test_images_with_only_image_level_labels_are_evaluated(tmp_path):
    # Validation: 3 images with boxes, plus one with no box whose Car is verified absent.
    root = tmp_path / "oid"
    write_openimages(root, train_images=4, val_images=3)
    write_oid_eval_files(root)
    label_only = image_id(900)
    write_jpeg(root / "validation" / f"{label_only}.jpg", 80, 64, 900)
    with open(root / "validation-annotations-human-imagelabels-boxable.csv", "a") as f:
        f.write(f"{label_only},verification,{list(MIDS)[1]},0\n")
        f.write(f"{image_id(901)},verification,{list(MIDS)[1]},0\n")  # listed, but no image file
    _, val = build_datasets(config(root, tmp_path / "out"), CPU, lambda _m: None)
    index = val.index
    assert index.meta["label_only_start"] == 3 and len(index) == 4  # the missing file is skipped
    assert index.file_name(3) == f"{label_only}.jpg" and index.box_counts()[3] == 0
    assert val.oid_annotations.image_labels.negative[3].tolist() == [2]
    # The ground truth fed back scores 1; a Car detection on the label-only image is an FP
    # ranked first for Car (.99): Car's AP falls to 1/2 at its first TP... below 1 in the mean.
    perfect = ground_truth_as_predictions(index)
    everything = list(range(len(index)))
    assert oid_metrics(index, perfect, everything, val.oid_annotations)["oid_map"] == 1.0
    perfect[3] = (np.array([[0.0, 0.0, 8.0, 8.0]]), np.array([0.99]), np.array([2]))
    assert oid_metrics(index, perfect, everything, val.oid_annotations)["oid_map"] < 1.0


def test_missing_metric_files_are_named(tmp_path, monkeypatch, capsys):
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "oid"
    write_openimages(root, train_images=2, val_images=2)
    with pytest.raises(ConfigError, match="bbox_labels_600_hierarchy.json: class hierarchy not"):
        build_datasets(config(root, tmp_path / "out"), CPU, lambda _m: None)
    # From the command line: one line naming the file and the fix, exit 2, no traceback.
    args = ["--dataset", "openimages", "--data-root", str(root), "--eval-metric", "oid",
            "--output-dir", str(tmp_path / "out")]  # fmt: skip
    assert entry.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("trainer: error: ")
    assert "bbox_labels_600_hierarchy.json" in err[0] and "--eval-metric coco" in err[0]
    write_oid_eval_files(root)
    (root / "validation-annotations-human-imagelabels-boxable.csv").unlink()
    with pytest.raises(ConfigError, match="imagelabels-boxable.csv: image-level labels not found"):
        build_datasets(config(root, tmp_path / "out"), CPU, lambda _m: None)


@pytest.mark.slow
def test_tiny_run_reports_oid_map(tmp_path, monkeypatch):
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "oid"
    write_openimages(root, train_images=4, val_images=3)
    write_oid_eval_files(root)
    out = tmp_path / "out"
    code = entry.main([
        "--dataset", "openimages", "--data-root", str(root), "--output-dir", str(out),
        "--model", "retinanet_resnet18_fpn", "--min-size", "64", "--max-size", "64",
        "--workers", "0", "--max-steps", "1", "--log-every", "1", "--eval-metric", "oid",
        "--score-thresh", "0.0", "--detections-per-image", "20",  # an untrained model detects
        "--amp", "none", "--device", "cpu",
    ])  # fmt: skip
    assert code == 0
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    (record,) = [r for r in records if r["kind"] == "eval"]
    assert {"map", "map50", "oid_map", "oid_classes", "images", "detections"} <= set(record)
    assert record["images"] == 3 and record["detections"] > 0
    assert record["oid_classes"] == 3 and 0.0 <= record["oid_map"] <= 1.0
