"""--tensorboard: event files next to metrics.jsonl when tensorboard is importable, a note (and
JSONL only) when it is not. Both paths run the real trainer for two steps in this process."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from trainer import __main__ as entry

pytestmark = pytest.mark.slow  # trains or runs the real model

TINY = [
    "--dataset", "synthetic", "--synthetic-train-images", "8", "--model", "retinanet_resnet18_fpn",
    "--min-size", "64", "--max-size", "64", "--workers", "0", "--batch-size", "4",
    "--max-steps", "2", "--eval-every", "0", "--log-every", "1", "--tensorboard",
    "--amp", "none", "--device", "cpu",
]  # fmt: skip


def train(output: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    return entry.main([*TINY, "--output-dir", str(output)])


def test_event_files_hold_the_train_records(tmp_path, monkeypatch, capsys) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    assert train(tmp_path, monkeypatch) == 0
    out = capsys.readouterr().out
    assert f"--tensorboard: event files in {tmp_path}" in out
    assert list(tmp_path.glob("events.out.tfevents.*"))
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    losses = [(e.step, round(e.value, 4)) for e in events.Scalars("train/loss")]
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    train_records = [r for r in records if r["kind"] == "train"]
    assert losses == [(r["step"], round(r["loss"], 4)) for r in train_records]
    assert "train/images_per_sec" in events.Tags()["scalars"]


def test_without_tensorboard_it_says_so_and_keeps_the_jsonl(tmp_path, monkeypatch, capsys) -> None:
    # None in sys.modules makes the import raise ImportError, as when the package is missing.
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    assert train(tmp_path, monkeypatch) == 0
    out = capsys.readouterr().out
    assert "--tensorboard: no event files (" in out
    assert not list(tmp_path.glob("events.out.tfevents.*"))
    assert (tmp_path / "metrics.jsonl").read_text().count('"kind": "train"') == 2
