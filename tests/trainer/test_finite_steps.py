"""Finite in every precision: a grid of models x sizes x precisions x seeds, 5 steps each on the
CPU through the trainer's own loop (engine.train_one_epoch: autocast, the finiteness guard, the
optimizer), one cell again as a real 2-rank gloo run; and the guard itself: a step whose gradient
or loss is not finite never reaches the weights, and the error names the precision.

Batch 1 (2 in the gloo run, as reported). The grid's cost on a CPU: fp32 is cheap, bf16 is not
everywhere. Where the CPU has no native bf16
(AVX2 only: `torch.ops.mkldnn._is_mkldnn_bf16_supported()` is false) PyTorch runs bf16
convolutions on ATen's fallback, 5 to 15 times fp32's time: 32 CPU-s for one ResNet-18 step at
320 px. So the suite runs the bounded cells (bounded_cell: fp32 at two sizes a model, bf16
where the maps are tiny, the sizes the NaN was met at), and RUNAI_TUI_TEST_FULL_GRID=1 runs
every cell; the cells left out say so when skipped.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from trainer.config import TrainConfig, parse_config
from trainer.data import build_datasets
from trainer.data.feeds import build_train_data
from trainer.data.transforms import to_model_input
from trainer.distributed import DistContext
from trainer.engine import EpochOutcome, train_one_epoch
from trainer.errors import TrainerError
from trainer.metrics import MetricsLog
from trainer.model import build_model, parameter_groups
from trainer.state import Choice, FastPath, ForwardClock, Meters, Net, Optim, Run, WarmupCosine

CPU = DistContext(0, 1, 0, torch.device("cpu"), None)
MODELS = ("retinanet_resnet50_fpn_v2", "retinanet_resnet18_fpn")
SIZES = (64, 96, 128, 320)
PRECISIONS = ("none", "bf16", "fp16")  # none: fp32
SEEDS = (0, 1, 2)
STEPS = 5
# bf16's first-step loss against fp32's, same weights and batch, untrained weights: the largest
# difference measured here was 3.2% (ResNet-50 v2, 64 px, seed 2: the GIoU box loss 7% off, as
# bf16 box deltas pass through exp() when decoded; the classification loss 0.4%).
BF16_FIRST_LOSS_REL = 0.05
FULL_GRID_ENV = "RUNAI_TUI_TEST_FULL_GRID"


def bounded_cell(model: str, size: int, amp: str, seed: int) -> bool:
    """The cells the suite runs: fp32 for every model at 64 and 128 px (retinanet-local's size)
    at seed 0, and for ResNet-18 at 64 px every seed; bf16 where P6 or P7 is 1x1: at 64 px for
    ResNet-18 every seed and for ResNet-50 v2 seed 0, at 96 px for ResNet-18 seed 0 (128 px
    has the same tiny levels as 96: P6 2x2, P7 1x1). fp32 at 96 and 320 px is left out: the
    size decides which levels run apart only under bf16 (model.cpu_bf16_autocast), and those
    four cells were 29% of the module's time (the 320 px ones 44 s and 29 s of a 344 s run
    alone, 2026-11-28); the full grid still runs them."""
    resnet18 = model.endswith("18_fpn")
    if amp == "none":
        return (seed == 0 and size in (64, 128)) or (size == 64 and resnet18)
    if amp == "bf16":
        return (size == 64 and (resnet18 or seed == 0)) or (size == 96 and resnet18 and seed == 0)
    return True  # fp16: on CUDA only, skipped elsewhere


def args(model: str, size: int, amp: str, seed: int, out: Path, batch: int = 1) -> list[str]:
    """The trainer's own defaults but for the warmup (0: the 5 steps train at the full lr)."""
    return [
        "--dataset", "synthetic", "--synthetic-train-images", "16", "--synthetic-classes", "3",
        "--model", model, "--min-size", str(size), "--max-size", str(size),
        "--batch-size", str(batch), "--workers", "0", "--eval-every", "0",
        "--log-every", "1", "--warmup-steps", "0", "--amp", amp, "--seed", str(seed),
        "--device", "cpu", "--output-dir", str(out),
    ]  # fmt: skip


class Models:
    """One model per (model, seed), built once; each cell starts from its initial weights."""

    def __init__(self) -> None:
        self.built: dict[tuple[str, int], tuple[nn.Module, dict[str, torch.Tensor]]] = {}

    def get(self, cfg: TrainConfig, num_classes: int) -> nn.Module:
        key = (cfg.model, cfg.seed)
        if key not in self.built:
            torch.manual_seed(cfg.seed)
            model = build_model(cfg, num_classes)
            initial = {k: v.clone() for k, v in model.state_dict().items()}
            self.built[key] = (model, initial)
        model, initial = self.built[key]
        model.load_state_dict(initial)
        model.zero_grad(set_to_none=True)
        model.transform.min_size = (cfg.min_size,)  # the size is the transform's alone
        model.transform.max_size = cfg.max_size
        return model


@pytest.fixture(scope="module")
def models() -> Models:
    return Models()


def batches(cfg: TrainConfig) -> tuple[list[tuple[list[Any], list[Any]]], int]:
    """STEPS batches of the synthetic train split, in order, and the class count."""
    train_set, _ = build_datasets(cfg, CPU, lambda _msg: None)
    items = [train_set[(i, 0)] for i in range(STEPS * cfg.batch_size)]
    size = cfg.batch_size
    loader = [
        ([image for image, _ in items[i : i + size]], [target for _, target in items[i : i + size]])
        for i in range(0, len(items), size)
    ]
    return loader, train_set.num_classes


def train_steps(
    cfg: TrainConfig, model: nn.Module, loader: list, steps: int = STEPS
) -> tuple[EpochOutcome, torch.amp.GradScaler | None]:
    """The trainer's loop over `loader` with its optimizer (SGD, its parameter groups, warmup
    then cosine) and, in fp16, a gradient scaler; records go to OUTPUT_DIR/metrics.jsonl."""
    weight_decay, norm_weight_decay = cfg.resolved_weight_decay()
    groups = parameter_groups(model, weight_decay, norm_weight_decay)
    lr = cfg.resolved_lr(cfg.batch_size)
    optimizer = torch.optim.SGD(groups, lr=lr, momentum=cfg.momentum)
    schedule = WarmupCosine(cfg.warmup_steps, cfg.warmup_factor, steps, cosine=True)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    device = next(model.parameters()).device.type
    scaler = torch.amp.GradScaler(device) if cfg.amp == "fp16" else None
    os.makedirs(cfg.output_dir, exist_ok=True)
    data = build_train_data(cfg, CPU, lambda _msg: None)
    assert data is not None
    off = Choice("off", "off", "test")
    path = FastPath(Choice(cfg.amp, cfg.amp, "test"), off, off)
    clock = ForwardClock(model)  # unhooked after: the module's models outlive a run
    run = Run(
        cfg, CPU, lambda _msg: None, data, steps, path, Net(model, model, None),
        Optim(optimizer, scheduler, schedule, scaler, lr, groups), Meters(clock),
        MetricsLog(cfg.output_dir, True),
    )  # fmt: skip
    try:
        outcome = train_one_epoch(run, iter(loader), lambda _reason: None, lambda: False)
    finally:
        clock.remove()
    return outcome, scaler


def train_losses(out: Path) -> list[float]:
    lines = (out / "metrics.jsonl").read_text().splitlines()
    return [r["loss"] for r in map(json.loads, lines) if r["kind"] == "train"]


def one_image(loader: list) -> list:
    """The first batch's first image alone: a step at a fraction of the cost."""
    images, targets = loader[0]
    return [(images[:1], targets[:1])]


def first_loss_fp32(model: nn.Module, loader: list) -> float:
    """The first batch's loss in fp32 at the model's current (initial) weights."""
    images, targets = loader[0]
    losses = model(to_model_input(images, CPU.device), targets)
    model.zero_grad(set_to_none=True)
    return float(sum(v.detach() for v in losses.values()))


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("amp", PRECISIONS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("model_name", MODELS)
def test_five_finite_steps(models, tmp_path, model_name, size, amp, seed) -> None:
    if amp == "fp16":
        pytest.skip("fp16 trains with a gradient scaler on CUDA; no CUDA device here")
    if not bounded_cell(model_name, size, amp, seed) and not os.environ.get(FULL_GRID_ENV):
        pytest.skip(
            f"outside the suite's bounded grid (module docstring); {FULL_GRID_ENV}=1 runs it"
        )
    cfg = parse_config(args(model_name, size, amp, seed, tmp_path))
    loader, num_classes = batches(cfg)
    model = models.get(cfg, num_classes)
    if amp == "bf16":
        reference = first_loss_fp32(model, loader)
    outcome, _ = train_steps(cfg, model, loader)
    assert outcome is EpochOutcome.MAX_STEPS
    losses = train_losses(tmp_path)
    assert len(losses) == STEPS and all(math.isfinite(x) for x in losses), losses
    assert all(torch.isfinite(p).all() for p in model.parameters())
    if amp == "bf16":
        assert losses[0] == pytest.approx(reference, rel=BF16_FIRST_LOSS_REL)


@pytest.mark.slow
def test_bf16_at_tiny_maps_under_two_rank_gloo(tmp_path) -> None:
    """The reported run (ResNet-18, 64 px, batch 2, bf16), 5 steps on 2 ranks over gloo."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "trainer", *args("retinanet_resnet18_fpn", 64, "bf16", 0, tmp_path, batch=2),
           "--max-steps", str(STEPS), "--checkpoint-every", "0"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "TORCHELASTIC"))}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    env["OMP_NUM_THREADS"] = "1"
    repo = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "precision: bf16 (--amp bf16)" in run.stdout
    losses = train_losses(tmp_path)
    assert len(losses) == STEPS and all(math.isfinite(x) for x in losses), losses


def inject(value: float, name: str, model: nn.Module) -> Any:
    """Every gradient of parameter `name` becomes `value` (inf or nan) until the returned handle
    is removed (the model is shared by the module's tests)."""
    param = dict(model.named_parameters())[name]
    return param.register_hook(lambda grad: torch.full_like(grad, value))


@pytest.mark.parametrize("amp", ["none", "bf16"])
def test_a_non_finite_gradient_is_never_applied_and_named(models, tmp_path, amp) -> None:
    cfg = parse_config(args("retinanet_resnet18_fpn", 64, amp, 0, tmp_path))
    loader, num_classes = batches(cfg)
    model = models.get(cfg, num_classes)
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    handle = inject(math.inf, "head.regression_head.bbox_reg.weight", model)
    try:
        with pytest.raises(TrainerError) as raised:
            train_steps(cfg, model, one_image(loader), steps=1)
    finally:
        handle.remove()
    message = str(raised.value)
    precision = "fp32" if amp == "none" else "bf16"
    assert message.startswith(f"non-finite gradient at step 1 (epoch 0, {precision} on cpu, loss ")
    assert "1 of " in message and "parameters, in head.regression_head.bbox_reg.weight;" in message
    assert "the step was not applied to the weights" in message
    hint = "try --amp none (fp32)" if amp == "bf16" else "lower --lr"
    assert hint in message and "--amp bf16" not in message
    # No weight moved (the forward pass alone updated the BatchNorm statistics, as it does).
    assert all(torch.equal(params[n], p) for n, p in model.named_parameters())
    assert not (tmp_path / "metrics.jsonl").exists() or train_losses(tmp_path) == []


def test_a_non_finite_loss_is_never_applied_and_named(models, tmp_path) -> None:
    cfg = parse_config(args("retinanet_resnet18_fpn", 64, "none", 0, tmp_path))
    loader, num_classes = batches(cfg)
    model = models.get(cfg, num_classes)
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    logits = model.head.classification_head.cls_logits
    handle = logits.register_forward_hook(lambda _m, _a, out: out * math.nan)
    try:
        with pytest.raises(TrainerError, match=r"^non-finite loss nan at step 1 \(epoch 0, fp32 "
                           r"on cpu: classification=nan, bbox_regression=[0-9.]+\); the step was "
                           r"not applied to the weights; lower --lr"):  # fmt: skip
            train_steps(cfg, model, one_image(loader), steps=1)
    finally:
        handle.remove()
    assert all(torch.equal(params[n], p) for n, p in model.named_parameters())


@pytest.mark.slow
def test_fp16_keeps_the_scaler_skipping_an_inf_step(models, tmp_path) -> None:
    """Under fp16 an inf gradient is the GradScaler's to handle: the step is skipped, the scale
    lowered, and the run goes on (on the CPU here: the scaler's logic is the same). Slow: a CPU
    runs fp16 convolutions' backward on ATen's fallback, 20 times fp32's step at 64 px."""
    cfg = parse_config(args("retinanet_resnet18_fpn", 64, "fp16", 0, tmp_path))
    loader, num_classes = batches(cfg)
    model = models.get(cfg, num_classes)
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    handle = inject(math.inf, "head.regression_head.bbox_reg.weight", model)
    try:
        outcome, scaler = train_steps(cfg, model, one_image(loader), steps=1)
    finally:
        handle.remove()
    assert outcome is EpochOutcome.MAX_STEPS and scaler is not None
    assert scaler.get_scale() < 2.0**16  # lowered from its initial scale
    assert all(torch.equal(params[n], p) for n, p in model.named_parameters())
