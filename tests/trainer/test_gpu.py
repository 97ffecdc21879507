"""What only a machine with an NVIDIA GPU can show: the trainer on the GPU, and the Flight
Recorder through NCCL (the path real pods take; gloo's recorder is the one the CPU tests read).
Skipped where torch sees no CUDA device."""

from __future__ import annotations

import datetime
import json
import pickle
import signal
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from trainer import __main__ as entry
from trainer import torch_private

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
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        code = entry.main([
            "--dataset", "synthetic", "--synthetic-train-images", "8", "--synthetic-val-images",
            "2", "--model", "retinanet_resnet18_fpn", "--min-size", "64", "--max-size", "64",
            "--workers", "0", "--batch-size", "4", "--max-steps", "3", "--eval-every", "1",
            "--log-every", "1", "--device", "cuda", "--output-dir", str(tmp_path),
        ])  # fmt: skip
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert code == 0
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r["kind"] == "train"]
    assert [r["step"] for r in train] == [1, 2, 3]
    assert all(r["loss"] == r["loss"] for r in train)  # finite, not NaN
