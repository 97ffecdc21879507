"""`W` on the jobs screen arms `watch --recover` on the marked jobs while the app is open: on a
real local-cluster job whose fault no retry cures, the watcher stops, a notification says why and
its lock is freed; describe shows the job's chain of attempts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import Static

from runai_tui.profiles import ProfileStore
from runai_tui.runai import submission
from runai_tui.runai.client import RunaiClient
from runai_tui.tui.screens.describe import DescribeScreen
from runai_tui.workflows import watch_lock
from tests.tui.helpers import RecordingApp, notifications, wait_for

pytestmark = pytest.mark.slow  # the app over jobs on the local cluster

REFUSED = "trainer: error: --dataset openimages needs --data-root DIR (see trainer/README.md)"


async def test_W_arms_the_watch_and_describe_shows_the_chain(
    local_client: RunaiClient, tmp_path: Path
) -> None:
    shipped = tmp_path / "profiles"
    shipped.mkdir()
    (shipped / "tx.yaml").write_text(
        f"job_name: tx\nimage: x:1\nworkers: 1\ncommand: [sh, -c, 'echo \"{REFUSED}\"; exit 2']\n"
    )
    store = ProfileStore([shipped, tmp_path / "user"])
    profile = store.load("tx")
    backend = local_client.backend
    submission.submit(local_client, submission.prepare(profile, backend=backend))
    # Its second attempt, as the watcher records it: the chain is read from the records.
    again = submission.prepare(profile, backend=backend, name="tx-r2", parent="tx", attempt=2)
    submission.submit(local_client, again)
    app = RecordingApp(local_client, store=store, refresh_interval=0.5, save_dir=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        table = app.screen.table
        await wait_for(pilot, lambda: table.select_name("tx-r2"), "the tx-r2 row")
        await wait_for(
            pilot, lambda: local_client.describe("tx-r2").job.phase.value == "Failed", "Failed"
        )
        jobs = app.screen
        await pilot.press("W")
        said = "tx-r2 [attempt 2/3] stopped: not submitted again: trainer-error (no retry helps"

        def notified() -> bool:
            return any(said in note for note in notifications(app))

        await wait_for(pilot, notified, "the watcher's reason")
        assert not [j for j in local_client.list_jobs() if j.name == "tx-r3"]
        armed = jobs.armed  # type: ignore[attr-defined]
        # Once the watch stops, its lock is free again.
        await wait_for(pilot, lambda: not armed.chains, "the watch to end")
        watch_lock.take(None, "tx").release()

        await pilot.press("d")
        assert isinstance(app.screen, DescribeScreen)
        panel = app.screen.query_one("#describe-attempts", Static)
        await wait_for(pilot, lambda: panel.display, "the chain of attempts")
        assert str(panel.render()) == "Attempts: 1 tx (Failed) → 2 tx-r2 (Failed) ◀"


def watch_cell(app: RecordingApp, name: str) -> str:
    table = app.screen.table  # type: ignore[attr-defined]
    if "watch" not in table.shown.labels or name not in table.shown.cells:
        return ""
    return str(table.shown.cells[name]["watch"])


async def test_the_jobs_table_and_describe_show_what_is_watched_and_by_whom(
    local_client: RunaiClient, demo_store: ProfileStore, tmp_path: Path
) -> None:
    """A `watch` process (found by its lock), then the app's own `W`: each watched job's row
    says its attempt and what comes next, describe says who watches it; once the watcher is
    gone, nothing says it is watched."""
    for name in ("demo", "other"):
        prepared = submission.prepare(demo_store.load("demo"), backend=local_client.backend,
                                      name=name)  # fmt: skip
        submission.submit(local_client, prepared)
    argv = [sys.executable, "-m", "runai_tui.cli", "watch", "demo", "--recover", "--interval", "1"]
    watcher = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    app = RecordingApp(local_client, store=demo_store, refresh_interval=0.3, save_dir=tmp_path)
    try:
        async with app.run_test(size=(200, 50)) as pilot:
            table = app.screen.table  # type: ignore[attr-defined]
            await wait_for(pilot, lambda: table.select_name("demo"), "the demo row")
            said = "1/3 on failure or a stall: attempt 2, as the catalogue says"
            await wait_for(pilot, lambda: watch_cell(app, "demo") == said, "demo's WATCH cell")
            assert watch_cell(app, "other") == ""
            # The same chain, whatever the project's spelling: the app's W is refused.
            await pilot.press("W")
            refused = f"job demo is already watched by pid {watcher.pid} "
            await wait_for(pilot, lambda: any(refused in n for n in notifications(app)), refused)
            await pilot.press("d")
            assert isinstance(app.screen, DescribeScreen)
            panel = app.screen.query_one("#describe-attempts", Static)
            await wait_for(pilot, lambda: panel.display, "the watch line")
            assert str(panel.render()).splitlines()[1] == (
                f"Watched by watch (pid {watcher.pid}): attempt 1 of 3 (demo); next: on failure "
                "or a stall: attempt 2, as the catalogue says"
            )
            await pilot.press("escape")
            watcher.kill()
            watcher.wait()
            await wait_for(pilot, lambda: "watch" not in app.screen.table.shown.labels,  # type: ignore[attr-defined]
                           "the WATCH column to go")  # fmt: skip
            # The app's own watch shows the same way.
            app.screen.table.select_name("other")  # type: ignore[attr-defined]
            await pilot.press("W")
            await wait_for(pilot, lambda: watch_cell(app, "other") == said, "other's WATCH cell")
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
