"""The app on a `runai` backend (the fake `runai` executable, real subprocesses): the header
shows the runai version; a login that expired mid-session is a banner with the fix, and the
jobs come back once the login works again. The app never exits on a backend error."""

from __future__ import annotations

import json

from runai_tui.runai.backend import Backend
from runai_tui.runai.client import RunaiClient
from runai_tui.tui.widgets.header import StatusHeader
from runai_tui.tui.widgets.job_table import JobTable
from tests.fakes import fake_runai, rule
from tests.tui.fakeclient import NOW, RecordingRunner
from tests.tui.helpers import RecordingApp, notifications, wait_for
from tests.tui.screen_text import screen_text

WORKLOADS = json.dumps(
    {
        "workloads": [
            {
                "name": "remote-job",
                "phase": "Running",
                "projectName": "team-a",
                "runningPods": 3,
                "requestedPods": 3,
                "allocatedGPUs": 2,
                "createdAt": "2026-11-22T11:00:00Z",
            }
        ],
        "next": "",
    }
)
EXPIRED = "Error: token has expired, please log in again\n"


async def test_runai_backend_version_expired_login_banner_and_recovery(tmp_path) -> None:
    fake = fake_runai(
        tmp_path,
        [
            rule("version", stdout="runai version v2.25.3\n"),
            rule("whoami", stdout="alice@example.com\n"),
            rule("training", "list", stderr=EXPIRED, exit=1),
        ],
    )
    client = RunaiClient(Backend("runai", [str(fake.path)]), project="team-a", timeout=30)
    app = RecordingApp(client, refresh_interval=0.2, runner=RecordingRunner(), clock=lambda: NOW)
    async with app.run_test(size=(110, 20)) as pilot:
        header = app.screen.query_one(StatusHeader)
        await wait_for(pilot, lambda: header.backend == "runai 2.25.3", "version in header")
        await wait_for(pilot, lambda: header.error, "banner")
        assert "not logged in" in header.error and "log in" in header.error
        assert any("not logged in" in note for note in notifications(app))
        await wait_for(pilot, lambda: header.logged_in is False, "login state")
        # The header repaints on its next refresh, which a loaded machine can put off.
        await wait_for(
            pilot, lambda: "not logged in (run: runai login)" in screen_text(app), "banner painted"
        )

        fake.set_rules(
            [
                rule("version", stdout="runai version v2.25.3\n"),
                rule("whoami", stdout="alice@example.com\n"),
                rule("training", "list", stdout=WORKLOADS),
            ]
        )
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 1, "jobs after login")
        assert header.error == ""
        await wait_for(pilot, lambda: header.logged_in is True, "login state back")
        await wait_for(pilot, lambda: "remote-job" in screen_text(app), "jobs painted")
        text = screen_text(app)
        assert "user alice@example.com" in text
        assert "remote-job" in text and "Running" in text and "1h" in text
    assert ["training", "list", "--json", "-p", "team-a"] in fake.calls()
