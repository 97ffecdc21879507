"""The fixed app that the snapshot tests (tests/tui/test_snapshots.py) and the README's screenshots
(scripts/screenshots.py, checked by tests/tui/test_screenshots.py) are made from: an in-process
client with fixed jobs, logs, probes and resources, a fixed clock, no periodic refresh, profiles
in a fixed directory. Nothing in it depends on time or on the machine, so a picture changes only
when the app does.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input

from runai_tui.knowledge.compare import RunSide
from runai_tui.profiles import ProfileStore
from runai_tui.shapes.models import Phase
from runai_tui.tui.app import RunaiTuiApp
from runai_tui.tui.screens.compare import CompareScreen
from runai_tui.tui.widgets.job_table import JobTable
from runai_tui.tui.widgets.log_view import LogView
from runai_tui.tui.widgets.progress import TrainingPanel
from runai_tui.tui.widgets.ranks import CurvesPanel, RanksPanel
from tests.core.test_resources import V1, V2
from tests.tui.fakeclient import NOW, FakeClient, RecordingRunner, make_job
from tests.tui.helpers import wait_for

SIZE = (110, 32)
# A fixed directory: the profiles screen shows where a profile lives.
PROFILES_DIR = Path(tempfile.gettempdir()) / "runai-tui-snapshot-profiles"
SHOTS_PROFILES_DIR = Path(tempfile.gettempdir()) / "runai-tui-screenshot-profiles"

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
        "@@pf smi |GPU 00000000:07:00.0",
        "@@pf smi |    Clocks Event Reasons",
        "@@pf smi |        HW Slowdown                       : Active",
        "@@pf kernel_log ok",
        "@@pf uptime 4300.12",
        "@@pf xid [ 4213.122141] NVRM: Xid (PCI:0000:07:00): 31, pid=2417, name=python3, Ch "
        "00000010, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ "
        "0x7f29_5b8c9000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
        "@@pf end ok",
    ]
)
# The master's log of a real 2-process DDP run (rank 1's loader held back): every record carries
# each rank's figures, so the ranks panel, the curves and the straggler finding show real ones.
REAL_RUN = Path(__file__).resolve().parents[1] / "core" / "diagnose_logs" / "straggler.log"
# What the worker pod of such a run prints: the entry script's lines (scripts/train-retinanet-ddp.sh,
# as it printed them for node rank 1); the trainer itself prints on rank 0 only.
REAL_RUN_WORKER = [
    "train-retinanet-ddp: nnodes=2 (PET_NNODES)",
    "train-retinanet-ddp: node-rank=1 (PET_NODE_RANK)",
    "train-retinanet-ddp: nproc-per-node=1 (RUNAI_NUM_OF_GPUS=0: one CPU process)",
    "train-retinanet-ddp: rendezvous: static rendezvous at retinanet-local-master-0:29500 "
    "(node 0 hosts it)",
    "train-retinanet-ddp: launcher: torchrun; WORLD_SIZE=unset is ignored",
    "train-retinanet-ddp: exec: torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend static "
    "--rdzv-endpoint retinanet-local-master-0:29500 --node-rank 1 --master-addr "
    "retinanet-local-master-0 --master-port 29500 -m trainer --epochs 1",
]


def profile_store(directory: Path = PROFILES_DIR) -> ProfileStore:
    """A store with the fixture's profiles, written afresh into directory."""
    shutil.rmtree(directory, ignore_errors=True)
    (directory / "project").mkdir(parents=True)
    (directory / "project" / "retinanet-local.yaml").write_text(PROFILE)
    (directory / "project" / "broken.yaml").write_text("workers: lots\n")
    return ProfileStore([directory / "project", directory / "user"])


def make_app(store: ProfileStore, readonly: bool = False, real_run: bool = False) -> RunaiTuiApp:
    """The fixed app. real_run: retinanet-local is a 2-pod job whose master printed the real run's
    log (REAL_RUN), as the screenshots show it (its worker's lines are pushed by the scene)."""
    if real_run:
        running = make_job("retinanet-local", Phase.RUNNING, age_s=754, pods=2)
        master = REAL_RUN.read_text().splitlines()
    else:
        running = make_job("retinanet-local", Phase.RUNNING, age_s=754)
        master = ["starting trainer", *HOSTILE, *METRICS]
    client = FakeClient(
        jobs=[
            running,
            make_job("retinanet-tcp", Phase.PENDING, age_s=40),
            make_job("old-run", Phase.COMPLETED, age_s=3 * 86400),
            make_job("broken-run", Phase.FAILED, age_s=7200),
        ],
        logs={
            "retinanet-local-master-0": master,
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


async def jobs_loaded(pilot: Pilot) -> None:
    """The jobs screen with everything its background passes fill in."""
    await wait_for(pilot, lambda: pilot.app.screen.query_one(JobTable).row_count == 4)
    await wait_for(pilot, lambda: pilot.app.header_state.logged_in is True)
    # The background diagnosis of the Failed job has marked its row.
    table = pilot.app.screen.query_one(JobTable)
    await wait_for(pilot, lambda: str(table.cell("broken-run", "health")).startswith("✗"))
    # ...and the Pending one's row says why it waits.
    await wait_for(pilot, lambda: str(table.cell("retinanet-tcp", "health")).startswith("⏸"))
    # ...and the running one's GPU UTIL (the GPU pass, through the fake probe) is in.
    await wait_for(pilot, lambda: table.gpu_util.get("retinanet-local") == "87%")


async def steady_cursors(pilot: Pilot) -> None:
    """Every input's cursor steady (Textual's public `cursor_blink = False`): a picture must not
    depend on the phase of the cursor's blink."""
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False
    await pilot.pause()


# The README's screenshots ------------------------------------------------------------------------


async def marked_jobs(pilot: Pilot) -> None:
    await jobs_loaded(pilot)
    await pilot.press("down", "down", "space", "down", "space")  # both retinanet-* jobs


async def ranks_and_curves(pilot: Pilot) -> None:
    await jobs_loaded(pilot)
    await pilot.press("down", "down", "d")  # retinanet-local
    panel = pilot.app.screen.query_one(TrainingPanel)
    await wait_for(pilot, lambda: len(panel.progress.ranks) == 2, "the ranks")
    await pilot.press("g")
    ranks = pilot.app.screen.query_one(RanksPanel)
    await wait_for(pilot, lambda: "RANK" in str(ranks.render()) or bool(ranks.visual), "the table")
    curves = pilot.app.screen.query_one(CurvesPanel)
    await wait_for(pilot, lambda: len(curves.progress.curve) > 0, "the curves")
    await pilot.pause()


async def logs_across_pods(pilot: Pilot) -> None:
    await jobs_loaded(pilot)
    await pilot.press("down", "down", "l")  # retinanet-local
    view = pilot.app.screen.query_one(LogView)
    master = len(REAL_RUN.read_text().splitlines())
    await wait_for(pilot, lambda: view.line_count == master, "the master's log")
    await pilot.press("a")  # every pod, interleaved as the lines arrive
    tagged = "[retinanet-local-master-0] "
    await wait_for(
        pilot,
        lambda: len(view.lines) == master and all(x.startswith(tagged) for x in view.lines),
        "the master's log, tagged",
    )
    # The worker's lines arrive after the master's, so the order never depends on timing.
    pilot.app.client.push("retinanet-local-worker-0", *REAL_RUN_WORKER)
    await wait_for(pilot, lambda: view.line_count == master + len(REAL_RUN_WORKER), "both pods")
    await pilot.pause()


async def submit_checks(pilot: Pilot) -> None:
    await jobs_loaded(pilot)
    await pilot.press("n")
    await wait_for(pilot, lambda: getattr(pilot.app.screen, "argv", None) is not None)
    plan = pilot.app.screen.query_one("#insight-plan")
    await wait_for(pilot, lambda: re.search(r"measured step time: \d", str(plan.render())))
    await pilot.pause()


def sweep_runs() -> list[RunSide]:
    """Four jobs of a sweep over trainer.lr, as compare gathers them: three trained (fixed loss
    and images/s curves, each rank's TFLOP/s, an evaluation), one never logged a step."""
    sides = []
    for i, (lr, rate, speed) in enumerate(((0.01, 0.04, 21.0), (0.02, 0.07, 20.0),
                                           (0.04, 0.05, 22.5)), 1):  # fmt: skip
        name = f"lr-{i}"
        records: list[dict[str, object]] = [
            {"kind": "train", "step": s, "loss": round(2.2 / (1 + rate * s) + 0.02 * (s % 4), 4),
             "images_per_sec": round(speed - 4.0 / s, 3),
             "ranks": {"tflops": [0.41 * speed / 20, 0.40 * speed / 20]}}
            for s in range(1, 61)
        ]  # fmt: skip
        records += [{"kind": "eval", "step": 60, "map": round(0.05 + rate, 4)},
                    {"kind": "done", "step": 60}]  # fmt: skip
        argv = ["runai", "training", "pytorch", "submit", name, "--workers", "1", "--",
                "/data/scripts/vision/shell/train-retinanet-ddp.sh", "--lr", str(lr)]  # fmt: skip
        sides.append(
            RunSide(name, argv, "jobspec", records=records, values={"trainer.lr": str(lr)})
        )
    sides.append(
        RunSide("lr-4", [*sides[0].argv[:4], "lr-4", *sides[0].argv[5:-1], "0.08"], "jobspec",
                records_source="no metric lines in the master's log",
                values={"trainer.lr": "0.08"})
    )  # fmt: skip
    return sides


async def compare_runs(pilot: Pilot) -> None:
    """`=` on a sweep's four marked jobs, with the runs as compare gathers them (sweep_runs)."""
    await jobs_loaded(pilot)
    sides = sweep_runs()
    names = [side.label for side in sides]
    pilot.app.push_screen(CompareScreen(None, names, "the 4 marked jobs", sides=sides))
    await wait_for(pilot, lambda: getattr(pilot.app.screen, "result", None) is not None)
    await pilot.pause()


@dataclass(frozen=True)
class Shot:
    """One of the README's screenshots: docs/screenshots/NAME.svg, what it shows (its alt text),
    the terminal size and how the app gets there."""

    name: str
    alt: str
    size: tuple[int, int]
    run_before: Callable[[Pilot], Awaitable[None]]


SHOTS = [
    Shot("jobs", "the jobs table: two jobs marked, HEALTH and GPU UTIL", (110, 20), marked_jobs),
    Shot("describe", "describe: every rank's figures and the curves", (110, 40), ranks_and_curves),
    Shot("logs", "the logs of every pod of a job, interleaved", (110, 30), logs_across_pods),
    Shot("submit", "the submit form: the command, its checks, the plan", (120, 40), submit_checks),
    Shot(
        "compare",
        "compare: a sweep's four runs, the best marked, curves overlaid",
        (120, 48),
        compare_runs,
    ),
]


async def screenshot(shot: Shot) -> str:
    """The SVG of shot, taken from the real app (Textual's export_screenshot)."""
    app = make_app(profile_store(SHOTS_PROFILES_DIR), real_run=True)
    try:
        async with app.run_test(size=shot.size) as pilot:
            await shot.run_before(pilot)
            await steady_cursors(pilot)
            return app.export_screenshot(title="runai-tui")
    finally:
        shutil.rmtree(SHOTS_PROFILES_DIR, ignore_errors=True)
