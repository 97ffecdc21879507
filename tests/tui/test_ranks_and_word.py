"""The describe screen's ranks panel and curves, and word when a job ends (Pilot + snapshots).

The master's log is a real 2-process DDP run's output (tests/core/diagnose_logs/straggler.log:
rank 1's loader was held back), so the rank figures are real ones.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from textual.widgets import Static

from runai_tui.knowledge.records.progress import TrainingProgress, job_totals, mfu_text, tflops_text
from runai_tui.shapes.models import Phase
from runai_tui.tui.job_end_word import ring_sequence
from runai_tui.tui.widgets.health import HealthPanel
from runai_tui.tui.widgets.job_table import JobTable
from runai_tui.tui.widgets.progress import TrainingPanel
from runai_tui.tui.widgets.ranks import CurvesPanel, RanksPanel, ranks_table
from tests.tui.fakeclient import NOW, FakeClient, RecordingRunner, make_job
from tests.tui.helpers import RecordingApp, notifications, wait_for

REAL_RUN = Path(__file__).resolve().parents[1] / "core" / "diagnose_logs" / "straggler.log"
# A real 2-process run of a trainer that counts its model's FLOPs (--peak-tflops 1 on the CPU).
FLOPS_RUN = REAL_RUN.with_name("ranks-flops.log")
SIZE = (110, 40)


def make_app(phase: Phase = Phase.RUNNING, log: Path = REAL_RUN) -> tuple[RecordingApp, FakeClient]:
    client = FakeClient(
        jobs=[make_job("ddp-run", phase, age_s=300, pods=2)],
        logs={"ddp-run-master-0": log.read_text().splitlines()},
    )
    app = RecordingApp(client, refresh_interval=0, runner=RecordingRunner(), clock=lambda: NOW)
    return app, client


async def ranks_shown(pilot) -> None:
    await wait_for(pilot, lambda: pilot.app.screen.query_one(JobTable).row_count == 1)
    await pilot.press("d")
    panel = pilot.app.screen.query_one(TrainingPanel)
    await wait_for(pilot, lambda: len(panel.progress.ranks) == 2, "the ranks")
    await pilot.press("g")
    ranks = pilot.app.screen.query_one(RanksPanel)
    await wait_for(pilot, lambda: "RANK" in str(ranks.render()) or bool(ranks.visual), "table")
    curves = pilot.app.screen.query_one(CurvesPanel)
    await wait_for(pilot, lambda: len(curves.progress.curve) > 0, "the curves")
    await pilot.pause()


def test_describe_ranks_and_curves(snap_compare) -> None:
    app, _ = make_app()
    assert snap_compare(app, terminal_size=SIZE, run_before=ranks_shown)


def test_describe_curves_log_scale(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await ranks_shown(pilot)
        await pilot.press("y")
        await wait_for(pilot, lambda: pilot.app.screen.query_one(CurvesPanel).log_scale)

    app, _ = make_app()
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def test_ranks_panel_rows_come_from_the_real_run() -> None:
    app, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ranks_shown(pilot)
        progress = pilot.app.screen.query_one(TrainingPanel).progress
        expected = TrainingProgress()
        for line in REAL_RUN.read_text().splitlines():
            expected.feed(line)
        assert progress.ranks == expected.ranks
        curves = pilot.app.screen.query_one(CurvesPanel)
        assert [p.step for p in curves.progress.curve] == [p.step for p in expected.curve]
        assert not curves.log_scale
        await pilot.press("y")
        assert curves.log_scale and curves.border_subtitle == "y: log"
        await pilot.press("y")
        assert not curves.log_scale


async def test_the_describe_screen_shows_every_ranks_tflops_and_mfu_and_the_jobs() -> None:
    app, _ = make_app(log=FLOPS_RUN)
    async with app.run_test(size=SIZE) as pilot:
        await ranks_shown(pilot)
        panel = pilot.app.screen.query_one(TrainingPanel)
        last = [json.loads(x) for x in FLOPS_RUN.read_text().splitlines() if '"train"' in x][-1]
        assert [f.tflops for f in panel.progress.ranks] == last["ranks"]["tflops"]
        console = Console(record=True, width=SIZE[0])
        console.print(ranks_table(panel.progress, NOW.timestamp()))
        rows = console.export_text().splitlines()
        assert "TFLOP/S" in rows[0] and "MFU" in rows[0]
        job = job_totals(panel.progress.ranks)
        for rank, tflops in enumerate(last["ranks"]["tflops"]):
            assert f" {tflops_text(tflops)} " in rows[2 + rank]
            assert f" {mfu_text(last['ranks']['mfu'][rank])} " in rows[2 + rank]
        assert rows[4].split()[0] == "job" and tflops_text(job.tflops) in rows[4]
        summary = str(panel.query_one("#training-summary", Static).render())
        assert f"{tflops_text(job.tflops)} TFLOP/s (MFU {mfu_text(job.mfu)})" in summary


async def test_the_health_panel_names_the_straggler_rank() -> None:
    app, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pilot.app.screen.query_one(JobTable).row_count == 1)
        await pilot.press("d")
        panel = pilot.app.screen.query_one(HealthPanel)
        await wait_for(pilot, lambda: panel.diagnosis is not None, "the diagnosis")
        assert panel.diagnosis is not None
        [finding] = [f for f in panel.diagnosis.findings if f.code == "straggler"]
        assert finding.pod == "ddp-run-master-0" and finding.evidence.startswith("rank 1: ")
        await pilot.press("escape")  # the jobs table's HEALTH column marks it too
        table = pilot.app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: "straggler" in str(table.cell("ddp-run", "health")))


async def test_a_job_that_ends_is_announced_on_any_screen() -> None:
    app, client = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: pilot.app.screen.query_one(JobTable).row_count == 1)
        await pilot.press("d")  # another screen is showing
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "DescribeScreen")
        assert notifications(app) == []
        client.jobs[0] = make_job("ddp-run", Phase.FAILED, age_s=300, pods=2)
        jobs_screen = app.screen_stack[1]
        jobs_screen.refresh_jobs()
        await wait_for(pilot, lambda: "job ddp-run failed" in notifications(app), "the word")
        jobs_screen.refresh_jobs()  # the same phase again: no second word
        await pilot.pause(0.2)
        assert notifications(app).count("job ddp-run failed") == 1
        # Shown over the describe screen, which is still the one showing.
        await wait_for(pilot, lambda: len(pilot.app.screen.query("Toast")) == 1, "the toast")
        assert type(pilot.app.screen).__name__ == "DescribeScreen"


def test_the_word_over_the_describe_screen(snap_compare) -> None:
    app, client = make_app()

    async def run_before(pilot) -> None:
        await ranks_shown(pilot)
        client.jobs[0] = make_job("ddp-run", Phase.COMPLETED, age_s=300, pods=2)
        app.screen_stack[1].refresh_jobs()
        await wait_for(pilot, lambda: len(pilot.app.screen.query("Toast")) == 1, "the toast")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def test_a_job_seen_finished_from_the_start_is_not_announced() -> None:
    app, client = make_app(Phase.COMPLETED)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pilot.app.screen.query_one(JobTable).row_count == 1)
        pilot.app.screen.refresh_jobs()
        await pilot.pause(0.2)
        assert notifications(app) == []


def test_the_ring_is_bel_and_both_desktop_sequences_with_inert_text() -> None:
    assert ring_sequence("runai-tui", "job a completed") == (
        "\a\x1b]9;runai-tui: job a completed\a\x1b]777;notify;runai-tui;job a completed\a"
    )
    hostile = ring_sequence("runai-tui", "job x\x1b]0;pwned\a;y completed")
    assert hostile.count("\x1b") == 2 and hostile.count("\a") == 3  # only our own sequences
