"""--amp auto: on CPU it measures fp32 against bf16 on the real model and keeps the faster,
leaving the model as it found it; a resumed run keeps its checkpoint's precision."""

from __future__ import annotations

import torch

from trainer.amp import choose_amp
from trainer.config import parse_config
from trainer.distributed import DistContext
from trainer.model import build_model

CPU = DistContext(0, 1, 0, torch.device("cpu"), None)


def small_model() -> torch.nn.Module:
    cfg = parse_config(
        ["--model", "retinanet_resnet18_fpn", "--min-size", "64", "--max-size", "64"]
    )
    return build_model(cfg, num_classes=3)


def test_auto_on_cpu_measures_both_and_leaves_the_model_untouched() -> None:
    model = small_model()
    model.eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    said: list[str] = []
    choice = choose_amp("auto", CPU, model, 2, (64, 64), None, said.append)
    assert choice.amp in ("none", "bf16")
    assert choice.why.startswith(
        "--amp auto on CPU: measured 2 steps each at batch 2, 64x64: fp32 "
    )
    assert ("bf16 is faster" if choice.amp == "bf16" else "fp32 is faster") in choice.why
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # BN statistics included
    assert not model.training and all(p.grad is None for p in model.parameters())
    assert torch.equal(torch.get_rng_state(), rng)


def test_explicit_choices_and_a_resumed_run_keep_their_precision() -> None:
    model = small_model()
    assert choose_amp("none", CPU, model, 2, (64, 64), None, print).amp == "none"
    assert choose_amp("bf16", CPU, model, 2, (64, 64), "none", print).amp == "bf16"
    kept = choose_amp("auto", CPU, model, 2, (64, 64), "bf16", print)
    assert kept.amp == "bf16" and "kept from the checkpoint" in kept.why
