"""Figure `flight-recorder` (opt-in: a few minutes of CPU): what keeping PyTorch's Flight
Recorder on costs a training step, on the retinanet-local profile's configuration.

Two measurements, the recorder on (TORCH_FR_BUFFER_SIZE=2000, what the profiles set) against
off (0), interleaved:
- per collective: two gloo processes run `--collectives` all-reduces of 1000 floats (small, so
  the recording, not the transfer, is what differs); the extra time per collective is
  the recorder's cost for one record.
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
    """Seconds per all-reduce, two gloo processes, rank 0's clock."""
    with tempfile.TemporaryDirectory(prefix="bench-fr-") as tmp:
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.fig_flight_recorder",
                    "worker",
                    str(rank),
                    tmp,
                    str(count),
                ],
                env=_env(buffer),
                cwd=REPO,
                stdout=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for rank in (0, 1)
        ]
        outs = [p.communicate(timeout=600)[0] for p in procs]
    return float(outs[0].strip().splitlines()[-1])


def _worker(rank: int, directory: str, count: int) -> None:
    import datetime

    import torch
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"file://{directory}/store", rank=rank, world_size=2,
        timeout=datetime.timedelta(seconds=120),
    )  # fmt: skip
    tensor = torch.ones(1000)
    for _ in range(50):
        dist.all_reduce(tensor)
    start = time.perf_counter()
    for _ in range(count):
        dist.all_reduce(tensor)
    print((time.perf_counter() - start) / count, flush=True)
    dist.destroy_process_group()


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
    count = 500 if quick else 3000
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
    extra = max(0.0, median(per_collective[2000]) - median(per_collective[0]))
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
        _worker(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    else:
        print(json.dumps(measure(quick="--quick" in sys.argv).to_json(), indent=2, default=str))
