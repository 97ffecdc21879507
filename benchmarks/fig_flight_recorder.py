"""Figure `flight-recorder` (opt-in: a few minutes of CPU): what keeping PyTorch's Flight
Recorder on costs a training step, on the retinanet-local profile's configuration.

Two measurements, the recorder on (TORCH_FR_BUFFER_SIZE=2000, what the profiles set) against
off (0), interleaved:
- per collective: one gloo process (a group of one, so no peer and no network) runs thousands
  of one-element all-reduces; the CPU time per all-reduce (process time, which the machine's
  other load disturbs far less than wall time), the least over the rounds, on minus off is the
  recorder's cost for one record.
- per step: the trainer itself, 2 ranks under torchrun (synthetic, 128 px, batch 2, one thread
  each, as the profile), median `step_time` from step 6 on.
The figure is the recorder's share of a step, in percent (target <= 1): its cost per collective
x collectives per step (the DDP buckets plus the trainer's one all-reduce) / the step time with
it off. The two step times are in the note: on a shared machine their ratio is noisier than 1%.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, Figure, child_env, median

NAME = "flight-recorder"
TITLE = "training step with the Flight Recorder on vs off"
STEADY_FROM = 6
DDP_BUCKET_BYTES = 25 * 1024 * 1024  # DistributedDataParallel's default bucket_cap_mb


def _env(buffer: int) -> dict[str, str]:
    env = child_env(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", TORCH_FR_BUFFER_SIZE=str(buffer))
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    return env


def _collective_seconds(buffer: int, count: int) -> float:
    """CPU seconds per all-reduce in a one-rank gloo group."""
    with tempfile.TemporaryDirectory(prefix="bench-fr-") as tmp:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.fig_flight_recorder", "worker", tmp, str(count)],
            env=_env(buffer), cwd=REPO, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    return float(done.stdout.strip().splitlines()[-1])


def _worker(directory: str, count: int) -> None:
    import datetime
    import os

    import torch
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"file://{directory}/store", rank=0, world_size=1,
        timeout=datetime.timedelta(seconds=120),
    )  # fmt: skip
    tensor = torch.ones(1)
    for _ in range(500):
        dist.all_reduce(tensor)
    start = time.process_time()
    for _ in range(count):
        dist.all_reduce(tensor)
    print((time.process_time() - start) / count, flush=True)
    os._exit(0)  # skip gloo's teardown, which may abort a finished process


def _step_seconds(buffer: int, steps: int, out: Path) -> tuple[float, float]:
    """(median steady step time, parameters in millions) of one 2-rank trainer run."""
    argv = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
        "-m", "trainer", "--dataset", "synthetic", "--min-size", "128", "--max-size", "128",
        "--batch-size", "2", "--workers", "0", "--epochs", "1", "--max-steps", str(steps),
        "--log-every", "1", "--eval-every", "0", "--checkpoint-every", "0", "--resume", "none",
        "--device", "cpu", "--amp", "bf16", "--output-dir", str(out),
    ]  # fmt: skip
    done = subprocess.run(argv, env=_env(buffer), cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"trainer failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    times = [
        r["step_time"]
        for r in (json.loads(line) for line in done.stdout.splitlines() if line.startswith("{"))
        if r.get("kind") == "train" and r["step"] >= STEADY_FROM
    ]
    params = re.search(r"([\d.]+)M parameters", done.stdout)
    return median(times), float(params[1]) if params else 0.0


def measure(quick: bool = False, repeat: int | None = None, **_: Any) -> Figure:
    rounds = repeat or (1 if quick else 3)
    steps = STEADY_FROM + (4 if quick else 10)
    count = 2000 if quick else 20000
    per_collective: dict[int, list[float]] = {2000: [], 0: []}
    per_step: dict[int, list[float]] = {2000: [], 0: []}
    params = 0.0
    with tempfile.TemporaryDirectory(prefix="bench-fr-train-") as tmp:
        for k in range(rounds):
            for buffer in (2000, 0):
                per_collective[buffer].append(_collective_seconds(buffer, count))
                step, params = _step_seconds(buffer, steps, Path(tmp) / f"{buffer}-{k}")
                per_step[buffer].append(step)
    on, off = median(per_step[2000]), median(per_step[0])
    extra = max(0.0, min(per_collective[2000]) - min(per_collective[0]))
    collectives = math.ceil(params * 1e6 * 4 / DDP_BUCKET_BYTES) + 1
    bound = extra * collectives / off
    fig = Figure(
        NAME, TITLE, "% of step", ours=bound * 100, yardstick=1.0,
        note=(
            f"recorder cost per collective {extra * 1e6:.1f} us x ~{collectives} collectives "
            f"per step / {off:.3f} s per step; step time with it on {on:.3f} s vs off {off:.3f} s "
            "(that ratio carries the machine's noise)"
        ),
        details={"per_collective_s": per_collective, "per_step_s": per_step,
                 "collectives_per_step": collectives, "step_ratio": on / off},
    )  # fmt: skip
    fig.judge("<=", 1.0)
    return fig


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        _worker(sys.argv[2], int(sys.argv[3]))
    else:
        print(json.dumps(measure(quick="--quick" in sys.argv).to_json(), indent=2, default=str))
