"""The Open Images parser on fixtures with every quirk of the official files, and bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from trainer_fixtures import MIDS, image_id, write_openimages

from trainer.data.openimages import build_openimages_index, read_classes
from trainer.errors import ConfigError


def build(root, **kwargs):
    options = {"keep_classes": None, "group_of": "positive", "strict": False} | kwargs
    return build_openimages_index(
        str(root / "oidv6-train-annotations-bbox.csv"),
        str(root / "oidv7-class-descriptions-boxable.csv"),
        str(root / "train"),
        **options,
    )


@pytest.mark.parametrize("class_header", [False, True])
def test_class_file_with_or_without_header(tmp_path, class_header):
    write_openimages(tmp_path, train_images=2, val_images=1, class_header=class_header)
    table = read_classes(str(tmp_path / "oidv7-class-descriptions-boxable.csv"))
    assert table.mids == list(MIDS)
    assert table.names == list(MIDS.values())


def test_train_file_quirks(tmp_path):
    expected = write_openimages(tmp_path, train_images=10, val_images=1)
    index, stats = build(tmp_path)
    # The missing image is dropped and counted; the degenerate box is dropped and counted.
    assert stats.missing_images == 1
    assert stats.degenerate == expected["degenerate"]
    names = {index.file_name(i) for i in range(len(index))}
    assert f"{expected['missing'][0]}.jpg" not in names
    assert names == {f"{image_id(i)}.jpg" for i in range(10)}
    # Group-of boxes stay as positives by default, flagged.
    assert index.num_boxes == expected["train_boxes_kept"]
    assert int(index.group_of.sum()) == expected["group_of"] > 0
    # Sizes come from the JPEG headers; boxes are normalised xyxy from XMin,XMax,YMin,YMax order.
    assert set(index.widths.tolist()) == {80} and set(index.heights.tolist()) == {64}
    first = index.file_names.tolist().index(f"{image_id(3)}.jpg".encode())
    boxes = index.boxes[index.box_slice(first)]
    np.testing.assert_allclose(
        sorted(boxes.tolist()), [[0.1, 0.2, 0.35, 0.7], [0.4, 0.2, 0.65, 0.7]], atol=1e-6
    )
    labels = index.labels[index.box_slice(first)]
    assert sorted(labels.tolist()) == [1, 2]  # classes are numbered 1..K in class-file order


def test_group_of_drop_and_class_subset(tmp_path):
    expected = write_openimages(tmp_path, train_images=10, val_images=1)
    index, stats = build(tmp_path, group_of="drop")
    assert stats.group_of_dropped == expected["group_of"]
    assert int(index.group_of.sum()) == 0
    subset, stats = build(tmp_path, keep_classes="Car, /g/11bc5k")
    assert subset.class_names == ["Car", "Tree"]
    assert set(subset.labels.tolist()) == {1, 2}
    assert stats.other_classes > 0


def test_strict_names_the_missing_image(tmp_path):
    expected = write_openimages(tmp_path, train_images=3, val_images=1)
    with pytest.raises(ConfigError, match=expected["missing"][0]):
        build(tmp_path, strict=True)


def test_wrong_header(tmp_path):
    write_openimages(tmp_path, train_images=2, val_images=1)
    path = tmp_path / "oidv6-train-annotations-bbox.csv"
    path.write_text("id,label,x1,y1,x2,y2\nabc,/m/0k4j,0,0,1,1\n")
    with pytest.raises(
        ConfigError, match=r"oidv6-train-annotations-bbox.csv:1: header lacks ImageID"
    ):
        build(tmp_path)


def test_label_missing_from_class_file(tmp_path):
    write_openimages(tmp_path, train_images=2, val_images=1)
    path = tmp_path / "oidv6-train-annotations-bbox.csv"
    lines = path.read_text().splitlines()
    lines.insert(3, f"{image_id(0)},xclick,/m/unknown,1,0.1,0.2,0.1,0.2,0,0,0,0,0" + ",-1" * 8)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r":4: LabelName '/m/unknown' is not in the class file"):
        build(tmp_path)


def test_box_outside_unit_square(tmp_path):
    write_openimages(tmp_path, train_images=2, val_images=1)
    path = tmp_path / "oidv6-train-annotations-bbox.csv"
    lines = path.read_text().splitlines()
    lines.insert(2, f"{image_id(0)},xclick,/m/0k4j,1,0.1,1.5,0.1,0.2,0,0,0,0,0" + ",-1" * 8)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r":3: XMax=1.5 is outside \[0, 1\]"):
        build(tmp_path)


def test_unknown_subset_class(tmp_path):
    write_openimages(tmp_path, train_images=2, val_images=1)
    with pytest.raises(ConfigError, match="'Unicorn' is neither a DisplayName nor a MID"):
        build(tmp_path, keep_classes="Unicorn")


def test_index_round_trips_through_cache_file(tmp_path):
    write_openimages(tmp_path, train_images=4, val_images=1)
    index, _ = build(tmp_path)
    path = tmp_path / "cache" / "train.index"
    index.save(str(path))
    loaded = type(index).load(str(path))
    for name in ("file_names", "offsets", "boxes", "labels", "group_of", "heights", "widths"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(index, name))
    assert loaded.class_names == index.class_names


def test_prepare_only_caches_the_index_and_trains_nothing(tmp_path, monkeypatch, capsys):
    from trainer import __main__ as entry

    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    write_openimages(tmp_path / "oid", train_images=4, val_images=2)
    out = tmp_path / "out"
    args = [
        "--dataset",
        "openimages",
        "--data-root",
        str(tmp_path / "oid"),
        "--output-dir",
        str(out),
    ]
    assert entry.main([*args, "--prepare-only"]) == 0
    cached = sorted(p.name for p in (out / "cache").glob("*.index"))
    assert len(cached) == 2 and cached[0].startswith("openimages-train-")
    assert not (out / "metrics.jsonl").exists() and not (out / "checkpoints").exists()
    assert entry.main([*args, "--prepare-only"]) == 0  # second time from the cache
    text = capsys.readouterr().out
    assert text.count("parsing") == 2  # train and validation parsed once, not twice
    assert "skipped missing images 1" in text


def test_image_list_for_the_official_downloader(tmp_path):
    write_openimages(tmp_path, train_images=3, val_images=1)
    script = Path(__file__).resolve().parents[2] / "scripts" / "oid-image-list.py"
    csv_path = tmp_path / "oidv6-train-annotations-bbox.csv"
    result = subprocess.run(
        [sys.executable, str(script), str(csv_path), "train"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert sorted(lines) == sorted(f"train/{image_id(i)}" for i in [*range(3), 999])
    only_cars = subprocess.run(
        [sys.executable, str(script), str(csv_path), "train", "--mids", "/m/0k4j"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert 0 < len(only_cars.stdout.splitlines()) < len(lines)
