"""Figure `diagnose`: `runai-tui diagnose --log FILE --json` over a big generated pod log (1 GB by
default, `--diagnose-mb`) vs `grep -c` over the same file; peak memory at full size and at an
eighth of it ("flat memory": the same).

Two logs, each written lazily to a temp file and deleted afterwards:
- `failed-job` (the figure): what a long DDP job that failed leaves behind. NCCL's set-up (the
  IB devices, channel lines), then the run: per-collective NCCL INFO lines (NCCL_DEBUG_SUBSYS=COLL),
  a PyTorch UserWarning every step, the trainer's JSON records, a rare NCCL WARN; at the very end
  the failure: watchdog timeouts, a traceback, torchrun's ChildFailedError.
- `error-storm` (a second row): 6% of the lines are errors diagnose must classify and count
  (545k per GB: watchdog timeouts, CUDA OOMs, gloo resets), 40% channel lines, 48% records.
Both commands read the file warm from the page cache, interleaved; medians. diagnose reads the
log in one process (blocks of 2 MiB), like grep.
Targets: the failed job within 5x of grep, the error storm within 10x, and peak RSS no larger at
1 GB than at 1/8 of it (+16 MB)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness import Figure, child_env, interleave, median, timed_run, venv_script

NAME = "diagnose"
TITLE = "diagnose over a big log"
RATIO_LIMIT = 5.0  # the failed job's log
STORM_RATIO_LIMIT = 10.0  # the error storm: 6% of its lines are errors to classify and count
FLAT_SLACK_MB = 16
GREP_PATTERN = "NCCL WARN"


def storm_block(lines: int = 20_000, seed: int = 0) -> bytes:
    """One block of the error storm: NCCL channel lines and JSON metrics, with 3 lines in 50 that
    are errors (NCCL timeouts, CUDA OOMs, gloo connection resets) and 3 NCCL warnings."""
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
            out.append(record(step))
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


def record(step: int) -> str:
    return json.dumps(
        {
            "kind": "train",
            "step": step,
            "epoch": step // 5000,
            "loss": round(1.0 / (1 + step % 1000), 5),
            "lr": 0.01,
            "images_per_sec": 42.5,
            "data_time": 0.002,
            "step_time": 0.047,
            "time": 1795000000.0 + step * 0.047,
        }
    )


HOST = "retinanet-master-0:312:340 [0]"


def job_start() -> bytes:
    """NCCL's set-up on IB, as NCCL_DEBUG=INFO prints it."""
    lines = [
        f"{HOST} NCCL INFO Bootstrap : Using eth0:10.128.0.5<0>",
        f"{HOST} NCCL INFO NCCL_IB_HCA set to mlx5_2,mlx5_3",
        f"{HOST} NCCL INFO NET/IB : Using [0]mlx5_2:1/RoCE [1]mlx5_3:1/RoCE ; OOB net1:10.0.0.1<0>",
        f"{HOST} NCCL INFO Using network IB",
        *(
            f"{HOST} NCCL INFO Channel {c:02d}/0 : 0[0] -> 1[0] [send] via NET/IB/{c % 2}/GDRDMA"
            for c in range(32)
        ),
        f"{HOST} NCCL INFO comm 0x55d0c0a0 rank 0 nranks 3 cudaDev 0 busId 1b000 - Init COMPLETE",
    ]
    return ("\n".join(lines) + "\n").encode()


def job_block(lines: int = 20_000, seed: int = 0) -> bytes:
    """One block of the run: per-collective NCCL lines, a UserWarning (two lines) every step, a
    trainer record every 20 steps, a NCCL WARN now and then."""
    out = []
    step = seed * lines
    while len(out) < lines:
        step += 1
        out.append(
            f"{HOST} NCCL INFO AllReduce: opCount {step:x} sendbuff 0x7f3c5a000000 recvbuff "
            f"0x7f3c5a000000 count 9461268 datatype 7 op 0 root 0 comm 0x55d0c0a0 [nranks=3] "
            "stream 0x55d0bf30"
        )
        out.append(
            "/usr/local/lib/python3.11/site-packages/torch/functional.py:534: UserWarning: "
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
            "argument. (Triggered internally at ../aten/src/ATen/native/TensorShape.cpp:3595.)"
        )
        out.append("  return _VF.meshgrid(tensors, **kwargs)  # type: ignore[attr-defined]")
        if step % 20 == 0:
            out.append(record(step))
        if step % 997 == 0:
            out.append(f"{HOST} NCCL WARN NET/IB : req 0x7f3c busy, retrying after 10 us")
    return ("\n".join(out) + "\n").encode()


def job_end() -> bytes:
    """How it failed: a rank hung, the others' watchdogs fired, torchrun gave up."""
    lines = [
        "[rank1]:[E1123 10:02:13.123 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=2144, OpType=ALLREDUCE, NumelIn=9461268, "
        "NumelOut=9461268, Timeout(ms)=1800000) ran for 1800087 milliseconds before timing out.",
        "Traceback (most recent call last):",
        *(f'  File "/pvc/trainer/train.py", line {100 + i}, in step' for i in range(20)),
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for "
        "details), NCCL version 2.21.5",
        "E1123 10:02:41.297000 719 torch/distributed/elastic/multiprocessing/api.py:1002] "
        "failed (exitcode: 1) local_rank: 0 (pid: 738) of binary: /usr/bin/python",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    ]
    return ("\n".join(lines) + "\n").encode()


LOGS = {
    "failed-job": (job_start, job_block, job_end),
    "error-storm": (lambda: b"", storm_block, lambda: b""),
}


def write_log(path: Path, megabytes: int, kind: str = "failed-job") -> int:
    """Write about `megabytes` MB of the `kind` log to `path`, block by block (never all in
    memory): its start, eight distinct blocks of ~2 MB cycled, its end."""
    start, block, end = LOGS[kind]
    target = megabytes * 2**20
    blocks: list[bytes] = []
    with open(path, "wb") as handle:
        written = handle.write(start())
        index = 0
        while written < target:
            if len(blocks) < 8:
                blocks.append(block(seed=len(blocks)))
            written += handle.write(blocks[index % len(blocks)])
            index += 1
        written += handle.write(end())
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
    results = {kind: one_log(kind, megabytes, repeat, env, grep) for kind in LOGS}
    job, storm = results["failed-job"], results["error-storm"]
    fig = Figure(
        NAME,
        TITLE,
        "s",
        ours=median(job["ours"]),
        yardstick=median(job["grep"]),
        note=f"yardstick: grep -c {GREP_PATTERN!r}; failed-job log of "
        f"{job['bytes'] / 2**20:,.0f} MB",
        details={"logs": results},
    )
    fig.judge("<=", RATIO_LIMIT)
    storm_ratio = median(storm["ours"]) / median(storm["grep"])
    rows: dict[str, dict[str, Any]] = {
        "error-storm log (6% error lines)": {
            "ours": f"{median(storm['ours']):.3f} s",
            "yardstick": f"{median(storm['grep']):.3f} s",
            "ratio": storm_ratio,
            "target": f"<= {STORM_RATIO_LIMIT:g}x",
            "met": storm_ratio <= STORM_RATIO_LIMIT,
        }
    }
    for kind, result in results.items():  # CPU time: what a loaded machine's wall time hides
        cpu_ours, cpu_grep = median(result["cpu_ours"]), median(result["cpu_grep"])
        rows[f"{kind} CPU time (not judged)"] = {
            "ours": f"{cpu_ours:.3f} s",
            "yardstick": f"{cpu_grep:.3f} s",
            "ratio": cpu_ours / max(cpu_grep, 1e-9),
            "target": "-",
            "met": None,
        }
    flat = True
    for kind, result in results.items():
        peak_mb, small_mb = max(result["rss"]) / 2**20, result["rss_at_one_eighth"] / 2**20
        flat = flat and peak_mb <= small_mb + FLAT_SLACK_MB
        rows[f"{kind} peak RSS"] = {
            "ours": f"{peak_mb:.0f} MB",
            "yardstick": f"{small_mb:.0f} MB at 1/8",
            "ratio": peak_mb / max(small_mb, 1e-9),
            "target": f"flat (+{FLAT_SLACK_MB} MB)",
            "met": peak_mb <= small_mb + FLAT_SLACK_MB,
        }
    fig.details["extra_rows"] = rows
    if fig.met is not None:
        fig.met = fig.met and flat
    return fig


def one_log(kind: str, megabytes: int, repeat: int, env: dict[str, str], grep: str) -> dict:
    """Samples of diagnose and of grep -c over one generated log, and diagnose's peak RSS."""
    with tempfile.TemporaryDirectory(prefix="bench-diagnose-") as tmp:
        big, small = Path(tmp) / "big.log", Path(tmp) / "small.log"
        size = write_log(big, megabytes, kind)
        write_log(small, max(1, megabytes // 8), kind)
        ours_argv = [*venv_script("runai-tui"), "diagnose", "--log", str(big), "--json"]
        grep_argv = [grep, "-c", GREP_PATTERN, str(big)]
        rss: list[int] = []
        cpu: dict[str, list[float]] = {"ours": [], "grep": []}

        def ours() -> float:
            run = timed_run(ours_argv, env)
            if run.code not in (0, 1):  # 1: findings reported as a failure is still a result
                raise RuntimeError(f"diagnose exited {run.code}")
            rss.append(run.rss)
            cpu["ours"].append(run.cpu)
            return run.wall

        def yardstick() -> float:
            # Into a pipe: GNU grep stops at the first match when its output is /dev/null.
            run = timed_run(grep_argv, env, stdout=subprocess.PIPE)
            if run.code not in (0, 1) or not run.stdout.strip().isdigit():
                raise RuntimeError(f"grep -c exited {run.code}: {run.stdout[:200]!r}")
            cpu["grep"].append(run.cpu)
            return run.wall

        # No warm-up round: the file was just written, so it is in the page cache already.
        a, b = interleave(ours, yardstick, repeat, warmup=0)
        small_rss = timed_run(
            [*venv_script("runai-tui"), "diagnose", "--log", str(small), "--json"], env
        ).rss
    return {
        "ours": a,
        "grep": b,
        "bytes": size,
        "rss": rss,
        "rss_at_one_eighth": small_rss,
        "cpu_ours": cpu["ours"],
        "cpu_grep": cpu["grep"],
    }
