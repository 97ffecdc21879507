"""Health in the TUI: the jobs table's HEALTH marks (bounded background pass over Failed jobs,
plus what describe diagnosed), the describe screen's health panel, and the preflight checklist."""

from __future__ import annotations

from runai_tui.shapes.models import Phase
from runai_tui.tui.screens.describe import DescribeScreen
from runai_tui.tui.screens.jobs import HEALTH_JOBS_PER_PASS
from runai_tui.tui.screens.preflight import PreflightScreen
from runai_tui.tui.widgets.health import HealthPanel
from runai_tui.tui.widgets.job_table import JobTable
from tests.tui.fakeclient import FakeClient, make_job
from tests.tui.helpers import wait_for
from tests.tui.screen_text import screen_text
from tests.tui.showcase import PROBE
from tests.tui.test_jobs_screen import make_app, refreshed

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
HOSTILE = (
    "\x1b[2J[bold red]RuntimeError: DataLoader worker (pid(s) 7) exited unexpectedly\x1b]0;x\x07"
)


def diagnosed(app) -> list[str]:
    return [call[1] for call in app.client.calls if call[0] == "describe"]


def marked(table: JobTable, name: str) -> bool:
    """The row's HEALTH cell is set. A background pass marks its last job and ends without
    yielding, so the last job of a pass marked means the pass is over."""
    return str(table.cell(name, "health")) != ""


async def test_jobs_table_marks_failed_jobs_a_few_per_refresh() -> None:
    failed = [make_job(f"f{i}", Phase.FAILED, age_s=100 + i) for i in range(7)]
    running = make_job("run", Phase.RUNNING)
    running.gpus = 0.0  # no GPU: the GPU UTIL pass (which describes too) leaves it alone
    client = FakeClient(
        jobs=[running, *failed],
        logs={"f0-master-0": [OOM], "f1-master-0": ["all good"]},
    )
    app = make_app(client)
    async with app.run_test(size=(110, 20)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: len(diagnosed(app)) == HEALTH_JOBS_PER_PASS)
        await wait_for(pilot, lambda: marked(table, "f2"))
        # Newest first; a Running job is never read in the background.
        assert diagnosed(app) == ["f0", "f1", "f2"]
        assert str(table.cell("f0", "health")) == "✗ cuda-oom"
        assert str(table.cell("f1", "health")) == "ok"
        assert str(table.cell("f2", "health")) == "? no logs"
        assert str(table.cell("f3", "health")) == ""
        assert str(table.cell("run", "health")) == ""
        # The background pass asked only for the tail of each pod's log.
        assert all(call[3] is False for call in client.calls if call[0] == "logs")
        await refreshed(pilot, app)
        await wait_for(pilot, lambda: len(diagnosed(app)) == 6)
        await wait_for(pilot, lambda: marked(table, "f5"))
        await refreshed(pilot, app)
        await wait_for(pilot, lambda: len(diagnosed(app)) == 7)
        await wait_for(pilot, lambda: marked(table, "f6"))
        await refreshed(pilot, app)
        await pilot.pause(0.2)
        assert len(diagnosed(app)) == 7  # each job once
        # A resubmitted job of the same name is new: its old mark goes.
        client.jobs[1] = make_job("f0", Phase.RUNNING, age_s=5)
        await refreshed(pilot, app)
        assert str(table.cell("f0", "health")) == ""


async def test_describe_health_panel_marks_the_row_and_keeps_lines_inert() -> None:
    client = FakeClient(
        jobs=[make_job("run", Phase.RUNNING, pods=2)],
        logs={
            "run-master-0": ["x NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>"],
            "run-worker-0": ["x NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>", HOSTILE],
        },
    )
    app = make_app(client)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 1)
        assert str(table.cell("run", "health")) == ""
        await pilot.press("d")
        assert isinstance(app.screen, DescribeScreen)
        panel = app.screen.query_one(HealthPanel)
        await wait_for(pilot, lambda: panel.diagnosis is not None)
        assert panel.has_class("-errors")
        text = screen_text(app)
        assert " IB mlx5_0:1/IB " in text and " Socket eth0 " in text
        assert "✗ dataloader-killed" in text and "run-worker-0:2" in text
        assert "^[[2J[bold red]RuntimeError: DataLoader worker" in text  # shown, not obeyed
        assert "fix: raise the pod's memory limit" in text
        # `h` reads the logs again; a fixed log clears the finding.
        client.logs["run-worker-0"] = ["x NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>"]
        await pilot.press("h")
        await wait_for(pilot, lambda: not panel.diagnosis.findings)
        assert "no problems found in 2 log lines" in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: str(table.cell("run", "health")) == "ok")


async def test_preflight_from_jobs_and_describe_and_greyed_when_no_pod_runs() -> None:
    client = FakeClient(
        jobs=[make_job("run", Phase.RUNNING, pods=2), make_job("done", Phase.COMPLETED)],
        probes={"run-master-0": PROBE},  # run-worker-0's exec fails
    )
    app = make_app(client)
    async with app.run_test(size=(120, 50)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        await pilot.press("down", "c")  # "run" (names sorted)
        assert isinstance(app.screen, PreflightScreen)
        await wait_for(pilot, lambda: app.screen.report is not None)
        text = screen_text(app)
        assert "some checks FAILED (2 pod(s))" in text
        assert "ulimit -l is 64 KiB with IB on" in text and "fix: set memlock unlimited" in text
        assert "pod run-worker-0 is not running" in text
        await pilot.press("r")
        await wait_for(pilot, lambda: len([c for c in client.calls if c[0] == "exec_output"]) == 4)
        await pilot.press("escape")
        await pilot.press("d")
        assert isinstance(app.screen, DescribeScreen)
        assert app.screen.check_action("preflight", ()) is True
        await pilot.press("c")
        assert isinstance(app.screen, PreflightScreen)
        await pilot.press("escape", "escape", "up", "d")  # "done": Completed, no pod to check
        assert isinstance(app.screen, DescribeScreen) and app.screen.job.name == "done"
        await wait_for(pilot, lambda: app.screen.detail is not None)
        assert app.screen.check_action("preflight", ()) is None
