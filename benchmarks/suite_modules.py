"""Where the test suite's CPU goes, per module: a pytest plugin and its report.

    .venv/bin/python -m pytest -p benchmarks.suite_modules        # writes out/suite-modules.tsv
    .venv/bin/python -m benchmarks.suite_modules [out/suite-modules.tsv]   # the table, largest first

Each xdist worker moves itself into a cgroup v1 `cpuacct` group of its own for each test module
it runs; every process the module's tests start (trainer ranks, the local cluster's detached
supervisors, runai-tui commands) is born in that group, so the group's usage is the module's CPU,
whatever else runs. A module's row: CPU-seconds (user and system), the system part of them, wall
seconds on its worker, the worker. Needs /sys/fs/cgroup/cpuacct writable (root, cgroup v1);
without it the plugin says so once and measures nothing. A measurement tool, not part of
`make test`."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

CPUACCT = Path("/sys/fs/cgroup/cpuacct")
OUT = Path(os.environ.get("SUITE_MODULES_OUT", "out/suite-modules.tsv"))


class ModuleMeter:
    """The module running now, its cgroup and its start."""

    def __init__(self) -> None:
        self.module = ""
        self.group: Path | None = None
        self.started = 0.0

    def enter(self, module: str) -> None:
        self.leave()
        group = CPUACCT / f"suite-{os.getpid()}-{abs(hash(module)) % 10**9}"
        group.mkdir(exist_ok=True)
        (group / "cgroup.procs").write_text(str(os.getpid()))
        self.module, self.group, self.started = module, group, time.monotonic()

    def leave(self) -> None:
        if self.group is None:
            return
        (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))  # out, before reading
        cpu = int((self.group / "cpuacct.usage").read_text()) / 1e9
        ticks = dict(
            line.split() for line in (self.group / "cpuacct.stat").read_text().splitlines()
        )
        system = int(ticks["system"]) / os.sysconf("SC_CLK_TCK")
        wall = time.monotonic() - self.started
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        OUT.parent.mkdir(parents=True, exist_ok=True)
        with OUT.open("a", encoding="utf-8") as out:
            out.write(f"{self.module}\t{cpu:.1f}\t{wall:.1f}\t{worker}\t{system:.1f}\n")
        self.group = None


_meter = ModuleMeter()
_usable = os.access(CPUACCT / "cgroup.procs", os.W_OK)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    module = item.nodeid.split("::")[0]
    if _usable and module != _meter.module:
        _meter.enter(module)


def pytest_sessionfinish(session: pytest.Session) -> None:
    _meter.leave()


def pytest_report_header(config: pytest.Config) -> str:
    if _usable:
        return f"suite_modules: each module's CPU-seconds to {OUT}"
    return f"suite_modules: {CPUACCT} is not writable here: nothing measured"


def report(path: Path) -> str:
    """The rows of PATH, largest CPU first, and the total."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        module, cpu, wall, worker, *system = line.split("\t")  # older files have no system column
        rows.append((float(cpu), float(system[0]) if system else 0.0, float(wall), worker, module))
    rows.sort(reverse=True)
    lines = [f"{'CPU-s':>7} {'sys':>6} {'wall s':>7} {'worker':>6}  module"]
    lines += [
        f"{cpu:7.1f} {system:6.1f} {wall:7.1f} {worker:>6}  {module}"
        for cpu, system, wall, worker, module in rows
    ]
    total, total_sys = sum(r[0] for r in rows), sum(r[1] for r in rows)
    lines.append(f"{total:7.1f} CPU-s ({total_sys:.1f} of them system) in {len(rows)} modules")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
