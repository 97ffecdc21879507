"""Checkpoint files: plain data for weights_only loads, atomic, rotated, chosen newest-loadable."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from trainer import checkpoint, run_lock
from trainer.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def state(step: int) -> dict:
    return {
        "model": {"w": torch.full((2,), float(step))},
        "progress": {"epoch": 0, "step_in_epoch": step, "global_step": step},
        "config": {"model": "retinanet_resnet18_fpn", "lr": None, "amp": "none"},
        "class_names": ["a", "b"],
        "rng": [checkpoint.rng_state()],
    }


def test_rotation_keeps_the_newest_and_loads_weights_only(tmp_path):
    for step in (5, 10, 15, 20):
        checkpoint.save_checkpoint(str(tmp_path), step, state(step), keep=2)
    found = checkpoint.list_checkpoints(str(tmp_path))
    assert [s for s, _ in found] == [20, 15]
    loaded = torch.load(found[0][1], map_location="cpu", weights_only=True)
    assert loaded["progress"]["global_step"] == 20 and loaded["format"] == checkpoint.FORMAT_VERSION
    assert not [p for p in (tmp_path / "checkpoints").iterdir() if p.name.endswith(".tmp")]


def test_resume_auto_skips_a_corrupt_newest_file(tmp_path):
    checkpoint.save_checkpoint(str(tmp_path), 7, state(7), keep=3)
    (tmp_path / "checkpoints" / "step-000000009.pt").write_bytes(b"not a checkpoint")
    warnings = []
    path, ckpt = checkpoint.find_resume_checkpoint(str(tmp_path), "auto", warn=warnings.append)
    assert path.endswith("step-000000007.pt") and ckpt["progress"]["global_step"] == 7
    assert "step-000000009.pt" in warnings[0]
    assert checkpoint.find_resume_checkpoint(str(tmp_path), "none") is None
    assert checkpoint.find_resume_checkpoint(str(tmp_path / "empty"), "auto") is None


def test_compatibility_checks_name_the_difference(tmp_path):
    ckpt = {"config": {"model": "retinanet_resnet18_fpn"}, "class_names": ["a", "b"]}
    checkpoint.check_compatible(ckpt, "c.pt", "retinanet_resnet18_fpn", ["a", "b"])
    with pytest.raises(ConfigError, match="checkpoint is for --model retinanet_resnet18_fpn"):
        checkpoint.check_compatible(ckpt, "c.pt", "retinanet_resnet50_fpn_v2", ["a", "b"])
    with pytest.raises(ConfigError, match="checkpoint has 2 classes, the dataset has 3"):
        checkpoint.check_compatible(ckpt, "c.pt", "retinanet_resnet18_fpn", ["a", "b", "c"])
    with pytest.raises(ConfigError, match="class 2 is 'b' in the checkpoint but 'x'"):
        checkpoint.check_compatible(ckpt, "c.pt", "retinanet_resnet18_fpn", ["a", "x"])


def test_rng_state_round_trips_through_a_file(tmp_path):
    saved = checkpoint.rng_state()
    path = tmp_path / "rng.pt"
    checkpoint.atomic_torch_save({"rng": saved}, str(path))
    expected = (torch.rand(3), np.random.rand(3), random.random())
    checkpoint.set_rng_state(torch.load(path, weights_only=True)["rng"])
    again = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(expected[0], again[0])
    assert np.array_equal(expected[1], again[1]) and expected[2] == again[2]


def test_rotation_leaves_another_writers_temp_file_and_later_steps(tmp_path):
    """Two runs on one dir once lost a checkpoint: one's clean-up took the other's
    `.step-….pt.*.tmp` before its rename. The rotation deletes only complete checkpoints of
    steps this run has passed."""
    ckpts = tmp_path / "checkpoints"
    for step in (5, 10):
        checkpoint.save_checkpoint(str(tmp_path), step, state(step), keep=1)
    other_tmp = ckpts / ".step-000000012.pt.0a1b2c3d.tmp"  # another writer, mid-save
    other_tmp.write_bytes(b"half")
    checkpoint.save_checkpoint(str(tmp_path), 40, state(40), keep=3)  # a later run's step
    checkpoint.save_checkpoint(str(tmp_path), 15, state(15), keep=1)
    names = sorted(p.name for p in ckpts.iterdir())
    assert names == [other_tmp.name, "step-000000015.pt", "step-000000040.pt"]


TAKER = """
import sys
from trainer import run_lock
lock = run_lock.acquire(sys.argv[1], lambda m: print(m, flush=True))
print(lock.me["token"], flush=True)
"""


def test_a_run_whose_lock_was_taken_over_writes_no_checkpoint(tmp_path, monkeypatch):
    """The pod of this job started again elsewhere and took the output dir's lock (the same
    RUNAI_JOB_UUID) while this run lingers: its next checkpoint write stops it in one line, and
    its heartbeat never writes over the new holder's lock."""
    monkeypatch.setenv("RUNAI_JOB_UUID", "job-u")
    monkeypatch.setattr(run_lock, "HEARTBEAT_SECONDS", 0.05)
    out = str(tmp_path)
    lock = run_lock.acquire(out, lambda m: None)
    checkpoint.save_checkpoint(out, 5, state(5), keep=3)  # held: written
    taker = subprocess.run(
        [sys.executable, "-c", TAKER, out],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    said, token = taker.stdout.strip().splitlines()
    assert said.endswith(": this job's previous start"), taker.stderr
    with pytest.raises(run_lock.LockLost) as info:
        checkpoint.save_checkpoint(out, 10, state(10), keep=3)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"--output-dir {out} is no longer this run's")
    assert (
        "was taken over by job" in message
        and "stopping before the next checkpoint write" in message
    )
    assert [s for s, _ in checkpoint.list_checkpoints(out)] == [5]
    assert not [p for p in (tmp_path / "checkpoints").iterdir() if p.name.endswith(".tmp")]
    deadline = time.monotonic() + 60
    while lock._beat.is_alive() and time.monotonic() < deadline:  # it sees the loss and stops
        time.sleep(0.05)
    assert not lock._beat.is_alive() and lock.lost
    assert json.loads((tmp_path / run_lock.LOCK_FILE).read_text())["token"] == token
    lock.release()  # not its lock any more: left to the new holder
    assert json.loads((tmp_path / run_lock.LOCK_FILE).read_text())["token"] == token


def test_a_takeover_during_the_write_leaves_no_checkpoint(tmp_path, monkeypatch):
    """Checked again just before the rename: a lock taken over while the file was written (a
    save takes seconds) leaves the step's file unwritten."""
    monkeypatch.setenv("RUNAI_JOB_UUID", "job-v")
    out = str(tmp_path)
    lock = run_lock.acquire(out, lambda m: None)

    class TakenOverWhileSaved:
        def __reduce__(self):
            other = {**lock.me, "token": "another-run", "pid": 1}
            (tmp_path / run_lock.LOCK_FILE).write_text(json.dumps(other))
            return (dict, ())

    with pytest.raises(run_lock.LockLost):
        checkpoint.save_checkpoint(out, 3, {**state(3), "x": TakenOverWhileSaved()}, keep=3)
    assert checkpoint.list_checkpoints(out) == []
    assert not [p for p in (tmp_path / "checkpoints").iterdir() if p.name.endswith(".tmp")]
    lock.release()
