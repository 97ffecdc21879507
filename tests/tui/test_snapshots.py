"""Snapshots of the main screens (pytest-textual-snapshot), of the fixed app in
tests/tui/showcase.py (the README's screenshots are made from it too): an in-process client, a
fixed clock, no periodic refresh, no cursor blink, profiles in a fixed directory.

Regenerate after an intended change: pytest tests/tui/test_snapshots.py --snapshot-update
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from runai_tui.profiles import ProfileStore
from runai_tui.tui.widgets.health import HealthPanel
from runai_tui.tui.widgets.log_view import LogView
from runai_tui.tui.widgets.progress import TrainingPanel
from runai_tui.tui.widgets.resources import ResourcesPanel
from tests.tui.helpers import wait_for
from tests.tui.showcase import (
    PROFILES_DIR,
    SIZE,
    compare_runs,
    jobs_loaded,
    make_app,
    profile_store,
)


@pytest.fixture
def store() -> Iterator[ProfileStore]:
    yield profile_store(PROFILES_DIR)
    shutil.rmtree(PROFILES_DIR, ignore_errors=True)


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


def test_compare_runs_table_and_curves(snap_compare, store) -> None:
    # `=` on a sweep's four marked jobs: the N-way table (grid first, the best marked, a run
    # that never logged a step keeping its column) and every run's curves overlaid.
    assert snap_compare(make_app(store), terminal_size=(120, 48), run_before=compare_runs)
