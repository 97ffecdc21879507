"""`R` on a job still Running in the output dir the new job writes (the trainer's run.lock lets
one live run write it): the form says, before anything happens, that the job is suspended first;
its submit suspends it, waits until its pods are gone, then submits the new job. The job is a real
local-cluster job whose command reads as the trainer's entry script (it sleeps: no torch)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from runai_tui.profiles import ProfileStore
from runai_tui.runai import submission
from runai_tui.runai.client import RunaiClient
from runai_tui.shapes.models import Phase
from runai_tui.tui.app import RunaiTuiApp
from runai_tui.tui.screens.submit import SubmitScreen
from tests.tui.helpers import wait_for

pytestmark = pytest.mark.slow  # the app over jobs on the local cluster

NOTE = (
    "note: held is still Running and its run holds /data/runs/held: "
    "it is suspended before held-2 is submitted"
)


async def test_R_on_a_live_job_suspends_it_before_the_new_one_is_submitted(
    local_client: RunaiClient, tmp_path: Path
) -> None:
    shipped = tmp_path / "profiles"
    shipped.mkdir()
    (shipped / "held.yaml").write_text(
        "job_name: held\nimage: x:1\nworkers: 1\n"
        "command: [sh, -c, 'sleep 300', train-retinanet-ddp.sh, --output-dir, /data/runs/held]\n"
    )
    store = ProfileStore([shipped, tmp_path / "user"])
    submission.submit(
        local_client, submission.prepare(store.load("held"), backend=local_client.backend)
    )
    app = RunaiTuiApp(local_client, store=store, refresh_interval=0.5, save_dir=tmp_path)
    async with app.run_test(size=(140, 50)) as pilot:
        table = app.screen.table
        await wait_for(pilot, lambda: table.select_name("held"), "the held row")
        await wait_for(
            pilot, lambda: local_client.describe("held").job.phase is Phase.RUNNING, "Running"
        )
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen), "the submit form")
        form = app.screen
        assert isinstance(form, SubmitScreen)
        await wait_for(pilot, lambda: form.prepared is not None, "a valid form")
        shown = str(form.query_one("#submit-remedies", Static).render())
        assert NOTE in shown, shown
        assert local_client.describe("held").job.phase is Phase.RUNNING  # nothing happened yet
        await pilot.press("ctrl+s")
        await wait_for(
            pilot,
            lambda: table.selected_job is not None and table.selected_job.name == "held-2",
            "the new job selected",
        )
    held = local_client.describe("held")
    assert held.job.phase is Phase.STOPPED  # suspended: its record and logs stay
    assert all(p.phase is not Phase.RUNNING for p in held.pods)
    assert "held-2" in [j.name for j in local_client.list_jobs()]
