"""Figure `cli`: headless `runai-tui submit --profile retinanet-tcp --dry-run`, wall time, vs
`python -c "import yaml"` (the floor: an interpreter that loads the one library profiles need).

Both run as fresh processes of the same interpreter with a warm bytecode cache (kept outside
the tree), interleaved; medians. Target: at most 2.5x (plain Python on the start path: dataclasses
and typing are imported; Textual, torch, asyncio and the process machinery stay lazy)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness import Figure, child_env, interleave, median, timed_run, venv_script

NAME = "cli"
TITLE = "headless submit --dry-run wall"


def measure(repeat: int | None = None, quick: bool = False, **_: Any) -> Figure:
    repeat = repeat or (3 if quick else 15)
    ours_argv = [*venv_script("runai-tui"), "submit", "--profile", "retinanet-tcp", "--dry-run"]
    yard_argv = [sys.executable, "-c", "import yaml"]
    with tempfile.TemporaryDirectory(prefix="bench-pyc-") as pyc:
        env = child_env(Path(pyc))
        first = timed_run(ours_argv, env)
        if first.code != 0:
            return Figure(NAME, TITLE, "s", note=f"not measured: dry-run exited {first.code}")
        cpu: dict[str, list[float]] = {"ours": [], "yardstick": []}

        def sample(argv: list[str], side: str) -> float:
            run = timed_run(argv, env)
            cpu[side].append(run.cpu)
            return run.wall

        a, b = interleave(
            lambda: sample(ours_argv, "ours"),
            lambda: sample(yard_argv, "yardstick"),
            repeat,
            warmup=1 if quick else 2,
        )
    fig = Figure(
        NAME,
        TITLE,
        "s",
        ours=median(a),
        yardstick=median(b),
        note='yardstick: python -c "import yaml"',
        details={
            "ours_samples": a,
            "yardstick_samples": b,
            # CPU time is steadier than wall on a busy machine; shown as a cross-check.
            "cpu_ratio": median(cpu["ours"]) / max(median(cpu["yardstick"]), 1e-9),
        },
    )
    fig.judge("<=", 2.5)
    return fig
