"""Figure `tui-paint`: the TUI's first paint with 50 jobs listed, in a pseudo-terminal, vs a
minimal Textual app (Header, DataTable, Footer) showing the same 50 rows, run the same way.

"First paint" is the time from spawn until every job row is on the screen of a terminal
emulator (pyte) fed with what the program prints. Our app gets its 50 jobs from the fake `runai`
executable of the tests (a real subprocess per call, like a real CLI); the yardstick has them in
memory. Interleaved, warm bytecode cache, medians. Target: at most 1.5x."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, Figure, child_env, interleave, median, venv_script

NAME = "tui-paint"
TITLE = "TUI first paint, 50 jobs, pty"
ROWS, COLS = 70, 120
JOBS = 50
DEADLINE_S = 60.0

MINIMAL_APP = """
from textual.app import App
from textual.widgets import DataTable, Footer, Header

ROWS = {rows!r}


class Minimal(App):
    def compose(self):
        yield Header()
        yield DataTable(cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self):
        table = self.query_one(DataTable)
        table.add_columns("NAME", "STATUS", "PODS", "GPUS", "PROJECT", "AGE")
        table.add_rows(ROWS)


Minimal().run()
"""


def job_names(count: int = JOBS) -> list[str]:
    return [f"bench-job-{i:02d}" for i in range(count)]


def workloads(count: int = JOBS) -> str:
    phases = ["Running", "Pending", "Completed", "Failed"]
    items = [
        {
            "name": name,
            "phase": phases[i % len(phases)],
            "projectName": "team-a",
            "runningPods": 3,
            "requestedPods": 3,
            "allocatedGPUs": 2,
            "createdAt": "2026-11-22T11:00:00Z",
        }
        for i, name in enumerate(job_names(count))
    ]
    return json.dumps({"workloads": items, "next": ""})


def first_paint(argv: list[str], env: dict[str, str], needle: str) -> float:
    """Seconds from spawn until `needle` is on the emulated screen; the child is then killed."""
    import pexpect
    import pyte

    screen = pyte.Screen(COLS, ROWS)
    stream = pyte.ByteStream(screen)
    start = time.perf_counter()
    child = pexpect.spawn(argv[0], argv[1:], env=env, dimensions=(ROWS, COLS), cwd=str(REPO))
    try:
        while True:
            if time.perf_counter() - start > DEADLINE_S:
                raise RuntimeError(f"{argv[0]}: {needle!r} not on screen after {DEADLINE_S:g} s")
            try:
                data = child.read_nonblocking(65536, timeout=0.5)
            except pexpect.TIMEOUT:
                continue
            stream.feed(data)
            if any(needle in line for line in screen.display):
                return time.perf_counter() - start
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.close(force=True)


def measure(repeat: int | None = None, quick: bool = False, **_: Any) -> Figure:
    repeat = repeat or (2 if quick else 7)
    sys.path.insert(0, str(REPO))
    from tests.fakes import fake_runai, rule

    names = job_names()
    needle = names[-1]  # sorted by name: the last row painted means all 50 are on screen
    with tempfile.TemporaryDirectory(prefix="bench-tui-") as tmp:
        root = Path(tmp)
        fake = fake_runai(
            root,
            [
                rule("version", stdout="runai version v2.25.3\n"),
                rule("whoami", stdout="bench@example.com\n"),
                rule("training", "list", stdout=workloads()),
            ],
        )
        rows = [(n, "Running", "3/3", "2", "team-a", "1d") for n in names]
        script = root / "minimal_app.py"
        script.write_text(MINIMAL_APP.format(rows=rows), encoding="utf-8")
        env = child_env(
            root / "pyc",
            TERM="xterm-256color",
            LANG="C.UTF-8",
            XDG_CONFIG_HOME=str(root / "config"),
            XDG_STATE_HOME=str(root / "state"),
            **fake.env(),
        )
        env.pop("NO_COLOR", None)
        ours_argv = venv_script("runai-tui")
        yard_argv = [sys.executable, str(script)]
        a, b = interleave(
            lambda: first_paint(ours_argv, env, needle),
            lambda: first_paint(yard_argv, env, needle),
            repeat,
            warmup=1,
        )
    fig = Figure(
        NAME,
        TITLE,
        "s",
        ours=median(a),
        yardstick=median(b),
        note="yardstick: a minimal Textual app (Header, DataTable, Footer), same 50 rows",
        details={"ours_samples": a, "yardstick_samples": b, "rows": ROWS, "cols": COLS},
    )
    fig.judge("<=", 1.5)
    return fig
