"""Logs screen keys: pause by scrolling, the pending count, resume, search, save, pod switch."""

from __future__ import annotations

from runai_tui.tui.screens.logs import LogsScreen
from runai_tui.tui.screens.prompt import PromptDialog
from runai_tui.tui.widgets.log_view import LogView
from tests.tui.fakeclient import NOW, FakeClient, RecordingRunner, make_job
from tests.tui.helpers import RecordingApp, notifications, wait_for
from tests.tui.screen_text import screen_text


async def test_logs_follow_pause_search_save_and_pods(tmp_path) -> None:
    client = FakeClient(
        jobs=[make_job("a", pods=2)],
        logs={
            "a-master-0": [f"master line {i}" for i in range(200)],
            "a-worker-0": ["worker says hi"],
        },
    )
    app = RecordingApp(
        client, refresh_interval=0, runner=RecordingRunner(), clock=lambda: NOW, save_dir=tmp_path
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.screen.loaded)
        await pilot.press("l")
        logs = app.screen
        assert isinstance(logs, LogsScreen)
        view = logs.query_one(LogView)
        await wait_for(pilot, lambda: view.line_count == 200)
        assert "FOLLOWING" in screen_text(app)

        await pilot.press("pageup")
        assert not view.follow
        client.push("a-master-0", *[f"late {i}" for i in range(5)])
        await wait_for(pilot, lambda: view.pending == 5)
        await pilot.pause()
        assert "PAUSED: 5 new lines (f to follow)" in screen_text(app)
        assert "late 4" not in screen_text(app)
        await pilot.press("f")
        await pilot.pause()
        assert view.follow and "late 4" in screen_text(app)

        await pilot.press("slash", *"line 42", "enter")
        assert view.current_match == 42
        assert not view.follow
        assert any("1 lines match" in note for note in notifications(app))
        await pilot.press("n")
        assert view.current_match == 42  # the only match

        await pilot.press("ctrl+s")
        assert isinstance(app.screen, PromptDialog)
        target = tmp_path / "out" / "master.log"
        app.screen.query_one("#prompt-input").value = str(target)
        await pilot.press("enter")
        assert target.read_text().splitlines() == list(view.lines)
        assert not [p for p in target.parent.iterdir() if p.name != "master.log"]  # no temp left

        await pilot.press("o")
        await wait_for(pilot, lambda: logs.pod == "a-worker-0" and view.lines == ["worker says hi"])
        assert ("logs", "a", "a-worker-0", True) in client.calls


async def test_logs_of_a_pending_pod_wait_then_retry_a_failed_start() -> None:
    from runai_tui.shapes.models import Phase

    client = FakeClient(
        jobs=[make_job("p", Phase.PENDING, pods=1)], logs={"p-master-0": ["finally started"]}
    )
    app = RecordingApp(client, refresh_interval=0.05, runner=RecordingRunner(), clock=lambda: NOW)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.screen.loaded)
        await pilot.press("l")
        view = app.screen.query_one(LogView)
        await wait_for(pilot, lambda: "is Pending: waiting for it to start" in screen_text(app))
        assert not any(call[0] == "logs" for call in client.calls)  # waits, does not fail
        client.log_failures = 2  # started, but the container is not up yet: retried
        client.jobs = [make_job("p", Phase.RUNNING, pods=1)]
        await wait_for(pilot, lambda: view.lines == ["finally started"])
        assert sum(1 for call in client.calls if call[0] == "logs") == 3
        failures = [n for n in notifications(app) if "has not started" in n]
        assert len(failures) == 1  # one toast, not one per retry


async def test_logs_all_pods_previous_container_and_tail() -> None:
    from runai_tui.tui.widgets.log_view import pod_colour

    client = FakeClient(
        jobs=[make_job("a", pods=2)],
        logs={
            "a-master-0": ["m1", "m2", "m3"],
            "a-worker-0": ["w1"],
            "a-master-0.previous": ["before the crash", "Traceback: boom"],
        },
    )
    app = RecordingApp(client, refresh_interval=0, runner=RecordingRunner(), clock=lambda: NOW)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.screen.loaded)
        await pilot.press("l")
        logs = app.screen
        assert isinstance(logs, LogsScreen)
        view = logs.query_one(LogView)
        await wait_for(pilot, lambda: view.lines == ["m1", "m2", "m3"])

        await pilot.press("a")  # every pod, interleaved, a coloured pod column
        await wait_for(pilot, lambda: len(view.lines) == 4)
        assert sorted(view.lines) == [
            "[a-master-0] m1",
            "[a-master-0] m2",
            "[a-master-0] m3",
            "[a-worker-0] w1",
        ]
        assert view.pod_column and "all pods: following every pod" in screen_text(app)
        await pilot.pause()
        row = view.lines.index("[a-worker-0] w1")
        first = view.render_line(row)  # all four lines fit: no scrolling
        colours = {seg.style.color.name for seg in first if seg.style and seg.style.color}
        assert pod_colour("a-worker-0") in colours

        await pilot.press("a")  # back to one pod
        await wait_for(pilot, lambda: view.lines == ["m1", "m2", "m3"])
        assert not view.pod_column

        await pilot.press("p")  # the container before the last restart
        await wait_for(pilot, lambda: view.lines == ["before the crash", "Traceback: boom"])
        assert "PREVIOUS container" in screen_text(app)
        await pilot.press("p")
        await wait_for(pilot, lambda: view.lines == ["m1", "m2", "m3"])

        await pilot.press("t")
        await pilot.press("ctrl+u", "2", "enter")
        await wait_for(pilot, lambda: view.lines == ["m2", "m3"])
        assert "tail 2" in screen_text(app)
