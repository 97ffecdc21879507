"""PowerSGD on a real 2-rank gloo run (torchrun, 2 CPU processes, tiny images).

The bytes each rank hands to the all-reduce are counted by the trainer's wrapper around the hook
and reported per step (`allreduce_bytes` in every train record). PowerSGD keeps per-rank state
(error feedback, warm-start matrices): a run resumed from its checkpoint takes the same steps as
the uninterrupted run. The bf16 hook is compared with the fp32 reference run of
tests/trainer/test_ddp.py, in that module, so that one run serves both.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from test_ddp import base_env, finish, records, torchrun

pytestmark = pytest.mark.slow

# Small and fast: 32 px images, frozen ResNet-18 body (the FPN and heads train: 8M parameters,
# 32 MB of fp32 gradient per step), one metrics record per step.
WIRE = [
    "--dataset", "synthetic", "--synthetic-train-images", "32", "--model", "retinanet_resnet18_fpn",
    "--trainable-backbone-layers", "0", "--min-size", "32", "--max-size", "32",
    "--batch-size", "2", "--workers", "0", "--log-every", "1", "--lr", "0.01",
    "--warmup-steps", "2", "--eval-every", "0", "--device", "cpu", "--amp", "none",
]  # fmt: skip


def train_records(out_dir: Path) -> list[dict]:
    return [r for r in records(out_dir / "metrics.jsonl") if r["kind"] == "train"]


def run(out_dir: Path, *args: str) -> str:
    # CPU runs hide any GPU: PyTorch's PowerSGD hook synchronises a visible GPU and fails on
    # CPU gradients (the trainer falls back to none there: the test below).
    env = {**base_env(), "CUDA_VISIBLE_DEVICES": ""}
    proc = torchrun([*WIRE, "--output-dir", str(out_dir), *args], env=env)
    out = finish(proc)
    assert proc.returncode == 0, out
    return out


def test_powersgd_state_is_checkpointed_and_a_resume_takes_the_same_steps(tmp_path):
    reference = tmp_path / "reference"
    args = ["--max-steps", "8", "--epochs", "2", "--checkpoint-every", "4",
            "--ddp-comm-hook", "powersgd:1"]  # fmt: skip
    out = run(reference, *args)
    assert "--ddp-comm-hook powersgd:1 on gloo: one" in out  # gloo gets a single bucket
    ref = train_records(reference)
    assert [r["step"] for r in ref] == list(range(1, 9))
    plain = ref[0]["allreduce_bytes"]
    # Plain fp32 all-reduce through the warmup (2 steps), then PowerSGD's low-rank factors.
    assert ref[1]["allreduce_bytes"] == plain > 30e6
    assert all(r["allreduce_bytes"] * 20 < plain for r in ref[2:])
    assert all(len(r["ranks"]["forward_time"]) == 2 for r in ref)  # per-rank figures kept

    ckpt_path = reference / "checkpoints" / "step-000000004.pt"
    ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    states = ckpt["comm_hook"]
    assert len(states) == 2 and all(s["hook"] == "powersgd:1" and s["iter"] == 4 for s in states)
    for state in states:
        pieces = state["parameters"]
        assert any("error" in p for p in pieces.values()) and any("q" in p for p in pieces.values())
    # Error feedback is each rank's own residual: the two ranks' differ.
    name = next(n for n, p in states[0]["parameters"].items() if "error" in p)
    assert not torch.equal(
        states[0]["parameters"][name]["error"], states[1]["parameters"][name]["error"]
    )

    resumed = tmp_path / "resumed"
    (resumed / "checkpoints").mkdir(parents=True)
    shutil.copy(ckpt_path, resumed / "checkpoints")
    out = run(resumed, *args)
    assert "--ddp-comm-hook powersgd:1: state restored at its step 4" in out
    got = train_records(resumed)
    assert [r["step"] for r in got] == list(range(5, 9))
    for r in got:  # the same steps, to the last printed digit
        want = ref[r["step"] - 1]
        assert r["loss"] == pytest.approx(want["loss"], abs=2e-6), r["step"]
        assert r["allreduce_bytes"] == want["allreduce_bytes"]


def test_powersgd_on_cpu_gradients_falls_back_to_none_where_a_gpu_is_visible(tmp_path, monkeypatch):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from trainer.comm import GradientComm, parse_hook

    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    try:
        ddp = DistributedDataParallel(torch.nn.Linear(8, 4))
        lines: list[str] = []
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a GPU host, CPU run
        assert GradientComm(parse_hook("powersgd:2")).install(ddp, lines.append) == "none"
        assert lines == [
            "--ddp-comm-hook powersgd:2: PyTorch's PowerSGD hook synchronises the GPU whenever "
            "one is visible and fails on cpu gradients; falling back to none (fp32). Train on "
            "the GPU, or hide it (CUDA_VISIBLE_DEVICES=)"
        ]
        monkeypatch.undo()
        if not torch.cuda.is_available():  # no GPU: PowerSGD runs on CPU gradients as asked
            fresh = DistributedDataParallel(torch.nn.Linear(8, 4))
            assert GradientComm(parse_hook("powersgd:2")).install(fresh, lines.append) == (
                "powersgd:2"
            )
    finally:
        dist.destroy_process_group()
