"""Every test gets its own XDG dirs, so local-cluster state, user profiles and PVCs never leak
(the cache alone is shared: `isolated_xdg` says why)."""

from __future__ import annotations

import compileall
import os
import re
import signal
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
WHOLE_MODULE_SLOW = re.compile(r"^pytestmark = pytest\.mark\.slow\b", re.MULTILINE)


@pytest.fixture(autouse=True)
def isolated_xdg(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path_factory.mktemp("xdg")
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        path = root / var.lower()
        path.mkdir()
        monkeypatch.setenv(var, str(path))
    # The cache alone is shared by a worker's tests, as on a user's machine: it holds what the
    # installed CLI answered (`--help`, `version`), keyed by the executable's path, mtime and
    # size, so a test's fake `runai` still gets its own entry, while runai-local is asked once
    # per worker instead of once per test (about 280 processes of 0.07 CPU-s in the suite).
    shared_cache = tmp_path_factory.getbasetemp() / "xdg_cache_home-shared"
    shared_cache.mkdir(exist_ok=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared_cache))
    # Tests choose their backend explicitly; a developer's settings must not leak in.
    for var in ("RUNAI_TUI_BACKEND", "RUNAI_TUI_RUNAI", "RUNAI_TUI_RUNAI_CLI", "RUNAI_LOCAL_GPUS"):
        monkeypatch.delenv(var, raising=False)
    # Nor the terminal's: NO_COLOR (set on some CI and GPU machines) makes Textual paint in grey,
    # and the snapshots and screenshots are in colour.
    monkeypatch.delenv("NO_COLOR", raising=False)
    return root


@pytest.fixture
def repo_root() -> Path:
    return REPO


def pytest_configure(config: pytest.Config) -> None:
    """The suite writes its bytecode, whatever PYTHONDONTWRITEBYTECODE says.

    The suite starts hundreds of runai-tui, runai-local and trainer processes; with that
    variable set none of them writes its bytecode, so each compiled the project's modules again
    (a runai-tui command: 0.26 CPU-seconds against 0.20), and every xdist worker rewrote the
    asserts of every test module as it collected (3 of its 8 CPU-seconds of collection, each run).
    Python reads bytecode whatever the variable says. The controller compiles the project once,
    before xdist's workers start, and lifts the variable for them and for what they start."""
    if hasattr(config, "workerinput"):
        return
    if sys.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE"):
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        sys.dont_write_bytecode = False
        for package in ("runai_tui", "runai_local", "trainer", "tests"):
            compileall.compile_dir(REPO / package, quiet=1)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under `-m "not slow"` (`make check`), a module marked slow as a whole is not imported: its
    tests would all be deselected, and each xdist worker would import it (and rewrite its
    asserts) for nothing. The mark is read from the module's text, as it is written there."""
    if config.getoption("markexpr") != "not slow" or not collection_path.name.startswith("test_"):
        return None
    if collection_path.suffix != ".py":
        return None
    text = collection_path.read_text(encoding="utf-8")
    return True if WHOLE_MODULE_SLOW.search(text) else None


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Ctrl-C interrupts, as at a terminal, in every process the suite starts. A shell starts a
    background job (`make test &`, a CI runner's step) with SIGINT ignored; every process
    inherits that, and the tests that press Ctrl-C on `logs -f` or `top --watch` would then
    wait on a command that rightly ignores it. A caught signal resets to the default in a
    child; an ignored one stays ignored."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject.toml): two workers more than this process may use cores. Much of the
    suite waits on real processes (a pod starting, a poll's pause, a CPU-throttled rank, a
    loader held stopped), so with one worker a core a third of the CPU sat idle: on 2 cores
    pytest took 476 s with 2 workers and 369 s with 3. With this
    wave's waiting modules (the throttled node, the rank figures, the wire, the compile cache)
    a fourth kept the cores 93% busy: 634 s against 664 s with three, the same tree."""
    return len(os.sched_getaffinity(0)) + 2


# The longest modules, longest first: by wall time in whole-suite runs (4 workers; the clean
# clone's durations, and each module in a cpuacct cgroup of its own: benchmarks/suite_modules.py),
# CPU-seconds beside. A module that mostly waits (a throttled rank, a held loader, a compile)
# goes early too: its worker idles while the others use the cores. Re-measure when a real run is
# added or cut: a long module handed out late is the suite's tail. Each module once.
LONGEST_FIRST = (
    "tests/local/test_resubmit_throttled_node.py",  # 36 CPU-s in 131-143 s: rank 1 at 15% of a core
    "tests/local/test_recovery.py",  # 62 CPU-s: a rank killed, a pod killed, a preemption
    "tests/local/test_wire_job.py",  # 51 CPU-s in 200-212 s: a rank on a node at 8%
    "tests/trainer/test_ddp.py",  # 90 CPU-s: the reference, a stopped run and its resume, the bf16
    # hook against the reference, two formats
    "tests/trainer/test_rank_figures.py",  # 33 CPU-s in 116 s: a loader held 12 s a cycle
    "tests/local/test_unattended.py",  # 55 CPU-s: a night: a run killed, a resumed run, one failure
    "tests/local/test_chaos.py",  # 50 CPU-s in 98 s: a chaos schedule, two short runs
    "tests/tui/test_gloo_job_health.py",  # 37 CPU-s
    "tests/trainer/test_fast_path.py",  # 22 CPU-s in 91-107 s: two inductor compiles
    "tests/trainer/test_finite_steps.py",  # 37 CPU-s: the grid and the 2-rank bf16 run
    "tests/trainer/test_shards_ddp.py",  # 43 CPU-s
    "tests/local/test_sweep.py",  # 53 CPU-s: three one-pod jobs
    "tests/local/test_through_runai_tui.py",  # 30 CPU-s
    "tests/trainer/test_comm_hooks.py",  # 30 CPU-s: PowerSGD's run and its resume
    "tests/local/test_resubmit_small_shm.py",  # 17 CPU-s
    "tests/local/test_hang_rank.py",
    "tests/hang/test_gloo_hang.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest modules go first (LONGEST_FIRST), then the other modules that hold a slow test
    (a real training run, a real terminal), then the rest.

    The suite's workers take whole modules (`--dist loadscope`, in pyproject.toml), in the order
    they are collected; a module of one 70 s training run that is handed out last runs alone
    while the other workers idle. Longest first keeps them busy to the end."""
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    rank = {module: i for i, module in enumerate(LONGEST_FIRST)}

    def order(item: pytest.Item) -> tuple[int, bool]:
        module = item.nodeid.split("::")[0]
        return rank.get(module, len(rank)), module not in slow

    items.sort(key=order)  # stable: else as collected
