"""`F` (TensorBoard port-forward) and `=` (compare two jobs) on the real local cluster."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from runai_tui.profiles import ProfileStore
from runai_tui.runai.client import RunaiClient
from runai_tui.runai.command import build_submit_argv
from runai_tui.tui.screens.compare import CompareScreen, RunsCurves
from tests.tui.helpers import RecordingApp, notifications, wait_for
from tests.tui.screen_text import screen_text

pytestmark = pytest.mark.slow  # the app over jobs on the local cluster

# A "TensorBoard" that answers one line per connection, on a port the kernel picks.
SERVER = """
import socket
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
print("PORT", server.getsockname()[1], flush=True)
while True:
    conn, _ = server.accept()
    conn.sendall(b"tensorboard here")
    conn.close()
"""


def forward_pids() -> list[int]:
    """Processes whose command line is a runai-local port-forward (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"port-forward" in words and b"tb" in words:
            found.append(int(entry.name))
    return found


async def test_F_forwards_tensorboard_shows_the_url_and_ends_with_the_app(
    local_client: RunaiClient, tmp_path: Path
) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    shipped = tmp_path / "profiles"
    shipped.mkdir()
    profile = shipped / "tb.yaml"
    profile.write_text(
        f"job_name: tb\nimage: x:1\nworkers: 1\ncommand: [{sys.executable}, {script}]\n"
    )
    store = ProfileStore([shipped, tmp_path / "user"])
    local_client.submit(build_submit_argv(store.load("tb")))
    app = RecordingApp(local_client, store=store, refresh_interval=0.5, save_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.table.select_name("tb"), "the tb row")

        def port() -> int | None:
            first = "".join(local_client.logs("tb")).split()
            return int(first[1]) if len(first) > 1 else None

        await wait_for(pilot, port, "the pod's port")
        found = [port()]
        # The profile that submits `tb` names the port F forwards.
        profile.write_text(profile.read_text() + f"tensorboard_port: {found[0]}\n")
        await wait_for(pilot, lambda: app.screen.table.selected_job is not None, "a selection")
        await pilot.press("F")
        url = f"http://127.0.0.1:{found[0]}/"
        await wait_for(pilot, lambda: app.forwards.urls.get("tb") == url, "the forward's URL")
        assert any(f"TensorBoard of tb: {url}" in note for note in notifications(app))
        with socket.create_connection(("127.0.0.1", found[0]), timeout=30) as conn:
            assert conn.recv(100) == b"tensorboard here"
        assert len(forward_pids()) == 1
    # The app has ended: so has its forward.
    assert forward_pids() == []


async def test_equals_compares_the_previous_and_the_selected_job(
    local_client: RunaiClient, demo_store: ProfileStore, tmp_path: Path
) -> None:
    for name in ("demo-a", "demo-b"):
        local_client.submit(build_submit_argv(demo_store.load("demo"), name))
    app = RecordingApp(local_client, store=demo_store, refresh_interval=0.5, save_dir=tmp_path)
    async with app.run_test(size=(140, 50)) as pilot:
        jobs = app.screen

        async def logged(name: str) -> bool:  # on the app's loop, as the screens read logs
            return "ready" in [line async for line in local_client.stream_logs(name, follow=False)]

        for name in ("demo-a", "demo-b"):
            while not await logged(name):
                await pilot.pause(0.1)
        await wait_for(pilot, lambda: jobs.table.select_name("demo-a"), "demo-a's row")
        await pilot.pause()
        assert jobs.table.select_name("demo-b")
        await pilot.pause()
        await pilot.press("equals_sign")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen), "the compare screen")
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_for(pilot, lambda: screen.result is not None, "the comparison")
        assert screen.result is not None
        assert screen.jobs == ["demo-a", "demo-b"]
        assert screen.result.labels == ["demo-a", "demo-b"]
        rows = {r.key: r for r in screen.result.rows}
        assert rows["final loss"].cells == ("0.5000", "0.5000")
        assert rows["--workers"].same  # one profile: every setting the same but the name
        assert screen.result.sides[0].lacks[0].startswith("run.json (")  # the demo pods write none
        curves = screen.query_one(RunsCurves).curves  # two runs get their curves too
        assert [c.label for c in curves] == ["demo-a", "demo-b"] and all(c.loss for c in curves)
        text = screen_text(app)
        assert "submitted settings: 0 of" in text and "--workers" not in text
        await pilot.press("d")  # the rows that are the same, too
        await pilot.pause()
        assert "--workers" in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is jobs, "back on the jobs screen")

        # Two marked jobs are the pair, whichever row is selected, in the table's order.
        for name in ("demo-b", "demo-a"):
            assert jobs.table.toggle_mark(name)
        assert jobs.table.select_name("demo-b")
        await pilot.press("equals_sign")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen), "a second compare")
        marked = app.screen
        assert isinstance(marked, CompareScreen)
        assert marked.jobs == ["demo-a", "demo-b"]
        assert marked.how == "the 2 marked jobs"
