"""The TUI on the real local cluster: a job that waits for GPUs says why in the HEALTH column and
in describe's event timeline; a running pod's CPU, memory (near its limit: flagged) and
"no GPU tool" show in describe's resources panel."""

from __future__ import annotations

import shutil

import pytest

from runai_tui.shapes.models import Phase
from runai_tui.tui.app import RunaiTuiApp
from runai_tui.tui.screens.describe import DescribeScreen
from runai_tui.tui.widgets.job_table import JobTable
from runai_tui.tui.widgets.resources import ResourcesPanel
from tests.local.test_top_local import HOG
from tests.tui.helpers import wait_for
from tests.tui.screen_text import screen_text

pytestmark = pytest.mark.slow  # the app over jobs on the local cluster

SUBMIT = ["runai", "training", "pytorch", "submit"]


async def test_pending_reason_in_health_and_timeline_and_resources_panel(local_client) -> None:
    local_client.submit([*SUBMIT, "hog", "--image", "x", "--workers", "0",
                         "--cpu-memory-limit", "280Mi", "--", "python3", "-c", HOG])  # fmt: skip
    # This machine has no GPU (RUNAI_LOCAL_GPUS unset): a job asking for one waits.
    local_client.submit([*SUBMIT, "wants-gpu", "--image", "x", "--workers", "0", "-g", "1",
                         "--", "true"])  # fmt: skip
    app = RunaiTuiApp(local_client, refresh_interval=0.5)
    async with app.run_test(size=(140, 50)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(
            pilot,
            lambda: (
                "wants-gpu" in table.jobs
                and str(table.cell("wants-gpu", "health")).startswith("⏸ pending")
            ),
            "the pending job's HEALTH",
        )
        assert str(table.cell("wants-gpu", "health")) == "⏸ pending: not enough free GPUs"
        assert str(table.cell("hog", "health")) == ""  # running: not read in the background

        table.select_name("wants-gpu")
        await pilot.press("d")
        assert isinstance(app.screen, DescribeScreen)
        await wait_for(pilot, lambda: "waiting: not enough free GPUs" in screen_text(app))
        text = screen_text(app)
        assert "▲ Unschedulable 0/1 nodes are available: 1 Insufficient nvidia.com/gpu" in text
        assert "● Submitted" in text
        assert not app.screen.query_one(ResourcesPanel).display  # nothing runs to read
        await pilot.press("escape")

        await wait_for(
            pilot, lambda: (j := table.jobs.get("hog")) and j.phase is Phase.RUNNING, "hog"
        )
        table.select_name("hog")
        await pilot.press("d")
        panel = app.screen.query_one(ResourcesPanel)
        # The probe reads the pod once the job allocated its memory (a few tries at most).
        await wait_for(
            pilot, lambda: panel.report is not None and panel.has_class("-warning"), "resources"
        )
        [pod] = panel.report.pods
        assert pod.pod == "hog-master-0" and pod.cpu_cores is not None and pod.cpu_cores > 0
        # The panel paints the report on its next refresh: wait for the picture, not the data.
        lines = ("no GPU tool", "/ 280 MiB", "memory near its limit")
        await wait_for(pilot, lambda: all(s in screen_text(app) for s in lines), "the panel")


async def test_gpu_util_column_filled_for_running_gpu_jobs(local_client, monkeypatch) -> None:
    monkeypatch.setenv("RUNAI_LOCAL_GPUS", "1")  # one GPU, emulated unless this machine has one
    local_client.submit([*SUBMIT, "gpu-job", "--image", "x", "--workers", "0", "-g", "1",
                         "--", "sleep", "300"])  # fmt: skip
    local_client.submit(
        [*SUBMIT, "cpu-job", "--image", "x", "--workers", "0", "--", "sleep", "300"]
    )
    app = RunaiTuiApp(local_client, refresh_interval=0.5)
    async with app.run_test(size=(140, 30)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.gpu_util_shown, "the GPU UTIL column")
        if shutil.which("nvidia-smi") is None:
            await wait_for(pilot, lambda: str(table.cell("gpu-job", "gpu_util")) == "no GPU tool")
        else:  # a machine with a GPU: the pod sees the real one
            await wait_for(pilot, lambda: str(table.cell("gpu-job", "gpu_util")).endswith("%"))
        assert "GPU UTIL" in screen_text(app)
        assert str(table.cell("cpu-job", "gpu_util")) == ""  # no GPU: never read
