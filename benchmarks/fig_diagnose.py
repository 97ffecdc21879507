"""Figure `diagnose`: `runai-tui diagnose --log FILE --json` over a big generated pod log (1 GB by
default, `--diagnose-mb`) vs `grep -c` over the same file; peak memory at full size and at an
eighth of it ("flat memory": the same).

The log is written lazily to a temp file (realistic NCCL / trainer / traceback lines) and deleted
afterwards. Both commands read it warm from the page cache, interleaved; medians.
Targets: within 5x of grep, and peak RSS no larger at 1 GB than at 1/8 of it (+16 MB)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness import Figure, child_env, interleave, median, timed_run, venv_script

NAME = "diagnose"
TITLE = "diagnose over a big log"
RATIO_LIMIT = 5.0
FLAT_SLACK_MB = 16
GREP_PATTERN = "NCCL WARN"


def log_block(lines: int = 20_000, seed: int = 0) -> bytes:
    """One block of a DDP job's log: mostly NCCL INFO and JSON metrics, some warnings, a few
    errors of the kinds diagnose looks for (NCCL timeouts, OOM, connection resets)."""
    out = []
    for i in range(lines):
        step = seed * lines + i
        kind = i % 50
        if kind < 20:
            out.append(
                f"retinanet-master-0:{1000 + i % 97}:{2000 + i % 13} [0] NCCL INFO Channel "
                f"{i % 32:02d}/0 : 0[{i % 8}] -> 1[{(i + 1) % 8}] via NET/Socket/0"
            )
        elif kind < 44:
            out.append(
                json.dumps(
                    {
                        "kind": "train",
                        "step": step,
                        "epoch": step // 5000,
                        "loss": round(1.0 / (1 + step % 1000), 5),
                        "lr": 0.01,
                        "images_per_sec": 42.5,
                        "data_time": 0.002,
                        "step_time": 0.047,
                    }
                )
            )
        elif kind < 47:
            out.append(
                f"retinanet-worker-1:77:99 [0] NCCL WARN NET/Socket : peer 10.0.0.{i % 250} "
                "message truncated : receiving 1048576 bytes instead of 65536"
            )
        elif kind == 47:
            out.append(
                "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation "
                "timeout: WorkNCCL(SeqNum=4711, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for "
                "1800391 milliseconds before timing out."
            )
        elif kind == 48:
            out.append(
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
                "has a total capacity of 79.15 GiB of which 1.02 GiB is free."
            )
        else:
            out.append("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
                       "Connection closed by peer [10.0.0.2]:29500")  # fmt: skip
    return ("\n".join(out) + "\n").encode()


def write_log(path: Path, megabytes: int) -> int:
    """Write about `megabytes` MB of log to `path`, block by block (never all in memory): eight
    distinct blocks of ~2 MB, cycled."""
    target = megabytes * 2**20
    written = 0
    blocks: list[bytes] = []
    with open(path, "wb") as handle:
        while written < target:
            if len(blocks) < 8:
                blocks.append(log_block(seed=len(blocks)))
            block = blocks[(written // len(blocks[0])) % len(blocks)]
            handle.write(block)
            written += len(block)
    return written


def diagnose_available(env: dict[str, str]) -> str:
    """'' when `runai-tui diagnose` exists, else why not."""
    probe = subprocess.run(
        [*venv_script("runai-tui"), "diagnose", "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if probe.returncode != 0:
        return "runai-tui diagnose is not available in this tree (yet)"
    if "--log" not in probe.stdout:
        return "runai-tui diagnose has no --log option"
    return ""


def measure(
    repeat: int | None = None, quick: bool = False, diagnose_mb: int = 1024, **_: Any
) -> Figure:
    repeat = repeat or (1 if quick else 3)
    megabytes = 8 if quick else diagnose_mb
    env = child_env()
    why = diagnose_available(env)
    if why:
        return Figure(NAME, TITLE, "s", note=f"not available: {why}")
    grep = shutil.which("grep")
    if grep is None:
        return Figure(NAME, TITLE, "s", note="not measured: no grep on PATH")
    with tempfile.TemporaryDirectory(prefix="bench-diagnose-") as tmp:
        big, small = Path(tmp) / "big.log", Path(tmp) / "small.log"
        size = write_log(big, megabytes)
        write_log(small, max(1, megabytes // 8))
        ours_argv = [*venv_script("runai-tui"), "diagnose", "--log", str(big), "--json"]
        grep_argv = [grep, "-c", GREP_PATTERN, str(big)]
        rss: list[int] = []

        def ours() -> float:
            run = timed_run(ours_argv, env)
            if run.code not in (0, 1):  # 1: findings reported as a failure is still a result
                raise RuntimeError(f"diagnose exited {run.code}")
            rss.append(run.rss)
            return run.wall

        def yardstick() -> float:
            # Into a pipe: GNU grep stops at the first match when its output is /dev/null.
            run = timed_run(grep_argv, env, stdout=subprocess.PIPE)
            if run.code != 0 or not run.stdout.strip().isdigit():
                raise RuntimeError(f"grep -c exited {run.code}: {run.stdout[:200]!r}")
            return run.wall

        # No warm-up round: the file was just written, so it is in the page cache already.
        a, b = interleave(ours, yardstick, repeat, warmup=0)
        small_rss = timed_run(
            [*venv_script("runai-tui"), "diagnose", "--log", str(small), "--json"], env
        ).rss
        os.unlink(big)
    peak_mb, small_mb = max(rss) / 2**20, small_rss / 2**20
    flat = peak_mb <= small_mb + FLAT_SLACK_MB
    fig = Figure(
        NAME,
        TITLE,
        "s",
        ours=median(a),
        yardstick=median(b),
        note=f"yardstick: grep -c {GREP_PATTERN!r}; log of {size / 2**20:,.0f} MB",
        details={
            "ours_samples": a,
            "yardstick_samples": b,
            "log_bytes": size,
            "ours_peak_rss_mb": peak_mb,
            "ours_peak_rss_mb_at_one_eighth": small_mb,
        },
    )
    fig.judge("<=", RATIO_LIMIT)
    fig.details["extra_rows"] = {
        "diagnose peak RSS": {
            "ours": f"{peak_mb:.0f} MB",
            "yardstick": f"{small_mb:.0f} MB at 1/8",
            "ratio": peak_mb / max(small_mb, 1e-9),
            "target": f"flat (+{FLAT_SLACK_MB} MB)",
            "met": flat,
        }
    }
    if fig.met is not None:
        fig.met = fig.met and flat
    return fig
