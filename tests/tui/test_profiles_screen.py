"""Profiles screen with the real ProfileStore: view, edit through the replaced editor runner
(an invalid edit is never saved; re-edit or discard), duplicate, new, submit from a profile."""

from __future__ import annotations

from runai_tui.tui.screens.confirm import ChoiceDialog
from runai_tui.tui.screens.profiles import ProfilesScreen
from runai_tui.tui.screens.prompt import PromptDialog
from runai_tui.tui.screens.submit import SubmitScreen
from tests.tui.fakeclient import NOW, FakeClient, RecordingRunner
from tests.tui.helpers import RecordingApp, notifications, wait_for
from tests.tui.screen_text import screen_text


async def open_profiles(app, pilot) -> ProfilesScreen:
    await wait_for(pilot, lambda: app.screen.loaded)
    await pilot.press("p")
    assert isinstance(app.screen, ProfilesScreen)
    await pilot.pause()
    return app.screen


async def test_view_and_valid_edit_saved_to_user_dir(demo_store) -> None:
    shipped = demo_store.raw_text("demo")
    edited = shipped.replace("demo job for the TUI tests", "edited in the editor")
    runner = RecordingRunner(edits=[edited])
    app = RecordingApp(
        FakeClient(), store=demo_store, runner=runner, refresh_interval=0, clock=lambda: NOW
    )
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await open_profiles(app, pilot)
        text = screen_text(app)
        assert "demo job for the TUI tests" in text and "job_name: demo" in text
        await pilot.press("e")
        assert runner.edited == [shipped]
        saved = demo_store.user_dir / "demo.yaml"
        assert saved.read_text() == edited
        assert demo_store.path("demo") == saved  # the user copy now shadows the shipped one
        await pilot.pause()
        assert "edited in the editor" in screen_text(app)
        assert screen.selected_name == "demo"


async def test_invalid_edit_is_never_saved_reedit_then_discard(demo_store) -> None:
    shipped = demo_store.raw_text("demo")
    invalid = shipped.replace("workers: 1", "workers: lots")
    runner = RecordingRunner(edits=[invalid, invalid + "# still bad\n"])
    app = RecordingApp(
        FakeClient(), store=demo_store, runner=runner, refresh_interval=0, clock=lambda: NOW
    )
    async with app.run_test(size=(120, 30)) as pilot:
        await open_profiles(app, pilot)
        await pilot.press("e")
        dialog = app.screen
        assert isinstance(dialog, ChoiceDialog)
        assert "NOT saved" in dialog.message and "workers" in dialog.message
        assert "'lots'" in dialog.message
        assert not (demo_store.user_dir / "demo.yaml").exists()
        assert app.focused.id == "reedit"
        await pilot.press("enter")  # re-edit starts from the invalid text, not from scratch
        assert runner.edited[1] == invalid
        assert isinstance(app.screen, ChoiceDialog)
        await pilot.press("escape")  # discard
        assert isinstance(app.screen, ProfilesScreen)
        assert not (demo_store.user_dir / "demo.yaml").exists()
        assert demo_store.raw_text("demo") == shipped
        assert any("discarded" in note for note in notifications(app))


async def test_duplicate_and_new(demo_store) -> None:
    app = RecordingApp(
        FakeClient(),
        store=demo_store,
        runner=RecordingRunner(),
        refresh_interval=0,
        clock=lambda: NOW,
    )
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await open_profiles(app, pilot)
        await pilot.press("c")
        assert isinstance(app.screen, PromptDialog)
        await pilot.press("enter")  # accept "demo-copy"
        await pilot.pause()
        assert (demo_store.user_dir / "demo-copy.yaml").read_text() == demo_store.raw_text("demo")
        assert screen.selected_name == "demo-copy"

        await pilot.press("a")
        await pilot.press(*"fresh", "enter")
        await pilot.pause()
        assert "extends: demo-copy" in (demo_store.user_dir / "fresh.yaml").read_text()
        assert demo_store.load("fresh").workers == 1  # inherited
        assert screen.selected_name == "fresh"
        await pilot.press("a")
        await pilot.press(*"bad name!", "enter")  # rejected with the reason; nothing written
        await pilot.pause()
        assert not list(demo_store.user_dir.glob("bad*"))
        assert any("invalid profile name" in note for note in notifications(app))


async def test_submit_from_profiles_preselects_profile(demo_store) -> None:
    app = RecordingApp(
        FakeClient(),
        store=demo_store,
        runner=RecordingRunner(),
        refresh_interval=0,
        clock=lambda: NOW,
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await open_profiles(app, pilot)
        await pilot.press("s")
        submit = app.screen
        assert isinstance(submit, SubmitScreen)
        await pilot.pause()
        assert submit.profile_name == "demo"
        assert submit.query_one("#in-job_name").has_focus
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, (SubmitScreen, ProfilesScreen)))
        assert app.client.calls[-2][0] == "submit" or any(
            c[0] == "submit" for c in app.client.calls
        )
        assert app.screen.query_one("#jobs-table").selected_name == "demo"
