"""`f` (the remedies' overrides and the argv difference) and `R` (the submit form filled from the
job's submission with the remedies applied) on a real local-cluster job whose log says its
/dev/shm was too small; after the submit the jobs table selects the new job."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Static

from runai_tui.profiles import ProfileStore, submission_record
from runai_tui.runai import submission
from runai_tui.runai.client import RunaiClient
from runai_tui.tui.app import RunaiTuiApp
from runai_tui.tui.health_view import REMEDY_MARK
from runai_tui.tui.screens.compare import CompareScreen
from runai_tui.tui.screens.describe import DescribeScreen
from runai_tui.tui.screens.remedies import RemediesScreen
from runai_tui.tui.screens.submit import SubmitScreen
from runai_tui.tui.widgets.health import HealthPanel
from tests.tui.helpers import wait_for
from tests.tui.screen_text import screen_text

pytestmark = pytest.mark.slow  # the app over jobs on the local cluster

BUS_ERROR = (
    "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
    "shared memory (shm)."
)


async def test_f_shows_the_remedies_and_R_resubmits_with_them(
    local_client: RunaiClient, tmp_path: Path
) -> None:
    shipped = tmp_path / "profiles"
    shipped.mkdir()
    (shipped / "loader.yaml").write_text(
        f"job_name: loader\nimage: x:1\nworkers: 1\nlarge_shm: false\n"
        f"command: [sh, -c, 'echo \"{BUS_ERROR}\"; exit 1']\n"
    )
    store = ProfileStore([shipped, tmp_path / "user"])
    # Submitted as runai-tui submits: the record travels with the job.
    submission.submit(
        local_client, submission.prepare(store.load("loader"), backend=local_client.backend)
    )
    app = RunaiTuiApp(local_client, store=store, refresh_interval=0.5, save_dir=tmp_path)
    async with app.run_test(size=(140, 50)) as pilot:
        table = app.screen.table
        await wait_for(pilot, lambda: table.select_name("loader"), "the loader row")
        await wait_for(
            pilot, lambda: local_client.describe("loader").job.phase.value == "Failed", "Failed"
        )
        await pilot.press("d")
        assert isinstance(app.screen, DescribeScreen)
        describe = app.screen
        panel = describe.query_one(HealthPanel)
        await wait_for(pilot, lambda: panel.diagnosis is not None and panel.diagnosis.findings)
        # The panel paints the diagnosis on its next refresh: wait for the picture too.
        lines = (REMEDY_MARK, "remedy: --set large_shm=true")
        await wait_for(pilot, lambda: all(s in screen_text(app) for s in lines), "the remedies")
        # Both pods hit the same fault: one finding naming them, its remedy computed once.
        assert "1 with a remedy: f shows, R resubmits" in str(panel.border_subtitle)
        assert [(f.code, f.pods) for f in panel.diagnosis.findings] == [
            ("shm", ("loader-master-0", "loader-worker-0"))
        ]
        assert "pods: loader-master-0, loader-worker-0" in screen_text(app)
        assert screen_text(app).count("remedy: --set large_shm=true") == 1

        await pilot.press("f")
        assert isinstance(app.screen, RemediesScreen)
        remedy_screen = app.screen
        await wait_for(pilot, lambda: remedy_screen.plan is not None, "the remedies")
        shown = str(remedy_screen.query_one("#remedies-plan", Static).render())
        assert "--set large_shm=true  remedy of shm" in shown
        assert "≠ --large-shm" in shown and "≠ name" in shown

        await pilot.press("R")  # on to the form
        await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen), "the submit form")
        form = app.screen
        assert isinstance(form, SubmitScreen)
        await wait_for(pilot, lambda: form.prepared is not None, "a valid form")
        assert form.query_one("#in-job_name", Input).value == "loader-2"
        remedies = str(form.query_one("#submit-remedies", Static).render())
        assert "--set large_shm=true  remedy of shm" in remedies
        assert form.argv is not None and "--large-shm" in form.argv
        assert form.argv[4] == "loader-2"
        # The form shows, and submits, the command `resubmit --dry-run` prints: the plan's.
        assert remedy_screen.plan is not None and form.argv == remedy_screen.plan.prepared.argv
        previewed = form.argv

        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: app.screen is not form and app.screen is not describe)
        await wait_for(
            pilot,
            lambda: table.selected_job is not None and table.selected_job.name == "loader-2",
            "the new job selected",
        )
        await pilot.press("equals_sign")  # the new job against the one it replaced
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen), "the compare screen")
        compared = app.screen
        assert isinstance(compared, CompareScreen)
        assert set(compared.jobs) == {"loader", "loader-2"}
        await pilot.press("escape")
        # R on the jobs table: the same form, for the failed job, under the next free name.
        await wait_for(pilot, lambda: table.select_name("loader"), "the loader row again")
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen), "the form from jobs")
        again = app.screen
        assert isinstance(again, SubmitScreen)
        await wait_for(pilot, lambda: again.prepared is not None, "a valid form")
        assert again.query_one("#in-job_name", Input).value == "loader-3"
        await pilot.press("escape")
    spec = local_client.describe("loader-2").raw["spec"]
    assert "--large-shm" in spec["submitArgv"]
    assert spec["submitArgv"] == previewed  # runai-local was executed as the form showed
    record = submission_record.decode(spec["annotations"][submission_record.ANNOTATION])
    assert record.profile == "loader" and "large_shm=true" in record.sets
