"""The submit screen learns what the installed runai accepts (its submit help) and says, before
submitting, which profile field it lacks (the same check `runai-tui submit` makes)."""

from __future__ import annotations

from pathlib import Path

from runai_tui.profiles import ProfileStore
from runai_tui.runai.installed import Capabilities, parse_help
from runai_tui.shapes.cli_generations import CliVersion, classify
from runai_tui.tui.app import RunaiTuiApp
from runai_tui.tui.screens.submit import SubmitScreen
from tests.fake_runai import help_pages
from tests.tui.fakeclient import NOW, FakeClient, RecordingRunner
from tests.tui.helpers import wait_for

LATE = """\
description: needs the 2.2x flags
job_name: late
image: img:1
workers: 1
gpus: 0
preemptibility: non-preemptible
command: [sh, -c, "true"]
"""


class VersionedClient(FakeClient):
    """A client whose runai's submit help is the documented one of `cli`."""

    cli: str = "2.18"
    version_line: str = "runai version v2.20.1"

    async def acli_version(self) -> CliVersion:
        return classify(self.version_line)

    async def acapabilities(self, *keys: str) -> Capabilities:
        caps = Capabilities(["runai"])
        _short, flags = help_pages.CLIS[self.cli]["leaves"][("training", "pytorch", "submit")]
        caps.helps["submit"] = parse_help(f"Usage:\n  runai\n\nFlags:\n{flags}\n")
        caps.version = classify(self.version_line)
        return caps


def store_with_late(tmp_path: Path) -> ProfileStore:
    shipped = tmp_path / "profiles"
    shipped.mkdir()
    (shipped / "late.yaml").write_text(LATE)
    return ProfileStore([shipped, tmp_path / "user"])


async def open_submit(app: RunaiTuiApp, pilot) -> SubmitScreen:
    await wait_for(pilot, lambda: app.screen.loaded, "jobs loaded")
    await pilot.press("n")
    submit = app.screen
    assert isinstance(submit, SubmitScreen)
    await wait_for(pilot, lambda: submit.cli is not None and submit.base is not None, "cli known")
    await pilot.pause()
    return submit


def app_for(client: VersionedClient, tmp_path: Path) -> RunaiTuiApp:
    """The app on `client`, with the profile that needs a 2.21+ CLI, no refresh timer."""
    return RunaiTuiApp(
        client,
        store=store_with_late(tmp_path),
        runner=RecordingRunner(),
        refresh_interval=0,
        clock=lambda: NOW,
    )


async def test_a_field_the_cli_lacks_blocks_submit_with_the_reason(tmp_path: Path) -> None:
    client = VersionedClient()
    app = app_for(client, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        submit = await open_submit(app, pilot)
        problems = str(submit.query_one("#submit-problems").render())
        assert (
            "preemptibility: --preemptibility is not in runai 2.20.1: "
            "`runai training pytorch submit --help` does not list it"
        ) in problems
        assert submit.argv is None
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, SubmitScreen)
        assert not [call for call in client.calls if call[0] == "submit"]


async def test_the_same_profile_submits_on_a_2_25_cli(tmp_path: Path) -> None:
    client = VersionedClient()
    client.version_line = "runai version v2.25.3"
    client.cli = "2.25"
    app = app_for(client, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        submit = await open_submit(app, pilot)
        assert submit.argv is not None and "non-preemptible" in submit.argv
        assert not str(submit.query_one("#submit-problems").render()).strip()
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, SubmitScreen), "submitted")
        (call,) = [call for call in client.calls if call[0] == "submit"]
        assert call[1][call[1].index("--preemptibility") + 1] == "non-preemptible"
