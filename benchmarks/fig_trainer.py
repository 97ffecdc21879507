"""Figures `trainer` and `trainer-cpu` (both opt-in: minutes of CPU each).

`trainer`: our trainer (`python -m trainer`) vs torchvision's `references/detection/train.py`,
same generated COCO-format data (640x480 JPEGs, 90 categories so both heads have 91
classes; one padded batch shape), same model (retinanet_resnet50_fpn_v2, random init), same resize (800/1333), batch 2,
CPU, the same loader workers and threads. Steady seconds per iteration from iteration 6 on,
timed by when each iteration's log line arrives, and the CPU seconds (user + system, all
threads) the process spent over the same iterations, which other processes on shared cores
disturb far less than wall time; peak RSS of each process. The runs go one at a time: the
reference, then ours in each setting.
The reference script is never vendored: `--reference-dir DIR` is a checkout of torchvision's
references/detection at a commit you name (`--reference-commit`, recorded in the report). It
runs unmodified, through a tiny wrapper that only sets `weights_backbone=None` on the model
builder (ours starts from random weights too; the builder would otherwise download ImageNet
weights) and, on torch >= 2.0, provides the `torch._six.string_classes` that older
`coco_eval.py` versions import (`(str, bytes)`, its old value; used only to load results files).
The reference has one CPU setting (its --amp is CUDA-only), so its fp32 run is its best. Ours
runs in fp32 and, on a CPU with native bf16, with `--amp bf16`, each eager and with `--compile`
(backbone, FPN and head through torch.compile): four rows, each against the reference by wall
and by CPU time, with peak RSS. A compiled run's steady window starts after its last compile
(TORCH_LOGS=recompiles marks each recompile in its log), its compile time is how much longer its
first step took than the median of its later ones, from the trainer's own step times (so under
one load; later recompiles are not counted in it), and the row says how many graphs it compiled: one per
padded batch shape until the second, then one dynamic graph that later shapes reuse.
`--trainer-compile-size MIN/MAX` compiles at a smaller resize where compiling at 800/1333 takes
too long (the compiled rows then get an eager twin at that size, and their ratio is against
it); `--trainer-compile-size none` leaves the compiled rows out, as `--quick` does.
The figure is our best setting whose peak RSS is at most the reference's.
Targets: at least 1.3x the images/s at no more memory.

`trainer-cpu`: the retinanet-local profile's own configuration (synthetic, 128 px, batch 2, one
thread) with fp32 NCHW as the yardstick vs `--amp bf16`, `--channels-last` and both: whether
the CPU speed options win here (bf16 needs avx512_bf16/AMX to be worth it).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, Figure, child_env, median

NAME = "trainer"
TITLE = "trainer images/s vs torchvision reference"
SPEED_TARGET = 1.3
STEADY_FROM = 6  # iterations before this one are warm-up
REFERENCE_FILES = (
    "train.py",
    "engine.py",
    "utils.py",
    "coco_utils.py",
    "coco_eval.py",
    "presets.py",
    "transforms.py",
    "group_by_aspect_ratio.py",
)

WRAPPER = """
import functools, json, os, runpy, sys, types
import torch
import torchvision
import torchvision.models.detection as detection
# Compatibility only: stored coco_eval.py versions import torch._six (removed in torch 2.0) for
# string_classes, used only when evaluating from a results file; give it the old value.
try:
    import torch._six
except ImportError:
    sys.modules["torch._six"] = torch._six = types.ModuleType("torch._six")
    torch._six.string_classes = (str, bytes)
# Same model as ours: random weights, no ImageNet download for the backbone. Other builder
# arguments (a resize other than 800/1333, a score threshold) only where the environment's
# REFERENCE_MODEL_KWARGS (JSON) asks, for tiny checks on a CPU (train.py has no flag for them):
# through the builders and torchvision.models.get_model, which newer train.py versions call.
extra = json.loads(os.environ.get("REFERENCE_MODEL_KWARGS") or "{}")
for name in ("retinanet_resnet50_fpn_v2", "retinanet_resnet50_fpn"):
    setattr(detection, name, functools.partial(getattr(detection, name), weights_backbone=None,
                                               **extra))
if extra and hasattr(torchvision.models, "get_model"):
    get_model = torchvision.models.get_model
    torchvision.models.get_model = lambda name, **config: get_model(name, **{**extra, **config})
reference = sys.argv[1]
sys.path.insert(0, reference)
sys.argv = [reference + "/train.py", *sys.argv[2:]]
runpy.run_path(reference + "/train.py", run_name="__main__")
"""

REFERENCE_ITERATION = re.compile(rb"Epoch: \[\d+\]\s+\[\s*(\d+)\s*/\s*\d+\]")


def write_coco_fixture(
    root: Path,
    train_images: int,
    val_images: int = 2,
    portrait_every: int = 3,
    size: tuple[int, int] = (640, 480),
) -> None:
    """A COCO 2017 layout of small photo-like JPEGs with 1-4 boxes each, 90 categories: `size`
    (width, height; 640x480), turned portrait every `portrait_every`-th image (0: none)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    categories = [{"id": i, "name": f"class-{i}", "supercategory": "x"} for i in range(1, 91)]
    for split, count in (("train2017", train_images), ("val2017", val_images)):
        (root / split).mkdir(parents=True)
        images, annotations = [], []
        for n in range(count):
            portrait = portrait_every and n % portrait_every == 0
            width, height = size[::-1] if portrait else size
            pixels = rng.integers(0, 255, (height // 8, width // 8, 3), dtype=np.uint8)
            image = Image.fromarray(pixels).resize((width, height), Image.BILINEAR)
            name = f"{n + 1:012d}.jpg"
            image.save(root / split / name, quality=90)
            images.append({"id": n + 1, "file_name": name, "width": width, "height": height})
            for _ in range(1 + n % 4):
                w, h = rng.integers(40, width // 2), rng.integers(40, height // 2)
                x, y = rng.integers(0, width - w), rng.integers(0, height - h)
                annotations.append(
                    {
                        "id": len(annotations) + 1,
                        "image_id": n + 1,
                        "category_id": int(rng.integers(1, 91)),
                        "bbox": [int(x), int(y), int(w), int(h)],
                        "area": int(w * h),
                        "iscrowd": 0,
                        "segmentation": [
                            [
                                int(x),
                                int(y),
                                int(x + w),
                                int(y),
                                int(x + w),
                                int(y + h),
                                int(x),
                                int(y + h),
                            ]
                        ],  # fmt: skip
                    }
                )
        (root / "annotations").mkdir(exist_ok=True)
        document = {"images": images, "annotations": annotations, "categories": categories}
        (root / "annotations" / f"instances_{split}.json").write_text(json.dumps(document))


# A recompile announced by TORCH_LOGS=recompiles (dynamo's log, on stderr).
RECOMPILE = re.compile(rb"Recompiling function (\S+)")


def timed_iterations(
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    pattern: re.Pattern[bytes],
    iterations: int,
    steady_from: int = STEADY_FROM,
) -> dict[str, Any]:
    """Run `argv`, timestamp each log line matching `pattern` (one per iteration) as it
    arrives, stop the process group after `iterations`; steady s/it and peak RSS.

    The steady window starts at iteration `steady_from`, or after the last recompile the log
    announces (TORCH_LOGS=recompiles), and the run goes on past `iterations` until the window
    has as many iterations as it would have had without one."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    stamps: list[float] = []
    cpu: list[float] = []
    tail: list[bytes] = []
    recompiles: list[tuple[int, str]] = []  # (iterations logged before it, function)
    last = b""
    window = iterations - steady_from + 1
    assert proc.stdout is not None
    for line in proc.stdout:
        tail = [*tail[-40:], line]
        if found := RECOMPILE.search(line):
            recompiles.append((len(stamps), found.group(1).decode(errors="replace")))
        if pattern.search(line):
            stamps.append(time.perf_counter())
            cpu.append(process_cpu_seconds(proc.pid))
            last = line
            base = max(steady_from - 2, recompiles[-1][0] if recompiles else 0)
            if len(stamps) >= iterations and len(stamps) - 1 - base >= window:
                break
    # No proc.poll() first: it would reap a child that has already exited, and wait4 (the
    # only way to its peak RSS) would then raise ChildProcessError, hiding the child's output.
    with contextlib.suppress(ProcessLookupError):  # the group: loader workers too
        os.killpg(proc.pid, signal.SIGKILL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stdout.close()
    base = max(steady_from - 2, recompiles[-1][0] if recompiles else 0)
    if len(stamps) < iterations or len(stamps) - 1 - base < 2:
        text = b"".join(tail).decode(errors="replace")
        raise RuntimeError(
            f"{argv[1]}: exit {proc.returncode}, {len(stamps)} of {iterations} iterations; "
            f"its last lines:\n{text}"
        )
    steady = (stamps[-1] - stamps[base]) / (len(stamps) - 1 - base)
    cpu_steady = (cpu[-1] - cpu[base]) / (len(cpu) - 1 - base)
    return {
        "s_per_it": steady,
        # CPU seconds (user + system, all threads) per steady iteration: the work done, less
        # sensitive than wall time to other processes sharing the cores.
        "cpu_s_per_it": cpu_steady,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "iterations": len(stamps),
        "steady_from": base + 2,
        # From the start to the first iteration's line: start-up and the first step (which
        # compiles, with --compile). The steady speed is not subtracted: under a load that
        # changes over the run it is not the speed the first iterations ran at.
        "first_s": stamps[0] - started,
        "recompiles": [{"after_iteration": n, "function": f} for n, f in recompiles],
        # seconds between consecutive iteration lines, and the last line (its own timings)
        "intervals": [round(b - a, 3) for a, b in zip(stamps, stamps[1:], strict=False)],
        "last_line": last.decode(errors="replace").strip()[:600],
    }


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of `pid` and its reaped children (Linux /proc), else nan."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return float("nan")
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def trainer_env(threads: int) -> dict[str, str]:
    env = child_env(OMP_NUM_THREADS=str(threads), PYTHONUNBUFFERED="1")
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    return env


# Our settings on the CPU: label -> trainer options (bf16 rows only where the CPU has bf16). The
# eager rows say --no-compile: --compile auto would compile a run this long at 800/1333.
OURS_VARIANTS = {
    "fp32": ["--amp", "none", "--no-compile"],
    "bf16": ["--amp", "bf16", "--no-compile"],
    "fp32 compiled": ["--amp", "none", "--compile"],
    "bf16 compiled": ["--amp", "bf16", "--compile"],
}
FULL_SIZE = (800, 1333)


def parse_compile_size(text: str) -> tuple[int, int] | None:
    """--trainer-compile-size: MIN/MAX, or none (no compiled rows); empty: 800/1333."""
    if text in ("", "full"):
        return FULL_SIZE
    if text == "none":
        return None
    low, sep, high = text.partition("/")
    if not (sep and low.isdigit() and high.isdigit() and 0 < int(low) <= int(high)):
        raise ValueError(
            f"--trainer-compile-size {text!r}: expected MIN/MAX (e.g. 512/853), full or none"
        )
    return int(low), int(high)


def measure(
    reference_dir: Path | None = None,
    reference_commit: str = "",
    trainer_iters: int = 10,
    trainer_workers: int = 0,
    trainer_threads: int = 2,
    trainer_compile_size: str = "",
    quick: bool = False,
    **_: Any,
) -> Figure:
    if reference_dir is None:
        return Figure(
            NAME,
            TITLE,
            "img/s",
            note="not measured: needs --reference-dir DIR, a checkout of torchvision's "
            "references/detection at a pinned commit (--reference-commit SHA)",
        )
    reference_dir = Path(reference_dir).resolve()
    missing = [f for f in REFERENCE_FILES if not (reference_dir / f).is_file()]
    if "train.py" in missing:
        return Figure(NAME, TITLE, "img/s", note=f"not measured: no train.py in {reference_dir}")
    compile_size = None if quick else parse_compile_size(trainer_compile_size)
    iterations = max(STEADY_FROM + 2, 8 if quick else trainer_iters)
    env = trainer_env(trainer_threads)
    # Our runs that compile say when they recompile, so their steady window can start after.
    compile_env = {**env, "TORCH_LOGS": "recompiles"}
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-trainer-") as tmp:
        root = Path(tmp)
        data = root / "coco"
        # Room for a compiled run to go on past a late recompile (one epoch, no repeats). All
        # 640x480: one padded batch shape (800x1088), so a compiled run compiles one graph per
        # module; on 2 shared cores each graph of this model takes about ten minutes.
        write_coco_fixture(data, train_images=4 * iterations + 4, portrait_every=0)
        wrapper = root / "reference_wrapper.py"
        wrapper.write_text(WRAPPER, encoding="utf-8")
        common = ["--batch-size", "2", "--device", "cpu", "--workers", str(trainer_workers)]

        def ours_argv(label: str, size: tuple[int, int], options: list[str]) -> list[str]:
            return [
                sys.executable, "-m", "trainer", "--dataset", "coco", "--data-root", str(data),
                "--model", "retinanet_resnet50_fpn_v2", "--min-size", str(size[0]),
                "--max-size", str(size[1]), *common, "--epochs", "1",
                "--max-steps", str(2 * iterations), "--log-every", "1", "--eval-every", "0",
                "--checkpoint-every", "0", "--resume", "none",
                "--output-dir", str(root / label.replace(" ", "-")), *options,
            ]  # fmt: skip

        reference_argv = [
            sys.executable, str(wrapper), str(reference_dir), "--data-path", str(data),
            "--dataset", "coco", "--model", "retinanet_resnet50_fpn_v2", *common,
            "--epochs", "1", "--print-freq", "1", "--output-dir", str(root / "reference"),
        ]  # fmt: skip
        ours_pattern = re.compile(rb'^\{"kind": "train"')
        # One run at a time: the reference, then ours eager, then ours compiled.
        runs["reference"] = timed_iterations(
            reference_argv, env, reference_dir, REFERENCE_ITERATION, iterations
        )
        plan = [
            (label, FULL_SIZE, options)
            for label, options in OURS_VARIANTS.items()
            if "--compile" not in options and (label.startswith("fp32") or cpu_has_bf16())
        ]
        if compile_size is not None:
            compiled = [
                (label, compile_size, options)
                for label, options in OURS_VARIANTS.items()
                if "--compile" in options and (label.startswith("fp32") or cpu_has_bf16())
            ]
            if compile_size != FULL_SIZE:  # the eager twins the compiled rows compare with
                plan += [(f"{label.split()[0]} at {size[0]}/{size[1]}", size,
                          [*options[:-1], "--no-compile"])
                         for label, size, options in compiled]  # fmt: skip
            plan += compiled
        progress("reference", runs["reference"])
        for label, size, options in plan:
            run_env = env
            if "--compile" in options:  # a cold compile: its own empty inductor cache
                cache = root / f"inductor-{label.replace(' ', '-')}"
                run_env = {**compile_env, "TORCHINDUCTOR_CACHE_DIR": str(cache)}
            argv = ours_argv(label, size, options)
            runs[label] = timed_iterations(argv, run_env, REPO, ours_pattern, iterations)
            runs[label]["size"] = list(size)
            metrics = root / label.replace(" ", "-") / "metrics.jsonl"
            runs[label]["first_step_excess_s"] = first_step_excess(metrics)
            progress(label, runs[label])
    return trainer_figure(runs, compile_size, reference_commit, trainer_threads,
                          trainer_workers, iterations, reference_dir)  # fmt: skip


def first_step_excess(metrics: Path) -> float | None:
    """How much longer the trainer's first step took than the median of its later ones, from
    its own step times (metrics.jsonl): with --compile, the compile (measured within one run, so
    under one load), plus the first batch's loss check that every run does."""
    try:
        lines = metrics.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    steps = [json.loads(line)["step_time"] for line in lines if line.startswith('{"kind": "train"')]
    return steps[0] - median(steps[1:]) if len(steps) > 1 else None


def progress(label: str, run: dict[str, Any]) -> None:
    """One line on stderr as each run ends: a long figure shows where it is."""
    print(
        f"[bench] trainer {label}: {run['s_per_it']:.2f} s/it, {run['cpu_s_per_it']:.1f} "
        f"CPU-s/it, peak RSS {run['peak_rss_mb']:.0f} MB, steady from iteration "
        f"{run['steady_from']}, {len(run['recompiles'])} recompile(s), "
        f"{run['first_s']:.0f} s to the first iteration",
        file=sys.stderr,
        flush=True,
    )


def trainer_figure(
    runs: dict[str, dict[str, Any]],
    compile_size: tuple[int, int] | None,
    reference_commit: str,
    threads: int,
    workers: int,
    iterations: int,
    reference_dir: Path,
) -> Figure:
    """The `trainer` figure from its runs: the best of ours at no more memory than the
    reference against the reference, and a row for each of our settings."""
    reference = runs["reference"]
    ref_rss = reference["peak_rss_mb"]
    full = [label for label, run in runs.items() if label != "reference" and run["size"] ==
            list(FULL_SIZE)]  # fmt: skip
    fitting = [label for label in full if runs[label]["peak_rss_mb"] <= ref_rss]
    best = min(fitting or full, key=lambda label: runs[label]["s_per_it"])
    ours = runs[best]
    fig = Figure(
        NAME,
        TITLE,
        "img/s",
        ours=2 / ours["s_per_it"],
        yardstick=2 / reference["s_per_it"],
        note=f"best of ours at no more memory: {best}; yardstick: torchvision "
        f"references/detection/train.py at {reference_commit or 'an unnamed commit'} (fp32, its "
        f"only CPU setting); 800/1333, batch 2, CPU, {threads} threads, {workers} workers, "
        f"steady from iteration {STEADY_FROM} (or after the last recompile), {iterations} "
        "steady-window iterations or more",
        details={"runs": runs, "best": best, "reference_dir": str(reference_dir)},
    )
    fig.judge(">=", SPEED_TARGET)
    if fig.met is not None:
        fig.met = fig.met and ours["peak_rss_mb"] <= ref_rss
    rows: dict[str, dict[str, Any]] = {}

    def describe(run: dict[str, Any]) -> str:
        return (f"{run['s_per_it']:.2f} s/it, {run['cpu_s_per_it']:.1f} CPU-s/it, "
                f"{run['peak_rss_mb'] / 1024:.1f} GB")  # fmt: skip

    for label, run in runs.items():
        if label == "reference":
            continue
        twin = label.split()[0] if run["size"] == list(FULL_SIZE) else None
        if "compiled" in label and run["size"] != list(FULL_SIZE):
            twin = f"{label.split()[0]} at {run['size'][0]}/{run['size'][1]}"
        if "compiled" not in label and run["size"] != list(FULL_SIZE):
            continue  # an eager twin: shown as the yardstick of its compiled row
        against = reference if run["size"] == list(FULL_SIZE) else runs[twin]
        wall, by_cpu = (against[key] / run[key] for key in ("s_per_it", "cpu_s_per_it"))
        fits = run["peak_rss_mb"] <= against["peak_rss_mb"]
        name = (
            label
            if run["size"] == list(FULL_SIZE)
            else f"{label} at {run['size'][0]}/{run['size'][1]}"
        )
        rows[name] = {
            "ours": f"{describe(run)} (by CPU time {by_cpu:.2f}x)",
            "yardstick": ("reference " if against is reference else f"ours {twin}, ")
            + describe(against),
            "ratio": wall,
            "target": f">= {SPEED_TARGET:g}, <= memory" if against is reference else "",
            "met": (wall >= SPEED_TARGET and fits) if against is reference else None,
        }
        if "compiled" in label and twin in runs:
            graphs = 1 + len(run["recompiles"])
            rows[f"{name}: compile"] = {
                "ours": f"{run['first_step_excess_s']:.0f} s to compile, "
                f"{graphs} graph(s) per compiled module at most "
                f"({len(run['recompiles'])} recompile(s)); steady from iteration "
                f"{run['steady_from']}",
                "yardstick": f"ours {twin} eager: {run['s_per_it']:.2f} against "
                f"{runs[twin]['s_per_it']:.2f} s/it",
                "ratio": runs[twin]["s_per_it"] / run["s_per_it"],
                "target": "",
                "met": None,
            }
    if compile_size is None:
        fig.note += "; compiled rows left out (--quick or --trainer-compile-size none)"
    fig.details["extra_rows"] = rows
    return fig


def cpu_has_bf16() -> bool:
    """avx512_bf16 or AMX in /proc/cpuinfo (Linux): bf16 autocast runs natively."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


# -- trainer-cpu: the CPU speed options on the retinanet-local configuration -------------------

CPU_NAME = "trainer-cpu"
CPU_TITLE = "trainer CPU options (retinanet-local config)"
CPU_VARIANTS = {
    "fp32": ["--amp", "none", "--no-channels-last"],
    "bf16": ["--amp", "bf16", "--no-channels-last"],
    "channels-last": ["--amp", "none", "--channels-last"],
    "bf16+channels-last": ["--amp", "bf16", "--channels-last"],
}


def measure_cpu_options(
    trainer_iters: int = 10, quick: bool = False, repeat: int | None = None, **_: Any
) -> Figure:
    """Our trainer on the retinanet-local profile's data and sizes, one process, one thread (as
    the profile sets OMP_NUM_THREADS=1), each variant run `repeat` times, round-robin."""
    steps = max(STEADY_FROM + 2, 8 if quick else trainer_iters)
    repeat = repeat or (1 if quick else 2)
    env = trainer_env(1)
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in CPU_VARIANTS}
    with tempfile.TemporaryDirectory(prefix="bench-trainer-cpu-") as tmp:
        for _round in range(repeat):
            for name, options in CPU_VARIANTS.items():
                out = Path(tmp) / f"{name}-{_round}"
                argv = [
                    sys.executable, "-m", "trainer", "--dataset", "synthetic",
                    "--model", "retinanet_resnet50_fpn_v2", "--min-size", "128",
                    "--max-size", "128", "--batch-size", "2", "--workers", "0", "--epochs", "1",
                    "--max-steps", str(steps), "--log-every", "1", "--eval-every", "0",
                    "--checkpoint-every", "0", "--resume", "none", "--device", "cpu",
                    "--output-dir", str(out), *options,
                ]  # fmt: skip
                pattern = re.compile(rb'^\{"kind": "train"')
                results[name].append(timed_iterations(argv, env, REPO, pattern, steps))
    speed = {name: 2 / median([r["s_per_it"] for r in runs]) for name, runs in results.items()}
    best = max(speed, key=speed.__getitem__)
    fig = Figure(
        CPU_NAME,
        CPU_TITLE,
        "img/s",
        ours=speed[best],
        yardstick=speed["fp32"],
        target="best >= fp32",
        note=f"best: {best}; yardstick: fp32 NCHW; synthetic 128 px, batch 2, 1 thread",
        details={"images_per_s": speed, "runs": results, "best": best},
    )
    fig.met = True
    fig.details["extra_rows"] = {
        f"  {name}": {
            "ours": f"{value:.2f} img/s",
            "yardstick": f"{speed['fp32']:.2f} img/s",
            "ratio": value / speed["fp32"],
            "target": "",
            "met": None,
        }
        for name, value in speed.items()
        if name != "fp32"
    }
    return fig
