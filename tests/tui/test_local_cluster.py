"""The main flows on the real local cluster: submit from a profile (validation in place, the
new job selected), describe with training progress, logs (literal, follow, save), exec round
trip through the runner, delete."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from runai_tui.runai.command import build_submit_argv
from runai_tui.shapes.models import Phase
from runai_tui.tui.screens.confirm import ConfirmDialog
from runai_tui.tui.screens.describe import DescribeScreen
from runai_tui.tui.screens.jobs import JobsScreen
from runai_tui.tui.screens.logs import LogsScreen
from runai_tui.tui.screens.submit import SubmitScreen
from runai_tui.tui.widgets.job_table import JobTable
from runai_tui.tui.widgets.log_view import LogView
from runai_tui.tui.widgets.progress import TrainingPanel
from tests.tui.helpers import RecordingApp, notifications, wait_for
from tests.tui.screen_text import screen_text

pytestmark = pytest.mark.slow  # the app over jobs on the local cluster


class PipedShellRunner:
    """Runs the exec argv for real, typing two commands into the pod's shell through a pipe."""

    def __init__(self) -> None:
        self.runs: list[list[str]] = []
        self.output = ""

    def run(self, argv: list[str]) -> int:
        self.runs.append(argv)
        done = subprocess.run(
            argv,
            input=b"echo marker-$((40 + 2)) GREETING=$GREETING\nexit 3\n",
            capture_output=True,
            timeout=60,
        )
        self.output = done.stdout.decode()
        return done.returncode

    def edit(self, path: Path) -> int:
        raise AssertionError("no editing in this test")


async def test_submit_from_profile_with_validation_then_new_job_selected(
    local_client,
    demo_store,
    tmp_path,
) -> None:
    app = RecordingApp(local_client, store=demo_store, refresh_interval=0.5, save_dir=tmp_path)
    async with app.run_test(size=(120, 45)) as pilot:
        await wait_for(pilot, lambda: app.screen.loaded, "first refresh")
        await pilot.press("n")
        submit = app.screen
        assert isinstance(submit, SubmitScreen)
        await wait_for(pilot, lambda: submit.argv is not None, "form loaded")
        # The command as the local cluster is executed: runai-local's own argv.
        executable = local_client.backend.executable
        assert submit.argv[: len(executable) + 3] == [*executable, "training", "pytorch", "submit"]
        assert "pytorch submit demo" in screen_text(app)

        name_box = submit.query_one("#in-job_name")
        name_box.value = "Bad_Name"
        submit.query_one("#in-workers").value = "many"
        submit.query_one("#in-env").value = "NOEQUALS"
        # Validation runs on the change events; wait for all three rather than one pause, so a
        # loaded machine only makes the test slower.
        await wait_for(pilot, lambda: len(submit.errors) >= 3, "three errors shown")
        errors = {
            f: str(submit.query_one(f"#err-{f}").render()) for f in ("job_name", "workers", "env")
        }
        assert "'Bad_Name': expected a Kubernetes DNS-1123 label" in errors["job_name"]
        assert "'many': expected a whole number" in errors["workers"]
        assert "KEY=VALUE" in errors["env"]
        assert submit.check_action("submit", ()) is None
        assert name_box.has_class("-invalid")
        await pilot.press("ctrl+s")
        assert app.screen is submit  # nothing submitted while invalid
        assert "fix the errors" in screen_text(app)

        name_box.value = "demo-tui"
        submit.query_one("#in-workers").value = "1"
        submit.query_one("#in-env").value = "EXTRA=1"
        await wait_for(pilot, lambda: submit.errors == {}, "errors cleared")
        await wait_for(pilot, lambda: "EXTRA=1" in (submit.argv or []), "command rebuilt")
        assert submit.argv[len(executable) :][:4] == ["training", "pytorch", "submit", "demo-tui"]
        assert "EXTRA=1" in submit.argv and "submit demo-tui" in screen_text(app)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen), "back on jobs")
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.selected_name == "demo-tui", "new job selected")
        assert any("Submitted demo-tui" in note for note in notifications(app))


async def test_watch_describe_logs_exec_delete(local_client, demo_store, tmp_path) -> None:
    argv = build_submit_argv(demo_store.load("demo"), "demo-run")
    local_client.submit(argv)
    runner = PipedShellRunner()
    app = RecordingApp(
        local_client, store=demo_store, refresh_interval=0.5, runner=runner, save_dir=tmp_path
    )
    async with app.run_test(size=(120, 45)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(
            pilot,
            lambda: (job := table.jobs.get("demo-run")) and job.phase is Phase.RUNNING,
            "demo-run running",
        )
        assert "LOCAL" in screen_text(app)

        # describe: pods, events and the training progress read from the master's log
        await pilot.press("d")
        describe = app.screen
        assert isinstance(describe, DescribeScreen)
        panel = describe.query_one(TrainingPanel)
        await wait_for(pilot, lambda: panel.progress.step == 5, "metrics on describe")
        await pilot.pause()
        text = screen_text(app)
        assert "demo-run-master-0" in text and "demo-run-worker-0" in text
        assert "step 5 · epoch 0 · loss 0.5000" in text
        await pilot.press("escape")

        # logs: literal text, follow, save
        await pilot.press("l")
        logs = app.screen
        assert isinstance(logs, LogsScreen)
        view = logs.query_one(LogView)
        await wait_for(pilot, lambda: "ready" in view.lines, "log lines")
        await pilot.pause()
        text = screen_text(app)
        assert "[bold red]not markup[/] ^[[2J ^[]0;pwned^G end" in text
        assert "FOLLOWING" in text and logs.pod == "demo-run-master-0"
        assert logs.query_one(TrainingPanel).progress.step == 5
        await pilot.press("ctrl+s")
        await pilot.press("enter")  # accept the proposed path
        saved = tmp_path / "demo-run-demo-run-master-0.log"
        await wait_for(pilot, saved.exists, "saved log")
        assert saved.read_text().splitlines() == list(view.lines)
        await pilot.press("o")  # the worker pod's log
        await wait_for(pilot, lambda: logs.pod == "demo-run-worker-0" and "ready" in view.lines)
        await pilot.press("escape")

        # exec: the runner gets the client's argv and really talks to the pod's shell
        await pilot.press("s")
        assert runner.runs == [local_client.exec_argv("demo-run", pod=None, tty=True)]
        assert "marker-42 GREETING=hi" in runner.output
        assert any("exited with code 3" in note for note in notifications(app))
        assert isinstance(app.screen, JobsScreen)

        # delete through the dialog
        await pilot.press("ctrl+d")
        assert isinstance(app.screen, ConfirmDialog) and app.focused.id == "cancel"
        await pilot.press("tab", "enter")
        await wait_for(pilot, lambda: "demo-run" not in table.jobs, "job deleted")
    assert all(job.name != "demo-run" for job in local_client.list_jobs())
