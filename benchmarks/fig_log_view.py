"""Figure `log-view`: our log widget (runai_tui/tui/widgets/log_view.py) vs Textual's `Log`,
lines/s ingested at the 100k-line bound, and the peak memory of the process doing it.

Each sample is a child process running a headless app with one widget bounded to 100,000 lines,
fed twice that many realistic trainer/NCCL lines in batches (as a `logs -f` stream arrives),
yielding to the event loop every 10 batches so the widget repaints as it would on screen.
Interleaved; medians. Targets: at least as fast as `Log`, peak RSS under 200 MB."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from typing import Any

from benchmarks.harness import REPO, Figure, child_env, interleave, median, timed_run

NAME = "log-view"
TITLE = "log view ingest at the 100k bound"
BOUND = 100_000
MEMORY_LIMIT_MB = 200


def log_lines(count: int) -> list[str]:
    """Lines like a DDP trainer's pod log: NCCL chatter, JSON metrics, warnings, a traceback."""
    out = []
    for i in range(count):
        kind = i % 7
        if kind == 0:
            out.append(
                f"retinanet-master-0:{1000 + i % 97}:{2000 + i % 13} [0] NCCL INFO Channel "
                f"{i % 32:02d}/0 : 0[{i % 8}] -> 1[{(i + 1) % 8}] via P2P/IPC/read"
            )
        elif kind in (1, 2, 3):
            out.append(
                json.dumps(
                    {
                        "kind": "train",
                        "step": i,
                        "epoch": i // 5000,
                        "loss": round(1.0 / (1 + i % 1000), 5),
                        "lr": 0.01,
                        "images_per_sec": 42.5 + i % 10,
                        "step_time": 0.047,
                    }
                )
            )
        elif kind == 4:
            out.append(f"\x1b[33mWARNING\x1b[0m [rank{i % 4}] grad norm {i % 100}.5 is large")
        elif kind == 5:
            out.append(f'  File "/data/scripts/vision/train/engine.py", line {i % 500}, in step')
        else:
            out.append(f"[bold]epoch {i // 5000}[/bold] batch {i} data_time=0.002 tab\there")
    return out


async def ingest(widget_name: str, total: int, batch: int) -> float:
    from textual.app import App, ComposeResult
    from textual.widgets import Log

    from runai_tui.tui.widgets.log_view import LogView

    lines = log_lines(total)

    class Bench(App[None]):
        def compose(self) -> ComposeResult:
            if widget_name == "ours":
                yield LogView(max_lines=BOUND)
            else:
                yield Log(max_lines=BOUND)

    app = Bench()
    async with app.run_test(size=(160, 50)) as pilot:
        widget = app.query_one(LogView if widget_name == "ours" else Log)
        await pilot.pause()
        start = time.perf_counter()
        for n, i in enumerate(range(0, total, batch), 1):
            widget.write_lines(lines[i : i + batch])
            if n % 10 == 0:  # a repaint every 10 batches, as a busy stream gets on screen
                await pilot.pause()
        await pilot.pause()
        elapsed = time.perf_counter() - start
        kept = widget.line_count
    if kept != min(total, BOUND):
        raise RuntimeError(f"{widget_name}: kept {kept} lines, expected {min(total, BOUND)}")
    return elapsed


def measure(repeat: int | None = None, quick: bool = False, **_: Any) -> Figure:
    repeat = repeat or (1 if quick else 3)
    total, batch = (2_000, 200) if quick else (2 * BOUND, 500)
    env = child_env()
    rss: dict[str, list[int]] = {"ours": [], "textual": []}

    def sample(name: str) -> float:
        argv = [sys.executable, "-m", "benchmarks.fig_log_view", name, str(total), str(batch)]
        run = timed_run(argv, env, stdout=subprocess.PIPE, cwd=REPO)
        if run.code != 0:
            raise RuntimeError(f"log-view child ({name}) exited {run.code}")
        rss[name].append(run.rss)
        return total / float(run.stdout.strip().splitlines()[-1])

    a, b = interleave(lambda: sample("ours"), lambda: sample("textual"), repeat, warmup=0)
    peak_mb = max(rss["ours"]) / 2**20
    fig = Figure(
        NAME,
        TITLE,
        "lines/s",
        ours=median(a),
        yardstick=median(b),
        note=f"yardstick: textual.widgets.Log; {total:,} lines in batches of {batch}, "
        f"bound {BOUND:,}",
        details={
            "ours_samples": a,
            "yardstick_samples": b,
            "ours_peak_rss_mb": peak_mb,
            "yardstick_peak_rss_mb": max(rss["textual"]) / 2**20,
        },
    )
    fig.judge(">=", 1.0)
    memory_ok = peak_mb < MEMORY_LIMIT_MB
    fig.details["extra_rows"] = {
        "log-view peak RSS": {
            "ours": f"{peak_mb:.0f} MB",
            "yardstick": f"{fig.details['yardstick_peak_rss_mb']:.0f} MB",
            "ratio": peak_mb / max(fig.details["yardstick_peak_rss_mb"], 1e-9),
            "target": f"< {MEMORY_LIMIT_MB} MB",
            "met": memory_ok,
        }
    }
    if fig.met is not None:
        fig.met = fig.met and memory_ok
    return fig


if __name__ == "__main__":  # child: python -m benchmarks.fig_log_view ours|textual TOTAL BATCH
    name, total_arg, batch_arg = sys.argv[1:4]
    print(asyncio.run(ingest(name, int(total_arg), int(batch_arg))))
