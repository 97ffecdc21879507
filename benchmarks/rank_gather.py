"""What the per-rank figures in each train record cost: one all-gather of 4 floats per record.

Runs on 2 CPU processes over gloo (the local profile's shape): first the all-gather alone,
timed over many calls, then the local profile's own trainer arguments for a few steps to read
the step time. Prints both and their ratio (the cost per step at --log-every 1).

    python benchmarks/rank_gather.py [--calls 2000] [--steps 12]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The trainer arguments of profiles/retinanet-local.yaml (shortened to --max-steps below).
LOCAL_ARGS = [
    "--dataset", "synthetic", "--epochs", "1", "--batch-size", "2", "--min-size", "128",
    "--max-size", "128", "--workers", "0", "--checkpoint-every", "0", "--log-every", "1",
    "--eval-every", "0", "--amp", "bf16",
]  # fmt: skip

GATHER = """
import json, statistics, sys, time
import torch.distributed as dist
from trainer.distributed import DistContext, all_gather_floats
import torch
dist.init_process_group("gloo")
ctx = DistContext(dist.get_rank(), dist.get_world_size(), 0, torch.device("cpu"), "gloo")
times = []
for _ in range(int(sys.argv[1])):
    dist.barrier()
    start = time.perf_counter()
    all_gather_floats(ctx, [0.5, 0.01, 4.0, 0.2])
    times.append(time.perf_counter() - start)
if ctx.rank == 0:
    print(json.dumps({"median": statistics.median(times), "p90": sorted(times)[len(times) * 9 // 10]}))
dist.destroy_process_group()
"""


def torchrun(args: list[str]) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           *args]  # fmt: skip
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "gather.py"
        script.write_text(GATHER)
        gather = json.loads(torchrun([str(script), str(args.calls)]).strip().splitlines()[-1])
        out = torchrun(["-m", "trainer", *LOCAL_ARGS, "--max-steps", str(args.steps),
                        "--output-dir", str(Path(tmp) / "run")])  # fmt: skip
    train = [json.loads(x) for x in out.splitlines() if x.startswith('{"kind": "train"')]
    steps = [r["step_time"] for r in train[1:]]  # the first step includes the loader's start
    step = statistics.median(steps)
    print(
        f"all-gather of 4 floats, 2 gloo processes: median {gather['median'] * 1e3:.3f} ms, "
        f"p90 {gather['p90'] * 1e3:.3f} ms over {args.calls} calls"
    )
    print(f"local profile step time: median {step:.3f} s over {len(steps)} steps")
    print(
        f"cost per record at --log-every 1: {gather['median'] / step * 100:.3f} % of a step "
        f"(p90 {gather['p90'] / step * 100:.3f} %)"
    )


if __name__ == "__main__":
    main()
