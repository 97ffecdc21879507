"""Bad input: one clear line naming the problem and the fix, exit 2 (1 for runtime), no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from trainer_fixtures import write_jpeg, write_openimages

from trainer import __main__ as entry
from trainer import checkpoint, config
from trainer.data.dataset import DetectionDataset
from trainer.data.index import build_from_rows
from trainer.errors import TrainerError

pytestmark = pytest.mark.slow  # trains or runs the real model

REPO = Path(__file__).resolve().parents[2]
SMALL = [
    "--min-size",
    "64",
    "--max-size",
    "64",
    "--workers",
    "0",
    "--model",
    "retinanet_resnet18_fpn",
    "--amp",
    "none",
]


@pytest.fixture(autouse=True)
def single_process(monkeypatch):
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    yield


def run_main(capsys, *args: str) -> tuple[int, str]:
    code = entry.main(list(args))
    err = capsys.readouterr().err
    return code, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "synthetic", "--batch-size", "3", "--grad-accum", "2"],
         "--batch-size 3 does not divide into --grad-accum 2 micro-batches"),
        (["--dataset", "openimages"], "--dataset openimages needs --data-root DIR"),
        (["--dataset", "coco", "--data-root", "/nonexistent/coco"], "--data-root '/nonexistent/coco': no such directory"),
        (["--dataset", "synthetic", "--weights", "/nope/w.pth"], "--weights '/nope/w.pth': no such file"),
        (["--dataset", "synthetic", "--resume", "/nope/c.pt"], "--resume '/nope/c.pt': no such checkpoint"),
        (["--dataset", "synthetic", "--min-size", "900", "--max-size", "800"], "need 32 <= min-size <= max-size"),
        (["--dataset", "synthetic", "--ddp-comm-hook", "bf16:2"], "--ddp-comm-hook 'bf16:2': expected none, bf16, fp16, powersgd or powersgd:RANK"),
        (["--dataset", "synthetic", "--ddp-comm-hook", "powersgd:0"], "--ddp-comm-hook 'powersgd:0': expected"),
        (["--dataset", "synthetic", "--ddp-bucket-mb", "-1"], "--ddp-bucket-mb -1: must be 0 (PyTorch's default) or more"),
    ],
)  # fmt: skip
def test_config_errors(capsys, args, message):
    code, err = run_main(capsys, *args)
    assert code == 2
    assert err.strip() == f"trainer: error: {message}" or message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_missing_annotation_file(capsys, tmp_path):
    (tmp_path / "coco").mkdir()
    code, err = run_main(
        capsys,
        "--dataset",
        "coco",
        "--data-root",
        str(tmp_path / "coco"),
        "--output-dir",
        str(tmp_path / "out"),
    )
    assert code == 2
    assert "annotations/instances_train2017.json: annotation file not found" in err


def test_openimages_bad_header_stops_before_training(capsys, tmp_path):
    write_openimages(tmp_path / "oid", train_images=2, val_images=1)
    (tmp_path / "oid" / "validation-annotations-bbox.csv").write_text("a,b,c\n")
    code, err = run_main(
        capsys, "--dataset", "openimages", "--data-root", str(tmp_path / "oid"),
        "--output-dir", str(tmp_path / "out"), *SMALL,
    )  # fmt: skip
    assert code == 2
    assert "validation-annotations-bbox.csv:1: header lacks ImageID" in err
    assert not (tmp_path / "out" / "metrics.jsonl").exists()


def test_evaluation_without_pycocotools(capsys, monkeypatch):
    real = config.importlib.util.find_spec
    monkeypatch.setattr(
        config.importlib.util,
        "find_spec",
        lambda name: None if name == "pycocotools" else real(name),
    )
    code, err = run_main(capsys, "--dataset", "synthetic")
    assert code == 2
    assert "evaluation needs pycocotools" in err and "--eval-every 0" in err
    code, _ = run_main(capsys, "--dataset", "synthetic", "--eval-every", "0", "--epochs", "0")
    assert code == 2  # evaluation off: the pycocotools check passes, epochs 0 is the next error


def test_checkpoint_from_another_model_or_class_count(capsys, tmp_path):
    out = tmp_path / "out"
    base = {"progress": {"epoch": 0, "step_in_epoch": 1, "global_step": 1}}
    checkpoint.save_checkpoint(
        str(out),
        1,
        {**base, "config": {"model": "retinanet_resnet50_fpn_v2"}, "class_names": ["x"]},
        3,
    )
    args = ["--dataset", "synthetic", "--output-dir", str(out), "--eval-every", "0", *SMALL]
    code, err = run_main(capsys, *args)
    assert code == 2 and "checkpoint is for --model retinanet_resnet50_fpn_v2" in err
    checkpoint.save_checkpoint(
        str(out),
        2,
        {**base, "config": {"model": "retinanet_resnet18_fpn"}, "class_names": ["x"]},
        3,
    )
    code, err = run_main(capsys, *args)
    assert code == 2 and "checkpoint has 1 classes, the dataset has 3" in err
    code, err = run_main(capsys, *args, "--resume", "none")
    assert code == 2 and "--resume none but" in err and "holds checkpoints of another run" in err


def test_non_finite_loss_names_the_step(capsys, tmp_path):
    code, err = run_main(
        capsys, "--dataset", "synthetic", "--output-dir", str(tmp_path), "--eval-every", "0",
        "--lr", "1e12", "--warmup-steps", "0", "--max-steps", "6", "--synthetic-train-images", "32",
        *SMALL,
    )  # fmt: skip
    assert code == 1
    assert "non-finite loss" in err and " at step " in err and "--clip-grad" in err


def test_unknown_dataset_through_the_real_command():
    result = subprocess.run(
        [sys.executable, "-m", "trainer", "--dataset", "imagenet"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert "invalid choice: 'imagenet'" in result.stderr and "Traceback" not in result.stderr


def test_corrupt_image_is_skipped_and_counted_or_fatal_with_strict(tmp_path):
    images = tmp_path / "images"
    for i in range(3):
        write_jpeg(images / f"{i}.jpg", 40, 30, i)
    data = (images / "1.jpg").read_bytes()
    (images / "1.jpg").write_bytes(data[: len(data) // 3])  # header intact, pixels cut short
    index = build_from_rows(
        np.arange(3), np.array([b"0.jpg", b"1.jpg", b"2.jpg"]),
        np.array([[0.1, 0.1, 0.5, 0.5]] * 3), np.ones(3), np.zeros(3), ["thing"],
        heights=np.full(3, 30), widths=np.full(3, 40),
    )  # fmt: skip
    common = {"train": True, "min_size": 32, "max_size": 64}
    dataset = DetectionDataset(index, str(images), **common)
    image, target = dataset[(1, 0)]
    assert target["skipped"] == ["1.jpg"] and target["index"] != 1
    assert image.dtype == torch.uint8 and image.shape == (3, 30, 40)
    strict = DetectionDataset(index, str(images), strict=True, **common)
    with pytest.raises(TrainerError, match=r"1\.jpg: cannot read image .*\(--strict\)"):
        strict[(1, 0)]


def test_a_box_without_width_is_refused_where_the_sample_is_read(tmp_path):
    # torchvision's RetinaNet checks boxes on the device (a wait per image); ours leaves it to
    # the host, here, with the image and the box named.
    images = tmp_path / "images"
    write_jpeg(images / "0.jpg", 40, 30, 0)
    index = build_from_rows(
        np.zeros(2, dtype=np.int64), np.array([b"0.jpg"]),
        np.array([[0.1, 0.1, 0.5, 0.5], [0.25, 0.1, 0.25, 0.5]]), np.ones(2), np.zeros(2),
        ["thing"], heights=np.full(1, 30), widths=np.full(1, 40),
    )  # fmt: skip
    dataset = DetectionDataset(index, str(images), train=False, min_size=32, max_size=64)
    with pytest.raises(TrainerError, match=r"0\.jpg: box \[10\.0, 3\.0, 10\.0, 15\.0\] has no "
                       r"positive width and height; drop it"):  # fmt: skip
        dataset[0]


def test_device_and_launch_mistakes(capsys, monkeypatch):
    if not torch.cuda.is_available():
        code, err = run_main(capsys, "--dataset", "synthetic", "--device", "cuda")
        assert code == 2 and "--device cuda: no CUDA device is visible" in err
    monkeypatch.setenv("WORLD_SIZE", "3")  # a pod-level variable, as Kubeflow sets it
    code, err = run_main(capsys, "--dataset", "synthetic", "--device", "cpu")
    assert code == 2 and "WORLD_SIZE is set but LOCAL_RANK is not: launch through torchrun" in err
