"""The COCO loader on a generated instances file: renumbered classes, crowd, degenerate, missing."""

from __future__ import annotations

import pytest
from trainer_fixtures import write_coco

from trainer.data.coco import build_coco_index
from trainer.errors import ConfigError


def test_train_split(tmp_path):
    write_coco(tmp_path, train_images=6, val_images=2)
    index, stats = build_coco_index(
        str(tmp_path / "annotations/instances_train2017.json"), str(tmp_path / "train2017"),
        train=True, strict=False,
    )  # fmt: skip
    assert index.class_names == ["person", "car", "train"]
    assert sorted(set(index.labels.tolist())) == [1, 2, 3]  # ids 1, 3, 7 renumbered
    assert stats == {"degenerate": 1, "crowd_dropped": 1, "missing_images": 1}
    assert len(index) == 6 and index.num_boxes == 12
    assert int(index.group_of.sum()) == 0
    # xywh pixels -> normalised xyxy
    first = index.boxes[index.box_slice(0)][0].tolist()
    assert first == pytest.approx([5 / 80, 10 / 64, 30 / 80, 40 / 64])


def test_val_split_keeps_crowd_flagged(tmp_path):
    write_coco(tmp_path, train_images=2, val_images=3)
    index, stats = build_coco_index(
        str(tmp_path / "annotations/instances_val2017.json"), str(tmp_path / "val2017"),
        train=False, strict=False,
    )  # fmt: skip
    assert stats["crowd_dropped"] == 0
    assert int(index.group_of.sum()) == 1


def test_strict_missing_image(tmp_path):
    write_coco(tmp_path, train_images=2, val_images=1)
    with pytest.raises(ConfigError, match=r"000000000002\.jpg \(--strict\)"):
        build_coco_index(
            str(tmp_path / "annotations/instances_train2017.json"), str(tmp_path / "train2017"),
            train=True, strict=True,
        )  # fmt: skip


def test_not_a_coco_file(tmp_path):
    (tmp_path / "images").mkdir()
    bad = tmp_path / "bad.json"
    bad.write_text('{"images": []}')
    with pytest.raises(ConfigError, match=r"bad.json: not a COCO instances file"):
        build_coco_index(str(bad), str(tmp_path / "images"), train=True, strict=False)
