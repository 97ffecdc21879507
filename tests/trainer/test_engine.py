"""Schedule, learning-rate scaling, and the optional training paths run end to end in one process."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from trainer import __main__ as entry
from trainer.config import build_parser, parse_config
from trainer.engine import HOST_PARTS
from trainer.state import WarmupCosine

pytestmark = pytest.mark.slow  # trains or runs the real model


def test_warmup_then_cosine():
    schedule = WarmupCosine(warmup_steps=10, warmup_factor=0.001, total_steps=110, cosine=True)
    assert schedule(0) == pytest.approx(0.001)
    assert schedule(5) == pytest.approx(0.001 * 0.5 + 0.5)
    assert schedule(10) == pytest.approx(1.0)
    assert schedule(60) == pytest.approx(0.5)
    assert schedule(110) == pytest.approx(0.0, abs=1e-12)
    flat = WarmupCosine(warmup_steps=0, warmup_factor=0.001, total_steps=50, cosine=False)
    assert flat(0) == flat(49) == 1.0


def test_learning_rate_scales_with_the_global_batch_and_recipes_differ():
    sgd = parse_config([])
    assert sgd.resolved_lr(16) == pytest.approx(0.02)
    assert sgd.resolved_lr(64) == pytest.approx(0.08)
    assert sgd.resolved_weight_decay() == (1e-4, 1e-4)
    adamw = parse_config(["--optimizer", "adamw"])
    assert adamw.resolved_lr(8) == pytest.approx(5e-5)
    assert adamw.resolved_weight_decay() == (0.05, 0.0)
    custom = parse_config(["--lr", "0.1", "--lr-base-batch", "8"])
    assert custom.resolved_lr(16) == pytest.approx(0.2)


def test_accumulation_clipping_channels_last_adamw(tmp_path, monkeypatch, capsys):
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    code = entry.main([
        "--dataset", "synthetic", "--synthetic-train-images", "16", "--model",
        "retinanet_resnet18_fpn", "--min-size", "64", "--max-size", "64", "--workers", "0",
        "--batch-size", "4", "--grad-accum", "2", "--clip-grad", "1.0", "--channels-last",
        "--optimizer", "adamw", "--max-steps", "2", "--eval-every", "0", "--log-every", "1",
        "--amp", "none", "--device", "cpu",
        "--output-dir", str(tmp_path),
    ])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    train = [json.loads(x) for x in out.splitlines() if x.startswith('{"kind": "train"')]
    assert [r["step"] for r in train] == [1, 2]
    assert all(math.isfinite(r["loss"]) for r in train)
    assert "adamw lr 2.5e-05 (= 0.0001 x global batch 4 / 16)" in out
    # The model's TFLOP/s: its counted FLOPs per image times its images/s, both micro-batches
    # of each step counted (the batches pad to the counted 64x64); no MFU without a peak.
    flops = json.loads((tmp_path / "run.json").read_text())["flops"]
    assert flops["counted_shape"] == [64, 64] and flops["peak_tflops"] is None
    for r in train:
        assert "mfu" not in r and "mfu" not in r["ranks"]
        expected = flops["per_image"] * r["ranks"]["img_s"][0] / 1e12
        assert r["tflops"] == pytest.approx(expected, rel=0.02)
    assert_metrics_contract(out.splitlines(), total_steps=2, epochs=parse_config([]).epochs)
    # The path taken, asked and why, in run.json and the log; the host's timeline in records.
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["channels_last"] == {"asked": "on", "chosen": "on", "why": "--channels-last on"}
    assert run["amp"] == {"asked": "none", "chosen": "none", "why": "--amp none"}
    assert (run["compile"]["asked"], run["compile"]["chosen"]) == ("auto", "off")
    assert f"compile off ({run['compile']['why']})" in out
    assert run["compile"]["why"].startswith("auto: too short to repay it: 8 images at 64x64 ")
    for record in train:
        timeline = record["host_timeline"]
        assert {"data", "copy", "forward_backward", "optimizer", "read"} <= set(timeline)
        assert set(timeline) <= set(HOST_PARTS) and min(timeline.values()) >= 0.0
        assert timeline["data"] == record["data_time"]


def assert_metrics_contract(lines: list[str], total_steps: int, epochs: int) -> None:
    """The metrics contract: runai-tui's readers (the progress parser, the diagnosis) understand
    the lines a real run printed, so the trainer and the TUI can never drift apart."""
    from runai_tui.knowledge.diagnose import PodDiagnoser, combine
    from runai_tui.knowledge.records.progress import TrainingProgress

    progress = TrainingProgress()
    parsed = [line for line in lines if progress.feed(line)]
    records = [json.loads(line) for line in parsed]
    last_train = [r for r in records if r["kind"] == "train"][-1]
    assert (progress.step, progress.total_steps, progress.epochs) == (
        last_train["step"],
        total_steps,
        epochs,
    )
    assert progress.loss == last_train["loss"] and progress.finished == "done"
    assert progress.summary().startswith(f"step {last_train['step']}/{total_steps} · epoch ")
    assert {"data_time", "step_time", "time"} <= set(last_train)  # diagnosis reads these
    pod = PodDiagnoser("rank0").feed_all(lines)
    assert pod.finished and combine([pod], running=True).findings == []  # a clean run


def test_readme_documents_every_flag():
    readme = (Path(__file__).resolve().parents[2] / "trainer" / "README.md").read_text()
    flags = [
        option
        for action in build_parser()._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help" and not option.startswith("--no-")
    ]
    assert len(flags) > 50
    assert [flag for flag in flags if f"`{flag}`" not in readme] == []


def test_synthetic_jpeg_files_are_written_once_and_decoded_at_reduced_scale(tmp_path):
    import torch

    from trainer.data import build_datasets
    from trainer.distributed import DistContext

    ctx = DistContext(0, 1, 0, torch.device("cpu"), None)
    args = ["--dataset", "synthetic", "--synthetic-jpeg-size", "512", "--min-size", "64",
            "--max-size", "128", "--synthetic-train-images", "4", "--synthetic-val-images", "2",
            "--output-dir", str(tmp_path)]  # fmt: skip
    train, val = build_datasets(parse_config(args), ctx, print)
    files = sorted(tmp_path.glob("cache/synthetic-*/*.jpg"))
    assert len(files) == 6
    stamps = [f.stat().st_mtime_ns for f in files]
    build_datasets(parse_config(args), ctx, print)
    assert [f.stat().st_mtime_ns for f in files] == stamps  # reused, not rewritten
    image, target = train[(0, 0)]
    height, width = train.get_height_and_width(0)
    assert min(height, width) >= 460  # the file is photo-sized...
    assert 64 <= min(image.shape[-2:]) < 128  # ...and decoded at 1/4 DCT scale for 64-px training
    assert target["orig_size"] == (height, width)
    assert val is not None and len(val) == 2
    full = build_datasets(parse_config([*args, "--no-fast-decode"]), ctx, print)[0]
    assert full[(0, 0)][0].shape[-2:] == (height, width)


def test_resume_follows_the_command_lines_schedule(tmp_path, monkeypatch, capsys):
    """Resuming with more steps stretches the cosine; the checkpoint's old length does not win."""
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    args = ["--dataset", "synthetic", "--synthetic-train-images", "16", "--model",
            "retinanet_resnet18_fpn", "--min-size", "64", "--max-size", "64", "--workers", "0",
            "--eval-every", "0", "--log-every", "1", "--warmup-steps", "0", "--lr", "0.16",
            "--amp", "none", "--device", "cpu",
            "--output-dir", str(tmp_path)]  # fmt: skip
    assert entry.main([*args, "--max-steps", "2"]) == 0
    assert entry.main([*args, "--max-steps", "4"]) == 0
    out = capsys.readouterr().out
    assert "resumed from" in out and "step 2," in out
    train = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    lrs = {r["step"]: r["lr"] for r in train if r["kind"] == "train"}
    base = 0.16 * 2 / 16
    assert lrs[1] == pytest.approx(base)  # first run: cosine over 2 steps
    assert lrs[2] == pytest.approx(base * 0.5)
    assert lrs[3] == pytest.approx(base * 0.5 * (1 + math.cos(math.pi * 2 / 4)))  # over 4 now
    assert lrs[4] == pytest.approx(base * 0.5 * (1 + math.cos(math.pi * 3 / 4)))


def test_a_diverging_run_is_diagnosed_as_nan_loss(tmp_path, monkeypatch, capsys):
    """The trainer's real non-finite-loss report is what runai-tui's diagnosis finds."""
    from runai_tui.knowledge.diagnose import PodDiagnoser, combine

    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    code = entry.main([
        "--dataset", "synthetic", "--synthetic-train-images", "8", "--model",
        "retinanet_resnet18_fpn", "--min-size", "64", "--max-size", "64", "--workers", "0",
        "--batch-size", "2", "--max-steps", "4", "--eval-every", "0", "--log-every", "1",
        "--warmup-steps", "0", "--lr", "1e20", "--output-dir", str(tmp_path),
        "--amp", "none", "--device", "cpu",
    ])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1, captured.err
    lines = (captured.out + captured.err).splitlines()
    report = combine([PodDiagnoser("master").feed_all(lines)])
    assert report.codes() == ["nan-loss"]
    assert report.findings[0].evidence.startswith("trainer: error: non-finite loss nan at step")


def test_the_runs_state_imports_none_of_the_steps_that_take_it() -> None:
    """trainer/state.py is what the steps hand each other: the loop (engine), the resume and the
    run import it, never the other way round."""
    import ast

    tree = ast.parse((Path(__file__).parents[2] / "trainer" / "state.py").read_text())
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "trainer.metrics" in imported  # the reading works
    assert not imported & {"trainer.engine", "trainer.train", "trainer.resume"}


def test_the_stall_hook_is_read_once_at_the_start(monkeypatch, capsys) -> None:
    from trainer import test_hooks

    monkeypatch.delenv(test_hooks.STALL_ENV, raising=False)
    assert test_hooks.stall() is None
    monkeypatch.setenv(test_hooks.STALL_ENV, "1:3:0.01")
    hook = test_hooks.stall()
    assert hook == test_hooks.Stall(rank=1, step=3, seconds=0.01)
    monkeypatch.setenv(test_hooks.STALL_ENV, "0:0:60")  # too late: the run read it already
    assert hook is not None
    hook.before_step(0, 0)
    hook.before_step(1, 2)
    assert capsys.readouterr().out == ""
    hook.before_step(1, 3)
    assert "[rank 1] TEST HOOK: stalling 0.01 s before step 3" in capsys.readouterr().out
