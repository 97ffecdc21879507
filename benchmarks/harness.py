"""What every figure of the suite shares: the result record, interleaved timing, child processes.

Absolute times on a shared machine are noise, so each figure is a ratio against a yardstick
measured in the same run, the two interleaved (A, B, A, B, ...) and summarised by medians.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Figure:
    """One line of the report: our figure, the yardstick's, their ratio and the target.

    `ratio` is always ours / yardstick of `unit`; `target` says which way is good
    (`<= 1.5` for times, `>= 1.0` for rates). `met` is None when the figure was not measured.
    """

    name: str
    title: str
    unit: str
    ours: float | None = None
    yardstick: float | None = None
    target: str = ""
    met: bool | None = None
    note: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.ours is None or not self.yardstick:
            return None
        return self.ours / self.yardstick

    def judge(self, op: str, bound: float) -> None:
        """Set `target` and `met` from the ratio: op is '<=' or '>='."""
        self.target = f"ratio {op} {bound:g}"
        ratio = self.ratio
        if ratio is not None:
            self.met = ratio <= bound if op == "<=" else ratio >= bound

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio
        return data


def skipped(name: str, title: str, why: str) -> Figure:
    return Figure(name, title, "", note=f"not measured: {why}")


def interleave(
    ours: Callable[[], float], yardstick: Callable[[], float], repeat: int, warmup: int = 1
) -> tuple[list[float], list[float]]:
    """Call A, B, A, B, ... `repeat` times each (after `warmup` unrecorded rounds); each call
    returns its own measurement. Interleaving spreads the machine's load over both alike."""
    for _ in range(warmup):
        ours()
        yardstick()
    a: list[float] = []
    b: list[float] = []
    for _ in range(repeat):
        a.append(ours())
        b.append(yardstick())
    return a, b


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


PYCACHE = Path(tempfile.gettempdir()) / "runai-tui-bench-pycache"


def child_env(pycache: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment for measured children: this tree first on the path, and bytecode
    caching on (under `pycache`, outside the tree) so start-up is measured as users see it,
    even where PYTHONDONTWRITEBYTECODE is set for the test runs."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache or PYCACHE)
    env.update(extra)
    return env


@dataclass
class Run:
    wall: float  # seconds
    code: int  # exit code
    rss: int  # peak resident memory of the child, bytes
    cpu: float  # user + system seconds of the child
    stdout: str = ""  # with stdout=subprocess.PIPE (small outputs only: read after exit)


def timed_run(argv: Sequence[str], env: dict[str, str], **kwargs: Any) -> Run:
    """Run `argv` to completion and measure it (wall, CPU and peak RSS from wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(argv),
        env=env,
        stdout=kwargs.pop("stdout", subprocess.DEVNULL),
        stderr=kwargs.pop("stderr", subprocess.DEVNULL),
        **kwargs,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    if proc.stdout:
        proc.stdout.close()
    return Run(wall, proc.returncode, usage.ru_maxrss * 1024, cpu, out)  # ru_maxrss: KiB


def venv_script(name: str) -> list[str]:
    """argv prefix of an installed console script of this interpreter's environment."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    module = {"runai-tui": "runai_tui.cli", "runai-local": "runai_local.cli"}[name]
    return [sys.executable, "-m", module]
