"""What reading many jobs at once buys `runai-tui compare A B C …` and `compare --sweep`.

Starts N jobs on a private local cluster (each pod prints 50 trainer records, then idles), then
reads every job's side (describe, the master's log, run.json) through the real client, one job
after another (the yardstick) and all together (run_sources.gather_jobs, what compare does),
interleaved, ROUNDS times each. Prints the medians and their ratio. On the local cluster each
read is a `runai-local` process, so the gain is bounded by this machine's cores; on a cluster
each read waits on the network, where reading together gains more.

    python benchmarks/compare_gather.py [--jobs 8] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make runai_tui importable from the checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RECORDS = """i=1
while [ $i -le 50 ]; do
  echo "{\\"kind\\":\\"train\\",\\"step\\":$i,\\"loss\\":1.$i,\\"images_per_sec\\":12.5}"
  i=$((i + 1))
done
exec sleep 600
"""


async def one_by_one(client: object, names: list[str]) -> float:
    from runai_tui.workflows.run_sources import gather_job

    start = time.perf_counter()
    for name in names:
        await gather_job(client, name)
    return time.perf_counter() - start


async def together(client: object, names: list[str]) -> float:
    from runai_tui.workflows.run_sources import gather_jobs

    start = time.perf_counter()
    await gather_jobs(client, names)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
            os.environ[var] = str(Path(home) / var.lower())
        from runai_tui.profiles import ProfileStore
        from runai_tui.runai.backend import select_backend
        from runai_tui.runai.client import RunaiClient
        from runai_tui.runai.command import build_submit_argv

        script = Path(home) / "records.sh"
        script.write_text(RECORDS)
        profiles = Path(home) / "profiles"
        profiles.mkdir()
        (profiles / "rec.yaml").write_text(
            f"job_name: rec\nimage: busybox:1\nworkers: 1\ncommand: [sh, {script}]\n"
        )
        store = ProfileStore([profiles])
        client = RunaiClient(select_backend("local"), timeout=60)
        names = [f"rec-{i}" for i in range(1, opts.jobs + 1)]
        try:
            for name in names:
                client.submit(build_submit_argv(store.load("rec"), name))
            while not all('"step":50' in "".join(client.logs(name)) for name in names):
                time.sleep(0.5)
            times: dict[str, list[float]] = {"one by one": [], "together": []}
            for _ in range(opts.rounds):  # interleaved: the machine's load falls on both
                times["one by one"].append(asyncio.run(one_by_one(client, names)))
                times["together"].append(asyncio.run(together(client, names)))
        finally:
            for name in names:
                client.delete(name)
    base, fast = (statistics.median(times[k]) for k in ("one by one", "together"))
    print(f"compare's reads of {opts.jobs} local jobs, median of {opts.rounds} (cpus: "
          f"{os.cpu_count()})")  # fmt: skip
    print(f"  one by one  {base:7.2f} s")
    print(f"  together    {fast:7.2f} s   ({base / fast:.1f}x faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
