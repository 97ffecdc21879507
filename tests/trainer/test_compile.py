"""--compile: the backbone, FPN and head compiled in place; the run trains, says how many padded
shapes it can meet, and its checkpoints keep the model's own keys. The compile backend is the
test hook's "eager" (the wiring, without minutes of code generation on two cores)."""

from __future__ import annotations

import pytest
import torch

from trainer import __main__ as entry
from trainer.config import parse_config
from trainer.model import build_model
from trainer.test_hooks import COMPILE_ENV


@pytest.mark.slow
def test_compiled_run_trains_and_checkpoints_plain_keys(tmp_path, monkeypatch, capsys):
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(COMPILE_ENV, "eager")
    args = ["--dataset", "synthetic", "--synthetic-train-images", "8", "--model",
            "retinanet_resnet18_fpn", "--min-size", "64", "--max-size", "96", "--workers", "0",
            "--max-steps", "3", "--eval-every", "0", "--log-every", "1", "--amp", "none",
            "--device", "cpu", "--compile", "--output-dir", str(tmp_path)]  # fmt: skip
    assert entry.main(args) == 0
    out = capsys.readouterr().out
    # 64..96 px: the short side pads to 64, the long one to 64 or 96, and very elongated images
    # the other way round.
    assert (
        "--compile: backbone+FPN, head and the batched loss's per-class pass compiled (eager) "
        "at their first step" in out
    )
    assert "at most 5 shapes at --min-size 64 --max-size 96" in out
    ckpt = torch.load(tmp_path / "checkpoints" / "step-000000003.pt", weights_only=True)
    plain = build_model(parse_config(args[:-2]), 4).state_dict()
    assert list(ckpt["model"]) == list(plain)  # no _orig_mod. prefixes
