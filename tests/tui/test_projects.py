"""Switching projects in the TUI (`P`): the list comes from `runai project list` (the fake
`runai`) or from the real local cluster; every later call carries `-p`, the header shows the
project, and the submit screen's command includes it."""

from __future__ import annotations

import json

import pytest
from textual.widgets import OptionList

from runai_tui.profiles import ProfileStore
from runai_tui.runai.backend import Backend
from runai_tui.runai.client import RunaiClient
from runai_tui.tui.app import RunaiTuiApp
from runai_tui.tui.screens.projects import ProjectsDialog
from runai_tui.tui.screens.submit import SubmitScreen
from runai_tui.tui.widgets.header import StatusHeader
from runai_tui.tui.widgets.job_table import JobTable
from tests.fakes import fake_runai, rule
from tests.tui.fakeclient import NOW, RecordingRunner
from tests.tui.helpers import RecordingApp, notifications, wait_for
from tests.tui.screen_text import screen_text

pytestmark = pytest.mark.slow  # the app over jobs on the local cluster


async def settled(pilot, app: RunaiTuiApp) -> None:
    """Wait until no worker still runs a `runai` call, so none is cut off when the test ends."""
    await wait_for(pilot, lambda: all(w.is_finished for w in app.workers), "calls finished")


def workloads(name: str, project: str) -> str:
    job = {
        "name": name,
        "phase": "Running",
        "projectName": project,
        "createdAt": "2026-11-22T11:00:00Z",
    }
    return json.dumps({"workloads": [job], "next": ""})


OWN_PROFILE = """\
description: a profile that names its own project
job_name: own-job
project: team-own
image: img:1
workers: 1
gpus: 0
command: [python, train.py]
"""


def project_of(argv: list[str]) -> str:
    flag = "-p" if "-p" in argv else "--project"
    return argv[argv.index(flag) + 1]


async def test_switch_project_on_the_fake_runai(tmp_path) -> None:
    fake = fake_runai(
        tmp_path,
        [
            rule("version", stdout="runai version v2.25.3\n"),
            rule("whoami", stdout="alice\n"),
            rule("project", "list", stdout='[{"name": "team-a"}, {"name": "team-b"}]'),
            rule("training", "list", "-p", "team-b", stdout=workloads("job-b", "team-b")),
            rule("training", "list", stdout=workloads("job-a", "team-a")),
        ],
    )
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "own.yaml").write_text(OWN_PROFILE)
    store = ProfileStore([tmp_path / "profiles", tmp_path / "user"])
    client = RunaiClient(Backend("runai", [str(fake.path)]), project="team-a", timeout=30)
    app = RecordingApp(
        client, store=store, refresh_interval=0, runner=RecordingRunner(), clock=lambda: NOW
    )
    async with app.run_test(size=(110, 24)) as pilot:
        await pilot.press("n")  # a default project (not chosen) keeps the profile's own
        await wait_for(pilot, lambda: getattr(app.screen, "argv", None), "command")
        assert project_of(app.screen.argv) == "team-own"
        await pilot.press("escape")
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 1, "jobs of team-a")
        assert "job-a" in screen_text(app)
        await pilot.press("P")
        dialog = app.screen
        assert isinstance(dialog, ProjectsDialog)
        await wait_for(pilot, lambda: dialog.projects is not None, "project list")
        assert dialog.projects == ["team-a", "team-b"]
        options = dialog.query_one(OptionList)
        assert options.highlighted == 1  # the current project, after "the CLI's default"
        await pilot.press("down", "enter")
        header = app.screen.query_one(StatusHeader)
        assert client.project == "team-b" and header.project == "team-b"
        await wait_for(pilot, lambda: "job-b" in screen_text(app), "jobs of team-b")
        assert "Project: team-b." in notifications(app)
        await pilot.press("n")
        submit = app.screen
        assert isinstance(submit, SubmitScreen)
        await wait_for(pilot, lambda: submit.argv is not None, "command")
        assert project_of(submit.argv) == "team-b"  # chosen with P: it beats the profile's
        assert "team-own" not in submit.argv
        await settled(pilot, app)
    assert ["project", "list", "--json"] in fake.calls()
    assert ["training", "list", "--json", "-p", "team-b"] in fake.calls()


async def test_project_list_failure_keeps_the_app_and_the_project(tmp_path) -> None:
    expired = "Error: token is expired\n"
    fake = fake_runai(
        tmp_path,
        [
            rule("version", stdout="runai version v2.25.3\n"),
            rule("whoami", stdout="alice\n"),
            rule("project", "list", stderr=expired, exit=1),
            rule("training", "list", stdout=workloads("job-a", "team-a")),
        ],
    )
    client = RunaiClient(Backend("runai", [str(fake.path)]), project="team-a", timeout=30)
    app = RecordingApp(client, refresh_interval=0, runner=RecordingRunner(), clock=lambda: NOW)
    async with app.run_test(size=(110, 24)) as pilot:
        await pilot.press("P")
        assert isinstance(app.screen, ProjectsDialog)
        await wait_for(pilot, lambda: "could not list" in screen_text(app), "the failure shown")
        flat = " ".join(screen_text(app).split())
        assert "(token is expired) — run: runai" in flat  # the fix, wrapped in the box
        assert any("fix: run: runai login" in note for note in notifications(app))
        await pilot.press("escape")
        assert client.project == "team-a"
        assert not isinstance(app.screen, ProjectsDialog)
        await settled(pilot, app)


async def test_switch_project_on_the_local_cluster(local_client) -> None:
    app = RecordingApp(
        local_client, refresh_interval=0, runner=RecordingRunner(), clock=lambda: NOW
    )
    async with app.run_test(size=(110, 24)) as pilot:
        await wait_for(pilot, lambda: app.screen.loaded, "first refresh")
        await pilot.press("P")
        dialog = app.screen
        await wait_for(pilot, lambda: dialog.projects is not None, "project list")
        assert dialog.projects == ["local"]  # from `runai-local project list --json`
        await pilot.press("down", "enter")
        assert local_client.project == "local"
        assert app.screen.query_one(StatusHeader).project == "local"
        await wait_for(pilot, lambda: app.header_state.refreshed, "refresh with -p local")
        await pilot.press("P")
        dialog = app.screen
        await wait_for(pilot, lambda: dialog.projects is not None, "project list again")
        await pilot.press("up", "enter")  # back to the CLI default: no -p
        assert local_client.project is None
        assert app.screen.query_one(StatusHeader).project == ""
        await settled(pilot, app)


def test_the_tui_gets_the_resolved_project_and_whether_it_was_chosen(monkeypatch) -> None:
    from runai_tui.cli import main

    opened: list[RunaiTuiApp] = []
    monkeypatch.setattr(RunaiTuiApp, "run", lambda self: opened.append(self) or 0)
    assert main(["--backend", "local", "-p", "team-b"]) == 0
    assert opened[-1].client.project == "team-b" and opened[-1].project_explicit is True
    monkeypatch.setenv("RUNAI_TUI_PROJECT", "team-e")
    assert main(["--backend", "local"]) == 0  # a default from the environment: not chosen
    assert opened[-1].client.project == "team-e" and opened[-1].project_explicit is False
