"""Evaluation's DataLoader workers always end, so a rank always exits.

A worker forked from a process with threads can block for good inside the fork, before torch's
worker code installs its own SIGTERM handler: DataLoader's shutdown (a join, then SIGTERM, which
the inherited Python handler of the trainer only turns into a flag) cannot end it, and at exit
multiprocessing joins every child with no timeout. Here a real evaluation runs in a small
subprocess where worker 0 is made just as unkillable: it ignores SIGTERM and starts a non-daemon
thread that sleeps, so it can finish neither a terminate nor its own exit. The process must still
exit, saying which worker it killed, and leave no process behind; and it forks no worker that
would get no batch. A worker stuck in the fork itself (an after-fork hook that never returns)
is found by its missing check-in, killed, and the loader's workers started again.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_ddp import base_env, wait_gone

pytestmark = pytest.mark.slow  # about 20 s, mostly DataLoader's own joins of the stuck worker

REPO = Path(__file__).resolve().parents[2]

EVALUATE = """
import os, signal, sys, threading, time
import torch
from trainer.config import parse_config
from trainer.data.synthetic import SyntheticDataset, make_synthetic_index
from trainer.distributed import DistContext
from trainer.evaluate import predict_shard
from trainer.model import build_model

class Unkillable(SyntheticDataset):
    def __getitem__(self, key):
        worker = torch.utils.data.get_worker_info()
        if worker is not None and worker.id == 0:  # worker 0 can be neither terminated nor exit
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            threading.Thread(target=time.sleep, args=(3600,)).start()  # not a daemon
        return super().__getitem__(key)

forks = [0]
os.register_at_fork(before=lambda: forks.__setitem__(0, forks[0] + 1))
cfg = parse_config(["--dataset", "synthetic", "--model", "retinanet_resnet18_fpn",
                    "--min-size", "64", "--max-size", "64", "--output-dir", sys.argv[1]])
index = make_synthetic_index(2, 2, seed=0, base_size=64, split="val")
dataset = Unkillable(index, "", train=False, min_size=64, max_size=64)
model = build_model(cfg, dataset.num_classes)
cpu = torch.device("cpu")
# Two batches of one image on one rank: 2 workers of the 4 asked for.
found = predict_shard(DistContext(0, 1, 0, cpu, None), model, dataset, 1, 4, 0, None)
# Rank 1 of 2 over one image has an empty shard: no worker at all.
empty = predict_shard(DistContext(1, 2, 1, cpu, None), model, dataset, 1, 4, 1, None)
print(f"predicted {sorted(found)} and {sorted(empty)}; forked {forks[0]} workers", flush=True)
"""


def test_a_worker_that_cannot_exit_is_killed_and_the_process_exits(tmp_path):
    proc, out, err = run_evaluation(EVALUATE, tmp_path, 60)
    assert "predicted [0, 1] and []; forked 2 workers" in out
    killed = killed_workers(err, "evaluation")
    assert len(killed) == 1, err
    assert wait_gone([killed[0], *session_members(proc.pid)], limit=5) == []


def run_evaluation(
    script: str, tmp_path: Path, limit: float
) -> tuple[subprocess.Popen[str], str, str]:
    """Run SCRIPT in a session of its own; it must exit 0 within LIMIT s (else its session is
    killed and the test fails with what it printed)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path)], cwd=REPO, env=base_env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"evaluation did not exit within {limit:g} s:\n{out}{err}") from None
    assert proc.returncode == 0, out + err
    return proc, out, err


def killed_workers(err: str, use: str) -> list[int]:
    """The pids of the workers the trainer's lines on stderr say it killed."""
    line = (
        rf"^trainer: \[rank 0\] {use}: a DataLoader worker \(pid (\d+)\) did not exit; killed it$"
    )
    return [int(pid) for pid in re.findall(line, err, re.MULTILINE)]


def session_members(sid: int) -> list[int]:
    """Processes still in the subprocess's session (its workers, were any left)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.getsid(int(entry.name)) == sid:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


# The first worker forked blocks for good in fork's child side, where CPython 3.11.7 can
# deadlock on a lock another thread held at the fork: before any worker code runs, and SIGTERM
# only sets the inherited handler's flag. Later forks go on.
STUCK_IN_FORK = """
import os, signal, sys, time
import torch
import trainer.data.workers
from trainer.config import parse_config
from trainer.data.synthetic import SyntheticDataset, make_synthetic_index
from trainer.distributed import DistContext
from trainer.evaluate import predict_shard
from trainer.model import build_model

trainer.data.workers.CHECK_IN_SECONDS = 3.0
signal.signal(signal.SIGTERM, lambda *_: None)  # as the trainer's handler: a flag, no exit
forks = [0]

def stuck_if_first():
    while forks[0] == 1:
        time.sleep(60)

os.register_at_fork(before=lambda: forks.__setitem__(0, forks[0] + 1),
                    after_in_child=stuck_if_first)
cfg = parse_config(["--dataset", "synthetic", "--model", "retinanet_resnet18_fpn",
                    "--min-size", "64", "--max-size", "64", "--output-dir", sys.argv[1]])
index = make_synthetic_index(2, 2, seed=0, base_size=64, split="val")
dataset = SyntheticDataset(index, "", train=False, min_size=64, max_size=64)
model = build_model(cfg, dataset.num_classes)
found = predict_shard(DistContext(0, 1, 0, torch.device("cpu"), None), model, dataset, 1, 2, 0, None)
print(f"predicted {sorted(found)}; forked {forks[0]} workers", flush=True)
"""


def test_a_worker_stuck_in_the_fork_is_killed_and_the_workers_start_again(tmp_path):
    proc, out, err = run_evaluation(STUCK_IN_FORK, tmp_path, 90)
    # Two workers, one stuck: both started again, so four forks in all.
    assert "predicted [0, 1]; forked 4 workers" in out
    stuck = re.findall(
        r"^trainer: \[rank 0\] evaluation: DataLoader worker\(s\) \(pid (\d+)\) did not start "
        r"within 3 s \(stuck in the fork\); starting the workers again \(1 of 3\)$",
        err,
        re.MULTILINE,
    )
    assert len(stuck) == 1, err
    assert killed_workers(err, "evaluation") == [int(stuck[0])]  # the fork's stuck child
    assert wait_gone([int(stuck[0]), *session_members(proc.pid)], limit=5) == []
