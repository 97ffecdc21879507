"""The first job list is fetched while the app loads (tui/launch.py): the jobs screen shows it
without a second `training list` call, a failure of it is reported like any refresh, and the
backend check (version, whoami) runs once the first list is in."""

from __future__ import annotations

import json

from runai_tui.runai.backend import Backend
from runai_tui.runai.client import RunaiClient
from runai_tui.tui.launch import start_first_list
from runai_tui.tui.widgets.header import StatusHeader
from runai_tui.tui.widgets.job_table import JobTable
from tests.fakes import fake_runai, rule
from tests.tui.fakeclient import NOW, RecordingRunner
from tests.tui.helpers import RecordingApp, notifications, wait_for

WORKLOADS = json.dumps(
    {
        "workloads": [
            {"name": f"early-{i}", "phase": "Running", "createdAt": "2026-11-22T11:00:00Z"}
            for i in range(3)
        ],
        "next": "",
    }
)


async def test_first_list_is_shown_without_a_second_call(tmp_path) -> None:
    fake = fake_runai(
        tmp_path,
        [
            rule("version", stdout="runai version v2.25.3\n"),
            rule("whoami", stdout="alice@example.com\n"),
            rule("training", "list", stdout=WORKLOADS),
        ],
    )
    client = RunaiClient(Backend("runai", [str(fake.path)]), timeout=30)
    first = start_first_list(client)
    app = RecordingApp(
        client, refresh_interval=0, runner=RecordingRunner(), clock=lambda: NOW, first_list=first
    )
    async with app.run_test(size=(110, 20)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 3, "the first list shown")
        header = app.screen.query_one(StatusHeader)
        await wait_for(pilot, lambda: header.logged_in is True, "the backend check after it")
        assert header.backend == "runai 2.25.3"
    lists = [call for call in fake.calls() if call[:2] == ["training", "list"]]
    assert len(lists) == 1  # refresh is off: only the early fetch listed jobs
    assert app.first_list is None  # taken once


async def test_a_failed_first_list_is_reported_like_a_refresh(tmp_path) -> None:
    fake = fake_runai(
        tmp_path,
        [
            rule("version", stdout="runai version v2.25.3\n"),
            rule("whoami", stderr="Error: token has expired, please log in again\n", exit=1),
            rule("training", "list", stderr="Error: token has expired\n", exit=1),
        ],
    )
    client = RunaiClient(Backend("runai", [str(fake.path)]), timeout=30)
    app = RecordingApp(
        client,
        refresh_interval=0,
        runner=RecordingRunner(),
        clock=lambda: NOW,
        first_list=start_first_list(client),
    )
    async with app.run_test(size=(110, 20)) as pilot:
        header = app.screen.query_one(StatusHeader)
        await wait_for(pilot, lambda: header.error, "the banner")
        assert "not logged in" in header.error
        assert any("not logged in" in note for note in notifications(app))
        assert app.screen.query_one(JobTable).row_count == 0
