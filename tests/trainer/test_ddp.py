"""Real DDP runs: 2 processes, gloo, tiny images, through torchrun and through the pod entry script.

One uninterrupted run is the reference; a second run of the same configuration is stopped with
SIGTERM mid-run (it saves where it is) and resumed, and must continue from that save with the
same samples and the same losses as the reference. A third, with the bf16 communication hook,
hands half the bytes to the all-reduce and stays within a stated tolerance of the reference.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from oid_fixtures import write_oid_eval_files
from trainer_fixtures import write_coco, write_openimages

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "train-retinanet-ddp.sh"
TINY = [
    "--dataset", "synthetic", "--synthetic-train-images", "32", "--synthetic-val-images", "4",
    "--model", "retinanet_resnet18_fpn", "--min-size", "64", "--max-size", "64",
    "--batch-size", "2", "--workers", "0", "--log-every", "1", "--lr", "0.01",
    "--warmup-steps", "2", "--log-samples", "--amp", "none",
    "--device", "cpu",  # two ranks over gloo: on a one-GPU machine both would take that GPU
]  # fmt: skip
# The ResNet-18 body frozen: the samples, the checkpoints and the resume are the subject, not the
# model, and a frozen body halves a step's CPU (less backward, 32 MB of gradient to all-reduce
# for 77 MB): 0.29 CPU-s a step for both ranks against 0.67.
RESUME_RUN = [
    *TINY, "--max-steps", "12", "--epochs", "3", "--checkpoint-every", "4", "--eval-every", "1",
    "--score-thresh", "0.0", "--detections-per-image", "50",  # an untrained model still detects
    "--trainable-backbone-layers", "0",
]  # fmt: skip

# The bf16 hook against the reference's fp32 gradients, the same 12 steps from the same seed:
# each step's loss within 1% of fp32's, and the mean relative difference under 0.2% (measured over
# 50 steps at 64 px: at most 0.05%, 0.01% on average). A faulty hook (a wrong scale, a lost bucket,
# ranks out of step) moves the loss from the second step on, the first after an all-reduce.
HOOK_STEP_TOLERANCE = 0.01
HOOK_MEAN_TOLERANCE = 0.002

pytestmark = pytest.mark.slow


def base_env() -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PET_", "RUNAI_", "TORCHELASTIC"))
    }
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    env.update({"OMP_NUM_THREADS": "1", "PATH": f"{Path(sys.executable).parent}:{env['PATH']}"})
    return env


def torchrun(args: list[str], **popen) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "trainer", *args]  # fmt: skip
    env = popen.pop("env", None) or base_env()
    return subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True, **popen,
    )  # fmt: skip


def script_nodes(args: list[str]) -> list[subprocess.Popen]:
    """Two 'pods' on this machine, as the local cluster runs them: 2 nodes x 1 CPU process."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pods = []
    for rank in (0, 1):
        env = base_env() | {
            "PET_NNODES": "2", "PET_NODE_RANK": str(rank), "RANK": str(rank), "WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RUNAI_NUM_OF_GPUS": "0",
        }  # fmt: skip
        pods.append(
            subprocess.Popen(
                [str(SCRIPT), *args],
                cwd=REPO,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )  # fmt: skip
        )
    return pods


def finish(proc: subprocess.Popen, timeout: float = 240) -> str:
    out, _ = proc.communicate(timeout=timeout)
    return out


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def stdout_records(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def samples(out_dir: Path) -> dict[tuple[int, int], dict]:
    """(rank, step) -> record; a step run twice (before a kill and after resume) keeps the last."""
    found = {}
    for path in sorted((out_dir / "samples").glob("rank-*.jsonl")):
        for rec in records(path):
            found[(rec["rank"], rec["step"])] = rec
    return found


def children_of(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry.name))
    return kids


def wait_gone(pids: list[int], limit: float = 60) -> list[int]:
    deadline = time.monotonic() + limit
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if Path(f"/proc/{p}").exists() and "Z" not in _state(p)]
        time.sleep(0.1)
    return alive


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run every resume is compared with."""
    out_dir = tmp_path_factory.mktemp("reference")
    proc = torchrun([*RESUME_RUN, "--output-dir", str(out_dir)])
    out = finish(proc)
    assert proc.returncode == 0, out
    return out_dir, out


def test_training_reports_metrics_checkpoints_and_distinct_samples(reference):
    out_dir, out = reference
    metrics = records(out_dir / "metrics.jsonl")
    train = [r for r in metrics if r["kind"] == "train"]
    assert [r["step"] for r in train] == list(range(1, 13))
    for rec in train:
        assert {"step", "epoch", "loss", "lr", "images_per_sec", "data_time", "step_time",
                "loss_classification", "loss_bbox_regression", "peak_memory_mb"} <= set(rec)  # fmt: skip
        assert math.isfinite(rec["loss"]) and rec["images_per_sec"] > 0
    assert train[-1]["epoch"] >= 1  # 12 steps cross into a second epoch
    evals = [r for r in metrics if r["kind"] == "eval"]
    assert len(evals) >= 2 and all(
        0.0 <= r["map"] <= 1.0 and 0.0 <= r["map50"] <= 1.0 for r in evals
    )
    assert metrics[-1]["kind"] == "done"
    # Rank 0 prints the same records on stdout, one JSON object a line; rank 1 prints none.
    assert stdout_records(out) == metrics
    run = json.loads((out_dir / "run.json").read_text())
    assert run["world_size"] == 2 and run["backend"] == "gloo"
    assert [r["rank"] for r in run["ranks"]] == [0, 1]
    assert run["config"]["model"] == "retinanet_resnet18_fpn"
    ckpts = sorted((out_dir / "checkpoints").glob("step-*.pt"))
    assert [p.name for p in ckpts] == [
        "step-000000004.pt",
        "step-000000008.pt",
        "step-000000012.pt",
    ]
    ckpt = torch.load(ckpts[-1], map_location="cpu", weights_only=True)
    assert ckpt["progress"]["global_step"] == 12 and len(ckpt["rng"]) == 2
    assert ckpt["config"]["max_steps"] == 12 and ckpt["class_names"] == [
        "class1",
        "class2",
        "class3",
    ]
    # No sample reaches two ranks within an epoch; each epoch has its own order.
    seen = samples(out_dir)
    by_epoch: dict[int, list[int]] = {}
    for rec in seen.values():
        by_epoch.setdefault(rec["epoch"], []).extend(rec["indices"])
    for indices in by_epoch.values():
        assert len(indices) == len(set(indices))
    first_steps = [seen[(0, s)]["indices"] for s in (1, 2)]
    epoch1_start = min(s for (r, s), rec in seen.items() if r == 0 and rec["epoch"] == 1)
    assert seen[(0, epoch1_start)]["indices"] not in first_steps


def test_a_stopped_run_saves_on_sigterm_and_resumes_with_the_same_samples(reference, tmp_path):
    # Both pods get SIGTERM mid-run, as on a preemption: here to each pod's process group, as the
    # local cluster and a group-signalling init send it (the entry script passes it on only as
    # PID 1, the kubelet's case, tests/trainer/test_entry_script.py); torchrun forwards it to the
    # trainers: they save at the step they reached and exit non-zero. Started again, the run
    # resumes from that save and takes the samples and losses of the uninterrupted run. A
    # SIGKILL with no save (resume from the last periodic checkpoint, the steps after it trained
    # again) is tests/local/test_recovery.py's, on the local cluster.
    ref_dir, _ = reference
    out_dir = tmp_path / "stopped"
    # No periodic checkpoint: whichever step the stop lands on, its save is the one resumed from
    # (a save at a periodic checkpoint's step would be that checkpoint's).
    args = [*RESUME_RUN, "--checkpoint-every", "1000", "--output-dir", str(out_dir)]
    pods = script_nodes(args)
    seen = []
    for line in pods[0].stdout:  # the master pod's log
        seen.append(line)
        if line.startswith('{"kind": "train", "step": 5,'):  # mid-run, past the first epoch's half
            break
    else:
        pytest.fail("the run ended before step 5:\n" + "".join(seen) + finish(pods[0]))
    workers = [kid for pod in pods for kid in children_of(pod.pid)]
    assert len(workers) >= 2
    for pod in pods:
        os.killpg(pod.pid, signal.SIGTERM)
    outs = ["".join(seen) + finish(pods[0], timeout=120), finish(pods[1], timeout=120)]
    assert all(pod.returncode != 0 for pod in pods), outs[0]
    assert wait_gone(workers) == [], "trainer processes outlived their launcher"
    (stopped,) = [r for r in stdout_records(outs[0]) if r["kind"] == "stopped"]
    step = stopped["step"]
    assert 5 <= step < 12, outs[0]  # the step it was on, before the run's end
    assert f"received SIGTERM: saving at step {step}" in outs[0]
    ckpt = torch.load(out_dir / "checkpoints" / f"step-{step:09d}.pt", map_location="cpu",
                      weights_only=True)  # fmt: skip
    assert ckpt["reason"] == "preempted" and ckpt["progress"]["global_step"] == step

    resumed = script_nodes(args)
    outs = [finish(pod) for pod in resumed]
    assert [pod.returncode for pod in resumed] == [0, 0], outs[0] + outs[1]
    assert f"resumed from {out_dir}/checkpoints/step-{step:09d}.pt: step {step}" in outs[0]
    train_after = [r for r in stdout_records(outs[0]) if r["kind"] == "train"]
    assert train_after[0]["step"] == step + 1  # not step 1

    # The same samples at the same steps as the uninterrupted run, and the same losses.
    assert samples(out_dir) == samples(ref_dir)
    ref_train = {r["step"]: r for r in records(ref_dir / "metrics.jsonl") if r["kind"] == "train"}
    got_train = [r for r in records(out_dir / "metrics.jsonl") if r["kind"] == "train"]
    assert [r["step"] for r in got_train] == list(range(1, 13))  # none doubled, none skipped
    for rec in got_train:
        assert rec["loss"] == pytest.approx(ref_train[rec["step"]]["loss"], rel=1e-4, abs=1e-5)
        assert rec["lr"] == pytest.approx(ref_train[rec["step"]]["lr"], rel=1e-9)


@pytest.mark.parametrize("dataset", ["openimages", "coco"])
def test_file_formats_train_and_evaluate_under_ddp(tmp_path, dataset):
    root = tmp_path / dataset
    if dataset == "openimages":
        write_openimages(root, train_images=12, val_images=4)
        write_oid_eval_files(root)  # and score the Open Images metric too, gathered to rank 0
    else:
        write_coco(root, train_images=12, val_images=4)
    out_dir = tmp_path / "out"
    proc = torchrun([
        "--dataset", dataset, "--data-root", str(root), "--output-dir", str(out_dir),
        "--device", "cpu",
        "--model", "retinanet_resnet18_fpn", "--min-size", "64", "--max-size", "96",
        "--batch-size", "2", "--workers", "1", "--max-steps", "3", "--log-every", "1",
        "--eval-every", "1", "--checkpoint-every", "0", "--amp", "none",
        # COCO also runs gradient accumulation: two micro-batches of one, no_sync on the first.
        *(["--grad-accum", "2"] if dataset == "coco" else ["--eval-metric", "oid"]),
    ])  # fmt: skip
    out = finish(proc)
    assert proc.returncode == 0, out
    metrics = records(out_dir / "metrics.jsonl")
    losses = [r["loss"] for r in metrics if r["kind"] == "train"]
    assert len(losses) == 3 and all(math.isfinite(x) for x in losses)
    evals = [r for r in metrics if r["kind"] == "eval"]
    assert len(evals) == 1 and evals[0]["images"] == 4  # the listed-but-missing image is skipped
    if dataset == "openimages":
        assert evals[0]["oid_classes"] == 3 and 0.0 <= evals[0]["oid_map"] <= 1.0
    expected_log = "skipped missing images 1" if dataset == "openimages" else "'missing_images': 1"
    assert expected_log in out
    assert (out_dir / "checkpoints" / "step-000000003.pt").exists()


def test_distributed_evaluation_matches_one_process_on_the_saved_model(reference):
    """Two ranks scoring halves of the validation split give what one process gives on the whole."""
    from trainer.config import parse_config
    from trainer.data import build_datasets
    from trainer.distributed import DistContext
    from trainer.evaluate import evaluate
    from trainer.model import build_model

    out_dir, _ = reference
    final = [r for r in records(out_dir / "metrics.jsonl") if r["kind"] == "eval"][-1]
    cfg = parse_config([*RESUME_RUN, "--output-dir", str(out_dir)])
    ctx = DistContext(0, 1, 0, torch.device("cpu"), None)
    train_set, val_set = build_datasets(cfg, ctx, lambda _msg: None)
    model = build_model(cfg, train_set.num_classes)
    ckpt = torch.load(out_dir / "checkpoints" / "step-000000012.pt", weights_only=True)
    model.load_state_dict(ckpt["model"])
    result = evaluate(ctx, model, val_set, cfg.batch_size, workers=0)
    assert final["detections"] > 0
    assert result["detections"] == final["detections"] and result["images"] == final["images"]
    assert result["map"] == pytest.approx(final["map"], abs=1e-6)
    assert result["map50"] == pytest.approx(final["map50"], abs=1e-6)


def test_bf16_hook_halves_the_bytes_and_tracks_the_fp32_reference(reference, tmp_path):
    ref_dir, _ = reference
    out_dir = tmp_path / "bf16"
    proc = torchrun([*RESUME_RUN, "--ddp-comm-hook", "bf16", "--output-dir", str(out_dir)])
    out = finish(proc)
    assert proc.returncode == 0, out
    assert "DDP: --ddp-comm-hook bf16 (" in out
    fp32 = [r for r in records(ref_dir / "metrics.jsonl") if r["kind"] == "train"]
    bf16 = [r for r in records(out_dir / "metrics.jsonl") if r["kind"] == "train"]
    assert [r["step"] for r in fp32] == [r["step"] for r in bf16] == list(range(1, 13))
    for a, b in zip(fp32, bf16, strict=True):
        assert a["allreduce_bytes"] > 30e6  # the whole fp32 gradient, every step
        assert b["allreduce_bytes"] * 2 == a["allreduce_bytes"]
        # Per-rank figures stay in the records under the hook.
        assert len(b["ranks"]["step_time"]) == 2 and len(b["ranks"]["forward_time"]) == 2
    assert fp32[0]["loss"] == bf16[0]["loss"]  # the first forward pass precedes any all-reduce
    diffs = [abs(a["loss"] - b["loss"]) / a["loss"] for a, b in zip(fp32, bf16, strict=True)]
    assert max(diffs) <= HOOK_STEP_TOLERANCE, diffs
    assert sum(diffs) / len(diffs) <= HOOK_MEAN_TOLERANCE, diffs
    assert any(d > 0 for d in diffs)  # the hook really ran: bf16 rounding shows somewhere
