"""The submit screen shows, copies (ctrl+y) and submits the command `runai-tui submit --dry-run
--json` prints for the same profile and overrides, the backend's executable and the submission
record included; the preview folds the record with a visible marker, the copy never does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import Input

from runai_tui.profiles import ProfileStore, shipped_profiles_dir
from runai_tui.runai.argv import display_argv, quote_word
from runai_tui.runai.backend import select_backend
from runai_tui.tui.app import RunaiTuiApp
from runai_tui.tui.screens.submit import PREVIEW_FOLD, SubmitScreen
from tests.tui.fakeclient import NOW, FakeClient, RecordingRunner
from tests.tui.helpers import wait_for

RUNAI_TUI = shutil.which("runai-tui", path=str(Path(sys.executable).parent)) or "runai-tui"
SHIPPED = sorted(p.stem for p in shipped_profiles_dir().glob("*.yaml"))


def dry_run_argv(*args: str) -> list[str]:
    out = subprocess.run(
        [RUNAI_TUI, *args, "--dry-run", "--json"],
        capture_output=True, text=True, timeout=60, env=os.environ,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout)["argv"])


@pytest.mark.parametrize("profile", SHIPPED)
async def test_preview_copy_and_submit_are_the_dry_runs_command(
    tmp_path: Path, profile: str
) -> None:
    # The app's project is the client's (team-a), as `-p team-a` gives the CLI.
    argv = dry_run_argv("-p", "team-a", "submit", "--profile", profile, "--set", "env.EXTRA=a b")
    # The backend the dry run selected (the same environment): its executable starts the argv.
    client = FakeClient(backend=select_backend(None))
    store = ProfileStore([shipped_profiles_dir(), tmp_path / "user"])
    app = RunaiTuiApp(
        client, store=store, runner=RecordingRunner(), refresh_interval=0, clock=lambda: NOW
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: getattr(app.screen, "loaded", False), "jobs loaded")
        submit = SubmitScreen(profile)
        app.push_screen(submit)
        await wait_for(pilot, lambda: submit.argv is not None, "the command")
        submit.query_one("#in-env", Input).value = 'EXTRA="a b"'
        await wait_for(pilot, lambda: submit.argv == argv, "the command with the override")
        shown = str(submit.query_one("#submit-command").render())
        assert shown == display_argv(argv, fold=PREVIEW_FOLD)
        # The record is cut, said so; every other word is whole.
        [record] = [quote_word(w) for w in argv if w.startswith("runai-tui.io/submission=")]
        cut = len(record) - PREVIEW_FOLD
        assert f" {record[:PREVIEW_FOLD]}…(+{cut} chars) " in shown and shown.count("…(+") == 1
        await pilot.press("ctrl+y")
        assert app.clipboard == display_argv(argv)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any(c[0] == "submit" for c in client.calls), "submitted")
        [call] = [c for c in client.calls if c[0] == "submit"]
        assert call[1] == argv


async def test_a_record_over_its_budget_blocks_the_submit(tmp_path: Path) -> None:
    client = FakeClient()
    store = ProfileStore([shipped_profiles_dir(), tmp_path / "user"])
    app = RunaiTuiApp(
        client, store=store, runner=RecordingRunner(), refresh_interval=0, clock=lambda: NOW
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: getattr(app.screen, "loaded", False), "jobs loaded")
        submit = SubmitScreen("retinanet-tcp")
        app.push_screen(submit)
        await wait_for(pilot, lambda: submit.argv is not None, "the command")
        submit.query_one("#in-env", Input).value = "BIG=" + "x" * 20_000
        await wait_for(pilot, lambda: submit.argv is None, "the refusal")
        problems = str(submit.query_one("#submit-problems").render())
        assert problems.startswith("the submission record (runai-tui.io/submission) would be ")
        assert "over its 16384-byte budget" in problems and "env (" in problems
        assert not str(submit.query_one("#err-env").render()).strip()  # no one field's fault
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not [c for c in client.calls if c[0] == "submit"]
