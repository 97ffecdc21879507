"""End to end: the installed `runai-tui` in a real pseudo-terminal on the real local cluster.
A listed job that goes from Running to Completed raises a notification and rings the terminal
(BEL, OSC 9, OSC 777) through the real driver; with `notify = false` only the notification."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pexpect
import pytest

from runai_tui.runai.backend import select_backend
from runai_tui.runai.client import RunaiClient
from runai_tui.shapes.errors import RunaiError
from tests.e2e.test_tui_pty import COLS, ROWS, RUNAI_TUI, Terminal

RING = b"\x07\x1b]9;runai-tui: job %s completed\x07\x1b]777;notify;runai-tui;job %s completed\x07"


def submit_gated(client: RunaiClient, name: str, gate: Path) -> None:
    body = f'while [ ! -e "{gate}" ]; do sleep 0.05; done'
    client.submit(["runai", "training", "pytorch", "submit", name, "--command", "--",
                   "sh", "-c", body])  # fmt: skip


def run_until_the_word(name: str, gate: Path, cwd: Path) -> bytes:
    """The TUI on a pty: wait for `name` Running, open the gate, wait for the notification."""
    env = {**os.environ, "TERM": "xterm-256color", "RUNAI_TUI_BACKEND": "local", "LANG": "C.UTF-8"}
    env.pop("NO_COLOR", None)
    child = pexpect.spawn(str(RUNAI_TUI), ["--refresh", "0.3"], env=env, cwd=str(cwd),
                          dimensions=(ROWS, COLS))  # fmt: skip
    term = Terminal(child)
    try:
        term.wait(lambda t: name in t and "Running" in t, f"{name} listed as Running")
        gate.touch()
        term.wait(lambda t: f"job {name} completed" in t, "the notification")
        term.send("q")
        child.expect(pexpect.EOF, timeout=60)
        term.raw.extend(child.before or b"")
        return bytes(term.raw)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.close(force=True)


@pytest.mark.slow
def test_a_job_that_ends_rings_the_terminal_unless_notify_is_false(tmp_path: Path) -> None:
    client = RunaiClient(select_backend("local"), timeout=30)
    try:
        submit_gated(client, "ring-on", tmp_path / "gate-on")
        raw = run_until_the_word("ring-on", tmp_path / "gate-on", tmp_path)
        assert RING % (b"ring-on", b"ring-on") in raw

        config = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("notify = false\n")
        submit_gated(client, "ring-off", tmp_path / "gate-off")
        raw = run_until_the_word("ring-off", tmp_path / "gate-off", tmp_path)
        assert b"]777;" not in raw and b"]9;" not in raw
    finally:
        for job in client.list_jobs():
            with contextlib.suppress(RunaiError):
                client.delete(job.name)
