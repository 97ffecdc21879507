"""Snapshots of the main screens (pytest-textual-snapshot). Deterministic: an in-process client,
a fixed clock, no periodic refresh, no cursor blink, profiles in a fixed directory.

Regenerate after an intended change: pytest tests/tui/test_snapshots.py --snapshot-update
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from runai_tui.models import Phase
from runai_tui.profiles import ProfileStore
from runai_tui.tui.app import RunaiTuiApp
from runai_tui.tui.widgets.health import HealthPanel
from runai_tui.tui.widgets.job_table import JobTable
from runai_tui.tui.widgets.log_view import LogView
from runai_tui.tui.widgets.progress import TrainingPanel
from runai_tui.tui.widgets.resources import ResourcesPanel
from tests.core.test_resources import V1, V2
from tests.tui.fakeclient import NOW, FakeClient, RecordingRunner, make_job
from tests.tui.helpers import wait_for

# A blinking cursor would make the snapshots depend on timing.

SIZE = (110, 32)
PROFILES_DIR = Path(tempfile.gettempdir()) / "runai-tui-snapshot-profiles"

PROFILE = """\
description: RetinaNet on the local cluster, 1 master + 1 worker
job_name: retinanet-local
image: local/retinanet:1
workers: 1
gpus: 0
env: {NCCL_DEBUG: INFO}
command: [python, -m, trainer, --epochs, "1"]
"""

METRICS = [
    f'{{"kind":"train","step":{s},"epoch":{s // 20},"loss":{2.0 / (1 + s / 10):.4f},'
    f'"lr":0.01,"images_per_sec":{20 + s % 3}.5,"total_steps":100}}'
    for s in range(1, 61)
]
HOSTILE = [
    "[bold red]this is not markup[/]",
    "clear screen: \x1b[2J and title: \x1b]0;pwned\x07 stay inert",
    "a very long line " + "x" * 300,
]
# broken-run's master: IB asked for, memlock too low, a hostile DataLoader line.
BROKEN_LOG = [
    "trainer: NCCL settings: NCCL_DEBUG=INFO NCCL_IB_HCA=mlx5",
    "broken-run-master-0:9:9 [0] NCCL INFO NET/IB : Using [0]mlx5_2:1/RoCE ; OOB net1:10.0.0.2<0>",
    "broken-run-master-0:9:40 [0] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_reg_mr failed with "
    "error Cannot allocate memory",
    "broken-run-master-0:9:9 [0] NCCL INFO Using network Socket",
    "\x1b[2J[bold red]RuntimeError: DataLoader worker (pid(s) 77) exited unexpectedly",
]
PROBE = "\n".join(
    [
        "@@pf memlock 64",
        "@@pf shm_kb 65536",
        "@@pf gpus_visible 1 nvidia-smi",
        "@@pf gpus_requested 1",
        "@@pf cuda_visible_devices (unset)",
        "@@pf rdma mlx5_2",
        "@@pf netifs eth0 lo net1",
        "@@pf env NCCL_IB_HCA=mlx5",
        "@@pf env NCCL_SOCKET_IFNAME=net1",
        "@@pf master_addr retinanet-local-master-0",
        "@@pf master_port 29500",
        "@@pf python 3.12.3",
        "@@pf torch 2.14.1",
        "@@pf master open 10.0.0.1",
        "@@pf end ok",
    ]
)


@pytest.fixture
def store() -> ProfileStore:
    shutil.rmtree(PROFILES_DIR, ignore_errors=True)
    (PROFILES_DIR / "project").mkdir(parents=True)
    (PROFILES_DIR / "project" / "retinanet-local.yaml").write_text(PROFILE)
    (PROFILES_DIR / "project" / "broken.yaml").write_text("workers: lots\n")
    yield ProfileStore([PROFILES_DIR / "project", PROFILES_DIR / "user"])
    shutil.rmtree(PROFILES_DIR, ignore_errors=True)


def make_app(store: ProfileStore, readonly: bool = False) -> RunaiTuiApp:
    client = FakeClient(
        jobs=[
            make_job("retinanet-local", Phase.RUNNING, age_s=754),
            make_job("retinanet-tcp", Phase.PENDING, age_s=40),
            make_job("old-run", Phase.COMPLETED, age_s=3 * 86400),
            make_job("broken-run", Phase.FAILED, age_s=7200),
        ],
        logs={
            "retinanet-local-master-0": ["starting trainer", *HOSTILE, *METRICS],
            "broken-run-master-0": BROKEN_LOG,
        },
        probes={"retinanet-local-master-0": PROBE, "retinanet-local-worker-0": PROBE},
        resources={"retinanet-local-master-0": V2, "retinanet-local-worker-0": V1},
    )
    return RunaiTuiApp(
        client,
        store=store,
        readonly=readonly,
        refresh_interval=0,
        runner=RecordingRunner(),
        clock=lambda: NOW,
    )


async def jobs_loaded(pilot) -> None:
    await wait_for(pilot, lambda: pilot.app.screen.query_one(JobTable).row_count == 4)
    await wait_for(pilot, lambda: pilot.app.header_state["logged_in"] is True)
    # The background diagnosis of the Failed job has marked its row.
    table = pilot.app.screen.query_one(JobTable)
    await wait_for(pilot, lambda: str(table.get_cell("broken-run", "health")).startswith("✗"))
    # ...and the Pending one's row says why it waits.
    await wait_for(pilot, lambda: str(table.get_cell("retinanet-tcp", "health")).startswith("⏸"))
    # ...and the running one's GPU UTIL (the GPU pass, through the fake probe) is in.
    await wait_for(pilot, lambda: table.gpu_util.get("retinanet-local") == "87%")


def test_jobs_screen(snap_compare, store) -> None:
    assert snap_compare(make_app(store), terminal_size=SIZE, run_before=jobs_loaded)


def test_jobs_screen_readonly_on_finished_job(snap_compare, store) -> None:
    async def run_before(pilot) -> None:
        await jobs_loaded(pilot)
        await pilot.press("down", "down")  # old-run: Completed, so Shell is greyed

    assert snap_compare(make_app(store, readonly=True), terminal_size=SIZE, run_before=run_before)


def test_describe_screen_with_training_progress(snap_compare, store) -> None:
    async def run_before(pilot) -> None:
        await jobs_loaded(pilot)
        await pilot.press("down", "down", "d")
        panel = pilot.app.screen.query_one(TrainingPanel)
        await wait_for(pilot, lambda: panel.progress.step == 60)
        health = pilot.app.screen.query_one(HealthPanel)
        await wait_for(pilot, lambda: health.diagnosis is not None)
        resources = pilot.app.screen.query_one(ResourcesPanel)
        await wait_for(pilot, lambda: resources.report is not None)

    assert snap_compare(make_app(store), terminal_size=SIZE, run_before=run_before)


def test_logs_screen_hostile_lines_paused(snap_compare, store) -> None:
    async def run_before(pilot) -> None:
        await jobs_loaded(pilot)
        await pilot.press("down", "down", "l")
        view = pilot.app.screen.query_one(LogView)
        await wait_for(pilot, lambda: view.line_count == 64)
        view.scroll_home(animate=False)
        await pilot.pause()
        pilot.app.client.push("retinanet-local-master-0", "one more", "and another")
        await wait_for(pilot, lambda: view.pending == 2)

    assert snap_compare(make_app(store), terminal_size=SIZE, run_before=run_before)


def test_delete_dialog(snap_compare, store) -> None:
    async def run_before(pilot) -> None:
        await jobs_loaded(pilot)
        await pilot.press("ctrl+d")

    assert snap_compare(make_app(store), terminal_size=SIZE, run_before=run_before)


def test_submit_screen_with_validation_error(snap_compare, store) -> None:
    async def run_before(pilot) -> None:
        await jobs_loaded(pilot)
        await pilot.press("n")
        await wait_for(pilot, lambda: pilot.app.screen.argv is not None)
        pilot.app.screen.query_one("#in-workers").value = "0"
        await pilot.pause()

    assert snap_compare(make_app(store), terminal_size=(110, 44), run_before=run_before)


def test_profiles_screen(snap_compare, store) -> None:
    async def run_before(pilot) -> None:
        await jobs_loaded(pilot)
        await pilot.press("p")

    assert snap_compare(make_app(store), terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare, store) -> None:
    async def run_before(pilot) -> None:
        await jobs_loaded(pilot)
        await pilot.press("question_mark")

    assert snap_compare(make_app(store), terminal_size=SIZE, run_before=run_before)


def test_describe_screen_health_panel(snap_compare, store) -> None:
    async def run_before(pilot) -> None:
        await jobs_loaded(pilot)
        await pilot.press("d")  # broken-run (sorted by name, first)
        panel = pilot.app.screen.query_one(HealthPanel)
        await wait_for(pilot, lambda: panel.diagnosis is not None)

    assert snap_compare(make_app(store), terminal_size=(110, 40), run_before=run_before)


def test_preflight_checklist(snap_compare, store) -> None:
    async def run_before(pilot) -> None:
        await jobs_loaded(pilot)
        await pilot.press("down", "down", "c")  # retinanet-local: Running
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "report", None) is not None)

    assert snap_compare(make_app(store), terminal_size=(110, 44), run_before=run_before)
