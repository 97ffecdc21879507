"""Marking rows and acting on all marked jobs at once, on the real local cluster: one dialog
lists them, each job's outcome is the cluster's, the unmarked job is untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from runai_tui.runai.client import RunaiClient
from runai_tui.shapes.models import Phase
from runai_tui.tui.screens.confirm import ConfirmDialog
from runai_tui.tui.widgets.job_table import JobTable
from tests.tui.fakeclient import FakeClient, make_job
from tests.tui.helpers import RecordingApp, notifications, wait_for

pytestmark = pytest.mark.slow  # the app over jobs on the local cluster


def submit(client: RunaiClient, name: str, gate: Path) -> None:
    wait = f'while [ ! -e "{gate}" ]; do sleep 0.05; done'
    argv = ["runai", "training", "pytorch", "submit", name, "--workers", "0"]
    client.submit([*argv, "--command", "--", "sh", "-c", wait])


def phases(client: RunaiClient) -> dict[str, Phase]:
    return {job.name: job.phase for job in client.list_jobs()}


async def mark(pilot, table: JobTable, *names: str) -> None:
    for name in names:
        assert table.select_name(name)
        await pilot.press("space")
    assert table.marked() == sorted(names, key=table.visible_names().index)


async def test_suspend_resume_and_delete_the_marked_jobs(local_client, tmp_path: Path) -> None:
    for name in ("bulk-a", "bulk-b", "bulk-c"):
        submit(local_client, name, tmp_path / name)
    app = RecordingApp(local_client, refresh_interval=0.3)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(
            pilot,
            lambda: (
                {j.name: j.phase for j in table.jobs.values()}
                == dict.fromkeys(("bulk-a", "bulk-b", "bulk-c"), Phase.RUNNING)
            ),
            "three running jobs",
        )
        await mark(pilot, table, "bulk-a", "bulk-c")
        await pilot.press("z")
        dialog = app.screen
        assert isinstance(dialog, ConfirmDialog) and app.focused.id == "cancel"
        assert "Suspend these 2 jobs?" in dialog.question
        assert "bulk-a" in dialog.question and "bulk-c" in dialog.question
        assert "bulk-b" not in dialog.question
        await pilot.press("tab", "enter")
        await wait_for(
            pilot,
            lambda: (
                phases(local_client)
                == {"bulk-a": Phase.STOPPED, "bulk-b": Phase.RUNNING, "bulk-c": Phase.STOPPED}
            ),
            "a and c suspended, b untouched",
        )
        await wait_for(pilot, lambda: table.marked() == [], "marks cleared")

        await mark(pilot, table, "bulk-a", "bulk-c")
        await pilot.press("u", "tab", "enter")
        await wait_for(
            pilot,
            lambda: set(phases(local_client).values()) == {Phase.RUNNING},
            "a and c resumed",
        )

        await mark(pilot, table, "bulk-b", "bulk-c")
        await pilot.press("ctrl+d")
        assert isinstance(app.screen, ConfirmDialog)
        assert "Delete these 2 jobs?" in app.screen.question
        await pilot.press("escape")  # cancelled: nothing happens, the marks stay
        assert table.marked() == ["bulk-b", "bulk-c"]
        await pilot.press("ctrl+d", "tab", "enter")
        await wait_for(pilot, lambda: set(phases(local_client)) == {"bulk-a"}, "b and c deleted")
        await wait_for(pilot, lambda: set(table.jobs) == {"bulk-a"}, "the table follows")


async def test_one_failure_is_reported_and_the_others_still_run() -> None:
    client = FakeClient(jobs=[make_job("gone"), make_job("here"), make_job("also")])
    app = RecordingApp(client, refresh_interval=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.loaded)
        table = app.screen.query_one(JobTable)
        await mark(pilot, table, "gone", "here", "also")
        client.jobs = [job for job in client.jobs if job.name != "gone"]  # deleted meanwhile
        await pilot.press("z", "tab", "enter")
        await wait_for(pilot, lambda: any("Suspending" in n for n in notifications(app)))
        assert any("gone" in n and "could not be found" in n for n in notifications(app))
        assert {j.name: j.phase for j in client.jobs} == {
            "here": Phase.STOPPED,
            "also": Phase.STOPPED,
        }
    verbs = [call for call in client.calls if call[0] == "suspend"]
    assert sorted(verbs) == [("suspend", "also"), ("suspend", "gone"), ("suspend", "here")]


async def test_readonly_hides_marking_and_the_bulk_verbs() -> None:
    client = FakeClient(jobs=[make_job("a"), make_job("b")])
    app = RecordingApp(client, refresh_interval=0, readonly=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.loaded)
        table = app.screen.query_one(JobTable)
        await pilot.press("space", "z", "u", "ctrl+d")
        assert table.marked() == [] and not isinstance(app.screen, ConfirmDialog)
        for action in ("delete", "suspend", "resume"):
            assert app.screen.check_action(action, ()) is False
    assert not [call for call in client.calls if call[0] in ("delete", "suspend", "resume")]


async def test_suspend_and_resume_only_where_the_cli_has_them_and_the_state_fits() -> None:
    from runai_tui.runai.installed import Capabilities
    from runai_tui.shapes.cli_generations import parse_override

    client = FakeClient(jobs=[make_job("live"), make_job("broke", Phase.FAILED)])
    app = RecordingApp(client, refresh_interval=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.loaded)
        table = app.screen.query_one(JobTable)
        assert table.select_name("broke")
        assert app.screen.check_action("suspend", ()) is None  # a Failed job: not offered
        assert app.screen.check_action("resume", ()) is None
        await pilot.press("z")
        assert not isinstance(app.screen, ConfirmDialog)
        await mark(pilot, table, "live", "broke")
        await pilot.press("z")
        assert isinstance(app.screen, ConfirmDialog)
        assert "live" in app.screen.question and "broke" not in app.screen.question
        assert any("suspend skips broke (Failed)" in n for n in notifications(app))
        await pilot.press("escape")
        # A CLI whose `training pytorch` has no suspend/resume (2.18-2.20): never offered.
        client.capabilities = Capabilities(["runai"], parse_override("2.19"), "test")
        assert table.select_name("live")
        assert app.screen.check_action("suspend", ()) is False
        assert app.screen.check_action("resume", ()) is False
    assert not [call for call in client.calls if call[0] in ("suspend", "resume")]
