"""What only a machine with an NVIDIA GPU can show: the trainer on the GPU, and the Flight
Recorder through NCCL (the path real pods take; gloo's recorder is the one the CPU tests read).
Skipped where torch sees no CUDA device."""

from __future__ import annotations

import datetime
import json
import pickle
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from trainer import __main__ as entry
from trainer import engine, torch_private
from trainer.config import parse_config
from trainer.distributed import DistContext
from trainer.loss import BatchedRetinaNetLoss, box_loss_type
from trainer.model import build_model
from trainer.state import StopRequest

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device visible")


def test_the_nccl_recorder_is_read_through_its_own_entry_point(tmp_path: Path) -> None:
    dist.init_process_group(
        "nccl", init_method=f"file://{tmp_path}/store", rank=0, world_size=1,
        timeout=datetime.timedelta(seconds=60), device_id=torch.device("cuda", 0),
    )  # fmt: skip
    try:
        tensor = torch.ones(1024, device="cuda")
        for _ in range(3):
            dist.all_reduce(tensor)
        torch.cuda.synchronize()
        dumper = torch_private.find_trace_dumper("nccl")
        assert dumper is not None, "no Flight Recorder entry point answers on NCCL"
        trace = pickle.loads(dumper.read())
        ops = [e.get("profiling_name", "") for e in trace["entries"]]
        assert sum(op.endswith("all_reduce") for op in ops) >= 3, (dumper.name, ops)
        assert trace["pg_status"], trace
    finally:
        dist.destroy_process_group()


def test_the_trainer_trains_on_the_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    code = entry.main([
        "--dataset", "synthetic", "--synthetic-train-images", "8", "--synthetic-val-images",
        "2", "--model", "retinanet_resnet18_fpn", "--min-size", "64", "--max-size", "64",
        "--workers", "0", "--batch-size", "4", "--max-steps", "3", "--eval-every", "1",
        "--log-every", "1", "--device", "cuda", "--output-dir", str(tmp_path),
    ])  # fmt: skip
    assert code == 0
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r["kind"] == "train"]
    assert [r["step"] for r in train] == [1, 2, 3]
    assert all(r["loss"] == r["loss"] for r in train)  # finite, not NaN


def test_a_training_step_never_makes_the_host_wait_for_the_gpu() -> None:
    """The model's forward (transform, anchors, batched loss), backward, the step's reduce and
    the fused optimizer step queue work without one synchronising call, so the host runs ahead
    of the device (torch's sync debug mode raises on any such call)."""
    cuda = torch.device("cuda", 0)
    cfg = parse_config([
        "--model", "retinanet_resnet18_fpn", "--min-size", "128", "--max-size", "160",
        "--batch-size", "4", "--amp", "bf16", "--device", "cuda",
    ])  # fmt: skip
    ctx = DistContext(rank=0, world_size=1, local_rank=0, device=cuda, backend=None)
    torch.manual_seed(0)
    model = build_model(cfg, 5).to(cuda).train()
    model.loss_fn = BatchedRetinaNetLoss(model, box_loss_type(cfg.model))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    gen = torch.Generator().manual_seed(0)
    images = [torch.randint(0, 255, (3, 120, 150), dtype=torch.uint8, generator=gen).pin_memory()
              for _ in range(4)]  # fmt: skip
    targets = [
        {"boxes": torch.tensor([[10.0, 12.0, 60.0, 70.0], [30.0, 5.0, 140.0, 100.0]]).pin_memory(),
         "labels": torch.tensor([1, 3]).pin_memory(), "skipped": []},
        {"boxes": torch.zeros(0, 4).pin_memory(), "labels": torch.zeros(0, dtype=torch.int64).pin_memory(),
         "skipped": []},
    ] * 2  # fmt: skip
    stop = StopRequest()
    results = []
    for step in range(4):  # the first steps allocate, autotune and cache; the last is checked
        torch.cuda.set_sync_debug_mode("error" if step == 3 else "default")
        try:
            inputs, device_targets = engine.BatchCopier(ctx.device).copy(images, targets)
            # The step's private parts, not train_one_epoch: the loop reads each step's loss to
            # the host on purpose (refuse_non_finite), so only the parts around it can be checked.
            losses = engine._forward_backward(
                ctx, cfg, model, None, inputs, device_targets, torch.bfloat16
            )
            results.append(engine._launch_reduce(ctx, losses, targets, stop, None))
            engine._optimizer_step(cfg, model, optimizer, scheduler, None)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    reduced, ready = results[-1]
    assert ready is not None
    ready.synchronize()
    assert torch.isfinite(reduced).all(), reduced


def _ddp_steps_on_nccl(store: Path, hook: str, steps: int = 4) -> list[int]:
    """Bytes the trainer's hook wrapper hands to NCCL per step: one rank, a small CNN on cuda:0
    in DDP (the reducer and the hook run as with more ranks; NCCL refuses two ranks on one GPU)."""
    from torch.nn.parallel import DistributedDataParallel

    from trainer.comm import GradientComm, parse_hook

    dist.init_process_group(
        "nccl", init_method=f"file://{store}", rank=0, world_size=1,
        timeout=datetime.timedelta(seconds=60), device_id=torch.device("cuda", 0),
    )  # fmt: skip
    try:
        torch.manual_seed(0)
        net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3), torch.nn.ReLU(), torch.nn.Conv2d(32, 32, 3),
            torch.nn.Flatten(), torch.nn.LazyLinear(10),
        ).cuda()  # fmt: skip
        net(torch.zeros(1, 3, 16, 16, device="cuda"))  # materialise the lazy layer
        ddp = DistributedDataParallel(net, device_ids=[0], gradient_as_bucket_view=True)
        comm = GradientComm(parse_hook(hook), start_iter=2)
        lines: list[str] = []
        assert comm.install(ddp, lines.append) == parse_hook(hook).label, lines
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
        sent = []
        for _ in range(steps):
            ddp(torch.rand(4, 3, 16, 16, device="cuda")).sum().backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            sent.append(comm.take_bytes())
        return sent
    finally:
        dist.destroy_process_group()


def test_comm_hooks_on_nccl_send_what_they_promise(tmp_path: Path) -> None:
    full = _ddp_steps_on_nccl(tmp_path / "none", "none")
    gradient_bytes = 4 * (3 * 32 * 9 + 32 + 32 * 32 * 9 + 32 + 32 * 12 * 12 * 10 + 10)
    assert full == [gradient_bytes] * 4, full
    assert _ddp_steps_on_nccl(tmp_path / "bf16", "bf16") == [gradient_bytes // 2] * 4
    assert _ddp_steps_on_nccl(tmp_path / "fp16", "fp16") == [gradient_bytes // 2] * 4
    powersgd = _ddp_steps_on_nccl(tmp_path / "powersgd", "powersgd:1")
    # plain all-reduce through the warmup (steps 1-2), then rank-1 factors: far fewer bytes
    assert powersgd[:2] == [gradient_bytes] * 2, powersgd
    assert 0 < powersgd[3] < gradient_bytes // 10, powersgd


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="NCCL needs a GPU per rank: 2 GPUs")
def test_two_nccl_ranks_train_with_the_bf16_hook(tmp_path: Path) -> None:
    from test_ddp import finish, records, torchrun

    proc = torchrun([
        "--dataset", "synthetic", "--synthetic-train-images", "16", "--model",
        "retinanet_resnet18_fpn", "--min-size", "64", "--max-size", "64", "--workers", "0",
        "--batch-size", "2", "--max-steps", "4", "--eval-every", "0", "--log-every", "1",
        "--device", "cuda", "--ddp-comm-hook", "bf16", "--output-dir", str(tmp_path),
    ])  # fmt: skip
    out = finish(proc)
    assert proc.returncode == 0, out
    assert "DDP: --ddp-comm-hook bf16 (" in out, out
    train = [r for r in records(tmp_path / "metrics.jsonl") if r["kind"] == "train"]
    assert [r["step"] for r in train] == [1, 2, 3, 4]
    assert len({r["allreduce_bytes"] for r in train}) == 1 and train[0]["allreduce_bytes"] > 0
