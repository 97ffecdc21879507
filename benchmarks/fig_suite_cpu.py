"""Figure `suite-cpu`: the whole test suite's CPU-seconds, a ratchet against the last recorded run.

The suite runs as `make test` runs it (pytest, every test, its xdist workers) with the
benchmarks.suite_modules plugin, which puts each test module in a cpuacct cgroup of its own, so
every process a module starts is counted; the figure is the sum over the modules. The yardstick
is the figure recorded by the last run, in benchmarks/suite_cpu.json (with its commit and date);
a run that is not --quick records its own there, to be committed with the change it measured.
Target: at most 10% over the last recorded run; a change that goes past it says why in its
commit (docs/performance.md). Where the cgroups cannot be made (not root, cgroup v2), pytest's
own CPU and its waited-for children's are counted instead, and recorded as such: a figure is
only compared with one counted the same way."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, Figure

NAME = "suite-cpu"
TITLE = "the test suite's CPU-seconds, against the last recorded run"
RECORD = REPO / "benchmarks" / "suite_cpu.json"
CEILING = 1.10  # now / last
CGROUPS = "cgroups"  # every process of each module, benchmarks/suite_modules.py
RUSAGE = "rusage"  # pytest and the children it waited for


def modules_cpu(tsv: str) -> float:
    """The CPU-seconds of the suite_modules rows (module, CPU-s, wall, worker[, system])."""
    return sum(float(line.split("\t")[1]) for line in tsv.splitlines() if line.strip())


def read_record(path: Path = RECORD) -> dict[str, Any] | None:
    """The last recorded run: {"cpu_s", "method", "commit", "date"}, or None."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("cpu_s") else None


def write_record(cpu_s: float, method: str, path: Path = RECORD) -> None:
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    data = {
        "cpu_s": round(cpu_s, 1),
        "method": method,
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def judge(now: float, method: str, last: dict[str, Any] | None) -> Figure:
    """The figure: now against the last record; met while now is at most CEILING of it. No
    record, or one counted another way, leaves it unjudged and says so."""
    fig = Figure(NAME, TITLE, "CPU-s", ours=now, target=f"ratio <= {CEILING:g} (+10%)")
    if last is None:
        fig.note = "no run recorded yet: this one is recorded"
        return fig
    if last.get("method") != method:
        fig.note = f"the last run was counted by {last.get('method')}, this one by {method}"
        return fig
    fig.yardstick = float(last["cpu_s"])
    fig.met = now <= CEILING * fig.yardstick
    change = (now / fig.yardstick - 1) * 100
    fig.note = (
        f"now {now:.1f} CPU-s, last {fig.yardstick:.1f} ({last.get('commit', '?')}, "
        f"{last.get('date', '?')}): {change:+.1f}%"
        + ("" if fig.met else "; over +10%: the commit that raised it says why")
    )
    return fig


def run_suite(quick: bool) -> tuple[float, str, int]:
    """Run the suite with the per-module plugin; its CPU-seconds, how they were counted, and
    pytest's exit code. --quick runs one small module (it checks the plumbing, not the suite)."""
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
        tsv = Path(tmp) / "suite-modules.tsv"
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "benchmarks.suite_modules"]
        argv += ["-n", "0", "tests/test_suite_order.py"] if quick else []
        env = dict(os.environ, SUITE_MODULES_OUT=str(tsv))  # as `make test` runs it
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        code = subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL).returncode
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if tsv.is_file() and tsv.read_text(encoding="utf-8").strip():
            return modules_cpu(tsv.read_text(encoding="utf-8")), CGROUPS, code
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used, RUSAGE, code


def measure(quick: bool = False, **_: Any) -> Figure:
    now, method, code = run_suite(quick)
    if code != 0:
        raise RuntimeError(f"the suite failed (pytest exit {code}): its CPU is not a figure")
    if quick:
        fig = judge(now, method, None)
        fig.note = "--quick: one small module, checks the plumbing; nothing recorded"
    else:
        fig = judge(now, method, read_record())
        write_record(now, method)
    fig.details["method"] = method
    return fig
