"""Jobs screen flows with an in-process client: refresh loop, selection by key, sorting,
filter, error banner, readonly, delete dialog, exec through the runner, help and palette."""

from __future__ import annotations

import asyncio
import dataclasses

from runai_tui.shapes.errors import ErrorKind, RunaiError
from runai_tui.shapes.models import Phase
from runai_tui.tui.app import RunaiTuiApp
from runai_tui.tui.screens.confirm import ConfirmDialog
from runai_tui.tui.screens.describe import DescribeScreen
from runai_tui.tui.screens.help import HelpScreen
from runai_tui.tui.screens.jobs import JobsScreen
from runai_tui.tui.screens.logs import LogsScreen
from runai_tui.tui.widgets.header import StatusHeader
from runai_tui.tui.widgets.job_table import JobTable
from tests.tui.fakeclient import NOW, FakeClient, RecordingRunner, make_job
from tests.tui.helpers import RecordingApp, notifications, wait_for
from tests.tui.screen_text import screen_text


def make_app(client: FakeClient, **kwargs) -> RecordingApp:
    kwargs.setdefault("refresh_interval", 0)
    kwargs.setdefault("runner", RecordingRunner())
    return RecordingApp(client, clock=lambda: NOW, **kwargs)


async def refreshed(pilot, app: RunaiTuiApp) -> None:
    """Run one refresh and wait for it."""
    before = sum(1 for call in app.client.calls if call[0] == "list")
    app.screen.refresh_jobs()
    await wait_for(pilot, lambda: sum(1 for c in app.client.calls if c[0] == "list") > before)
    await pilot.pause()


async def test_selection_survives_refresh_and_sorting() -> None:
    client = FakeClient(jobs=[make_job("a", age_s=30), make_job("b", age_s=10), make_job("c")])
    app = make_app(client)
    async with app.run_test(size=(100, 20)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        await pilot.press("down")
        assert table.selected_name == "b"
        # A new job sorts above b, c disappears, b changes phase: b stays selected, updated in place.
        client.jobs = [make_job("a"), make_job("aa"), make_job("b", Phase.FAILED, age_s=10)]
        await refreshed(pilot, app)
        assert table.visible_names() == ["a", "aa", "b"]
        assert table.selected_name == "b"
        assert str(table.cell("b", "status")) == "Failed"
        await pilot.press("A")  # newest first
        assert table.visible_names() == ["b", "a", "aa"]
        assert table.selected_name == "b"
        await pilot.press("N", "N")  # name, then name reversed
        assert table.visible_names() == ["b", "aa", "a"]
        assert table.selected_name == "b"
        assert "sort: name ↓" in screen_text(app)


async def test_names_sort_as_people_read_them() -> None:
    client = FakeClient(jobs=[make_job(n) for n in ("t10", "t2", "t1", "t2-b", "t100")])
    app = make_app(client)
    async with app.run_test(size=(100, 20)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 5)
        assert table.visible_names() == ["t1", "t2", "t2-b", "t10", "t100"]
        await pilot.press("N")  # reversed
        assert table.visible_names() == ["t100", "t10", "t2-b", "t2", "t1"]


async def test_a_job_of_another_framework_shows_the_framework_column_while_listed() -> None:
    """`runai training list` lists every framework; the verbs of a TensorFlow job go to its own
    subcommand, so the table says which jobs are not PyTorch, and only while there are some."""
    tf = dataclasses.replace(make_job("tf-job"), framework="TensorFlow")
    client = FakeClient(jobs=[make_job("a"), tf])
    app = make_app(client)
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        await pilot.press("down")
        assert str(table.cell("tf-job", "framework")) == "TensorFlow"
        assert str(table.cell("a", "framework")) == "PyTorch"
        assert "FRAMEWORK" in screen_text(app) and table.selected_name == "tf-job"
        client.jobs = [make_job("a"), make_job("b")]
        await refreshed(pilot, app)
        assert "FRAMEWORK" not in screen_text(app) and table.visible_names() == ["a", "b"]


async def test_periodic_refresh_never_overlaps() -> None:
    active = 0
    peak = 0
    client = FakeClient(jobs=[make_job("a")])
    original = client.alist_jobs

    async def slow_list():
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        try:
            await asyncio.sleep(0.05)  # slower than the refresh interval
            return await original()
        finally:
            active -= 1

    client.alist_jobs = slow_list
    app = make_app(client, refresh_interval=0.01)
    async with app.run_test(size=(100, 20)) as pilot:
        await wait_for(pilot, lambda: sum(1 for c in client.calls if c[0] == "list") >= 5)
        await pilot.press("r", "r")
        await wait_for(pilot, lambda: sum(1 for c in client.calls if c[0] == "list") >= 8)
    assert peak == 1


async def test_filter_narrows_and_escape_clears() -> None:
    client = FakeClient(jobs=[make_job("alpha"), make_job("beta"), make_job("gamma", Phase.FAILED)])
    app = make_app(client)
    async with app.run_test(size=(100, 20)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        await pilot.press("slash", "b", "e")
        assert table.visible_names() == ["beta"]
        await pilot.press("enter")
        assert table.has_focus
        await pilot.press("slash")
        app.screen.query_one("#jobs-filter").value = "failed"  # status matches too
        await pilot.pause()
        assert table.visible_names() == ["gamma"]
        await pilot.press("escape")
        assert table.row_count == 3
        await pilot.press("slash", *"qn?")  # keys typed into the filter are text, not actions
        assert app.is_running and isinstance(app.screen, JobsScreen)
        assert app.screen.query_one("#jobs-filter").value == "qn?"


async def test_backend_error_shows_banner_and_fix_and_app_keeps_running() -> None:
    client = FakeClient(jobs=[make_job("a")])
    client.fail_list = RunaiError(
        ErrorKind.NOT_LOGGED_IN, "runai: you are not logged in", "run `runai login`"
    )
    app = make_app(client)
    async with app.run_test(size=(100, 20)) as pilot:
        header = app.screen.query_one(StatusHeader)
        await wait_for(pilot, lambda: header.error)
        assert "not logged in" in header.error and "runai login" in header.error
        assert any("fix: run `runai login`" in note for note in notifications(app))
        assert "✖ runai: you are not logged in — run `runai login`" in screen_text(app)
        count = len(notifications(app))
        await refreshed(pilot, app)  # the same failure again: banner stays, no new toast
        assert len(notifications(app)) == count
        client.fail_list = None
        await refreshed(pilot, app)
        assert header.error == ""
        assert app.screen.query_one(JobTable).row_count == 1
        assert app.is_running


async def test_header_shows_backend_project_and_login() -> None:
    app = make_app(FakeClient(jobs=[]))
    async with app.run_test(size=(100, 20)) as pilot:
        header = app.screen.query_one(StatusHeader)
        await wait_for(pilot, lambda: header.logged_in is True)
        text = screen_text(app)
        assert "LOCAL" in text and "project team-a" in text and "user alice" in text


async def test_readonly_hides_mutations() -> None:
    client = FakeClient(jobs=[make_job("a")])
    app = make_app(client, readonly=True)
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 1)
        screen = app.screen
        for action in ("shell", "delete", "new_job"):
            assert screen.check_action(action, ()) is False
        assert screen.check_action("logs", ()) is True
        # The footer paints after the first row on a busy host: wait for it, then read it.
        await wait_for(pilot, lambda: "Logs" in screen_text(app).splitlines()[-1])
        footer = screen_text(app).splitlines()[-1]
        assert "Delete" not in footer and "Shell" not in footer
        assert "READ-ONLY" in screen_text(app)
        await pilot.press("ctrl+d", "s", "n")
        assert isinstance(app.screen, JobsScreen)
        assert app.runner.runs == []


async def test_exec_disabled_on_finished_job() -> None:
    client = FakeClient(jobs=[make_job("done", Phase.COMPLETED)])
    app = make_app(client)
    async with app.run_test(size=(120, 20)) as pilot:
        await wait_for(pilot, lambda: app.screen.query_one(JobTable).row_count == 1)
        assert app.screen.check_action("shell", ()) is None  # shown greyed, not hidden
        # The footer paints after the first row on a busy host: wait for it.
        await wait_for(pilot, lambda: "Shell" in screen_text(app).splitlines()[-1])
        await pilot.press("s")
        assert app.runner.runs == []


async def test_delete_dialog_defaults_to_cancel() -> None:
    client = FakeClient(jobs=[make_job("victim"), make_job("other")])
    app = make_app(client)
    async with app.run_test(size=(100, 20)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        await pilot.press("down")
        assert table.selected_name == "victim"
        await pilot.press("ctrl+d")
        dialog = app.screen
        assert isinstance(dialog, ConfirmDialog)
        assert "victim" in dialog.question
        assert app.focused.id == "cancel"
        await pilot.press("enter")  # the reflex Enter cancels
        assert isinstance(app.screen, JobsScreen)
        assert ("delete", "victim") not in client.calls
        await pilot.press("ctrl+d", "tab", "enter")
        await wait_for(pilot, lambda: table.row_count == 1)
        assert ("delete", "victim") in client.calls
        assert table.visible_names() == ["other"]


async def test_exec_goes_through_the_runner_and_refresh_resumes() -> None:
    client = FakeClient(jobs=[make_job("a")])
    app = make_app(client)
    async with app.run_test(size=(100, 20)) as pilot:
        await wait_for(pilot, lambda: app.screen.query_one(JobTable).row_count == 1)
        lists = sum(1 for c in client.calls if c[0] == "list")
        await pilot.press("s")
        assert app.runner.runs == [client.exec_argv("a")]
        await wait_for(pilot, lambda: sum(1 for c in client.calls if c[0] == "list") > lists)
        assert any("exited with code 0" in note for note in notifications(app))


async def test_describe_and_logs_open_from_keys() -> None:
    client = FakeClient(jobs=[make_job("a")], logs={"a-master-0": ["hello from a"]})
    app = make_app(client)
    async with app.run_test(size=(100, 50)) as pilot:
        await wait_for(pilot, lambda: app.screen.query_one(JobTable).row_count == 1)
        await pilot.press("enter")
        assert isinstance(app.screen, DescribeScreen)
        await wait_for(pilot, lambda: app.screen.detail is not None)
        await pilot.pause()
        text = screen_text(app)
        assert "a-master-0" in text and "Submitted" in text and "no effect" in text
        await pilot.press("w")
        await pilot.pause()
        assert '"phase": "Running"' in screen_text(app)
        await pilot.press("escape", "l")
        assert isinstance(app.screen, LogsScreen)
        await wait_for(pilot, lambda: "hello from a" in screen_text(app))
        await pilot.press("escape")
        assert isinstance(app.screen, JobsScreen)


async def test_help_lists_keys_and_palette_runs_actions() -> None:
    client = FakeClient(jobs=[make_job("a")], logs={"a-master-0": ["x"]})
    app = make_app(client)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.query_one(JobTable).row_count == 1)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for key, action in [
            ("ctrl+d", "Delete"),
            ("d/enter", "Describe"),
            ("/", "Filter"),
            ("q", "Quit"),
            ("p", "Profiles"),
        ]:
            assert key in text and action in text
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        await pilot.press(*"logs")
        await wait_for(pilot, lambda: "key l" in screen_text(app), "palette hit")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LogsScreen), "logs screen")


async def test_unexpected_failure_is_reported_not_fatal() -> None:
    client = FakeClient(jobs=[make_job("a")])

    attempts = []

    async def broken() -> list:
        attempts.append(1)
        raise ValueError("unexpected shape from the backend")

    client.alist_jobs = broken
    app = make_app(client)
    async with app.run_test(size=(100, 20)) as pilot:
        await wait_for(pilot, lambda: any("unexpected shape" in n for n in notifications(app)))
        assert app.is_running and isinstance(app.screen, JobsScreen)
        await pilot.press("r")  # the same failure again is not announced again
        await wait_for(pilot, lambda: len(attempts) >= 2)
        await pilot.press("r")
        await wait_for(pilot, lambda: len(attempts) >= 3)
        await pilot.pause()
        assert sum("unexpected shape" in n for n in notifications(app)) == 1


async def test_delete_from_describe_returns_to_jobs() -> None:
    client = FakeClient(jobs=[make_job("a"), make_job("b")])
    app = make_app(client)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        await pilot.press("d")
        assert isinstance(app.screen, DescribeScreen)
        await pilot.press("ctrl+d")
        assert isinstance(app.screen, ConfirmDialog) and app.focused.id == "cancel"
        await pilot.press("tab", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen))
        assert ("delete", "a") in client.calls
        await refreshed(pilot, app)
        assert table.visible_names() == ["b"]
