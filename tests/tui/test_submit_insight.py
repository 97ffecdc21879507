"""The submit screen's checks and plan (InsightPanel): live as overrides change, each finding
with its fix, the measured step time of a job of the same name; Pilot tests and snapshots at
80x24 and 120x40 (regenerate: pytest tests/tui/test_submit_insight.py --snapshot-update)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from runai_tui.profiles import ProfileStore
from runai_tui.shapes.models import Phase
from runai_tui.tui.app import RunaiTuiApp
from runai_tui.tui.screens.submit import SubmitScreen
from runai_tui.tui.widgets.insight import InsightPanel
from tests.tui.fakeclient import NOW, FakeClient, RecordingRunner, make_job
from tests.tui.helpers import wait_for
from tests.tui.screen_text import screen_text

# A blinking cursor would make the snapshots depend on timing.

PROFILES_DIR = Path(tempfile.gettempdir()) / "runai-tui-insight-profiles"

GPU_PROFILE = """\
description: RetinaNet over TCP, 2 GPUs per pod
job_name: retinanet-gpu
image: nvcr.io/nvidia/pytorch:26.02-py3
workers: 1
gpus: 2
master_gpus: 2
memory: {request: "3846", limit: 16Gi}
env: {NCCL_IB_DISABLE: "1", NCCL_DEBUG: INFO, CUDA_VISIBLE_DEVICES: "0",
      TORCH_FR_BUFFER_SIZE: "2000", TORCH_FR_DUMP_ON_TIMEOUT: "1"}
large_shm: true
command: [/data/scripts/vision/shell/train-retinanet-ddp.sh]
args: [--dataset, coco, --batch-size, "4"]
"""
SHELL_PROFILE = """\
description: not the trainer
job_name: shell-job
image: busybox:1
workers: 1
env: {TORCH_FR_BUFFER_SIZE: "2000", TORCH_FR_DUMP_ON_TIMEOUT: "1"}
command: [sh, -c, "echo hi"]
"""
RECORDS = [
    "trainer: world size 4",
    *(
        f'{{"kind":"train","step":{s},"epoch":0,"loss":1.0,"step_time":{t}}}'
        for s, t in ((20, 3.0), (40, 0.5), (60, 0.5), (80, 0.52))
    ),
]


@pytest.fixture
def store() -> ProfileStore:
    shutil.rmtree(PROFILES_DIR, ignore_errors=True)
    (PROFILES_DIR / "project").mkdir(parents=True)
    (PROFILES_DIR / "project" / "retinanet-gpu.yaml").write_text(GPU_PROFILE)
    (PROFILES_DIR / "project" / "shell-job.yaml").write_text(SHELL_PROFILE)
    yield ProfileStore([PROFILES_DIR / "project", PROFILES_DIR / "user"])
    shutil.rmtree(PROFILES_DIR, ignore_errors=True)


def make_app(store: ProfileStore) -> RunaiTuiApp:
    client = FakeClient(
        jobs=[make_job("retinanet-gpu", Phase.RUNNING, age_s=600)],
        logs={"retinanet-gpu-master-0": RECORDS},
    )
    return RunaiTuiApp(
        client,
        store=store,
        readonly=False,
        refresh_interval=0,
        runner=RecordingRunner(),
        clock=lambda: NOW,
    )


def plan_text(screen: SubmitScreen) -> str:
    return str(screen.query_one("#insight-plan").render())


def checks_text(screen: SubmitScreen) -> str:
    return str(screen.query_one("#insight-checks").render())


async def open_submit(pilot, measured: bool = True) -> SubmitScreen:
    await wait_for(pilot, lambda: pilot.app.header_state.logged_in is True)
    await pilot.press("n")
    screen = pilot.app.screen
    assert isinstance(screen, SubmitScreen)
    await wait_for(pilot, lambda: screen.argv is not None, "form loaded")
    if measured:
        await wait_for(pilot, lambda: "measured step time: 5" in plan_text(screen), "measure")
    return screen


async def test_findings_and_plan_follow_the_overrides(store: ProfileStore) -> None:
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_submit(pilot)
        panel = screen.query_one(InsightPanel)
        assert [(f.code, f.severity) for f in panel.findings] == [
            ("cuda-visible-devices", "error"),
            ("memory-unit", "warning"),
            ("no-way-back", "warning"),
            ("tcp-uncompressed-gradients", "info"),
            ("nccl-debug-info", "info"),
        ]
        shown = checks_text(screen)
        assert "fix: delete CUDA_VISIBLE_DEVICES from env" in shown
        assert "fix: write the unit: --set memory.request=3846Mi" in shown
        # A COCO run of unbounded steps that nothing restarts: the recovery rule says so.
        assert "no restart_policy (runai's: Never): a pod that fails ends this long job" in shown
        assert "Checks: 1 error, 2 warnings, 2 info" in screen_text(app)
        plan = plan_text(screen)
        assert "world size: 4" in plan and "global batch: 16" in plan
        assert "steps per epoch: 7,392" in plan  # 118,287 COCO images / 16
        # 0.5 s is the median of the windows after the first (3.0 s: start-up)
        assert "measured step time: 500.0 ms (job retinanet-gpu" in plan
        assert ("logs", "retinanet-gpu", None, False) in app.client.calls

        screen.query_one("#in-workers").value = "3"
        await wait_for(pilot, lambda: "world size: 8" in plan_text(screen), "plan follows")
        assert "global batch: 32" in plan_text(screen)

        screen.query_one("#in-gpus").value = "1"
        screen.query_one("#in-env").value = "HF_TOKEN=hf_secret NCCL_DEBUG=WARN"
        await wait_for(pilot, lambda: "secret-in-env" in checks_text(screen), "checks follow")
        codes = [(f.code, f.severity) for f in panel.findings]
        assert ("cuda-visible-devices", "error") in codes  # the master still has 2 GPUs
        assert "nccl-debug-info" not in [code for code, _ in codes]
        assert "hf_secret" not in checks_text(screen)

        screen.query_one("#in-workers").value = "many"
        await wait_for(pilot, lambda: "fix the errors" in checks_text(screen), "blank")
        assert plan_text(screen) == ""


async def test_no_plan_for_a_command_that_is_not_the_trainer(store: ProfileStore) -> None:
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_submit(pilot)
        screen.query_one("#submit-profiles").highlighted = 1  # shell-job
        await wait_for(pilot, lambda: screen.profile_name == "shell-job")
        await wait_for(pilot, lambda: "no plan" in plan_text(screen))
        assert "does not run the trainer" in plan_text(screen)
        # The checks panel and its title update on their own refresh, after the plan's.
        await wait_for(
            pilot,
            lambda: "Checks: none" in screen_text(app) and "no findings" in checks_text(screen),
            "the checks of shell-job",
        )


async def test_a_job_name_without_a_job_says_so(store: ProfileStore) -> None:
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_submit(pilot)
        screen.query_one("#in-job_name").value = "retinanet-new"
        await wait_for(
            pilot,
            lambda: "none (job retinanet-new has no trainer records" in plan_text(screen),
            "no measure",
        )


def test_snapshot_submit_insight_80x24(snap_compare, store: ProfileStore) -> None:
    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=open_submit)


def test_snapshot_submit_insight_120x40(snap_compare, store: ProfileStore) -> None:
    assert snap_compare(make_app(store), terminal_size=(120, 40), run_before=open_submit)


async def test_trainer_flags_in_the_form_reach_the_plan_and_the_command(
    store: ProfileStore,
) -> None:
    """The form's trainer flags are `--set trainer.NAME=VALUE` overrides: the plan reads them,
    the command passes each flag once, a bad name or value shows under the field."""
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_submit(pilot)
        screen.query_one("#in-trainer").value = "batch-size=8 lr=0.01"
        await wait_for(pilot, lambda: "global batch: 32" in plan_text(screen), "plan follows")
        assert "lr: 0.02 = 0.01 (--lr) x 32 / 16 (--lr-base-batch)" in plan_text(screen)
        argv = screen.argv
        assert argv is not None
        tail = argv[argv.index("--") + 1 :]
        assert tail[1:] == ["--dataset", "coco", "--batch-size", "8", "--lr", "0.01"]

        screen.query_one("#in-trainer").value = "lrr=0.01"
        await wait_for(pilot, lambda: screen.argv is None, "the form refuses it")
        assert str(screen.query_one("#err-trainer").render()) == (
            "trainer.lrr: not a flag of the trainer; did you mean 'trainer.lr'?"
        )
        screen.query_one("#in-trainer").value = "amp=bf17"
        await wait_for(
            pilot,
            lambda: "expected one of auto" in str(screen.query_one("#err-trainer").render()),
            "a bad choice",
        )
