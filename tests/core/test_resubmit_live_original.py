"""The decision a resubmit makes about the job it submits again while that job still runs: the
trainer's run.lock lets one live run write an output dir, so an original that runs in the new
job's output dir is suspended first (or, when it cannot be, nothing is submitted)."""

from __future__ import annotations

import pytest

from runai_tui.knowledge.compare import NEVER_LOGGED, RunSide, records_lack, run_figures
from runai_tui.shapes.models import Phase
from runai_tui.workflows.resubmit import LIVE, Holder

ARGV = ["runai", "training", "pytorch", "submit", "a-2", "--", "python", "-m", "trainer"]
SAME = [*ARGV, "--output-dir", "/data/runs/a"]


def held(phase: Phase) -> Holder:
    return Holder("a", phase, "/data/runs/a", "/work")


@pytest.mark.parametrize("phase", [Phase.RUNNING, Phase.PENDING, Phase.DEGRADED, Phase.CREATING])
def test_a_live_original_in_the_same_output_dir_is_suspended_first(phase: Phase) -> None:
    step = held(phase).step("a-2", SAME)
    assert step is not None and step.suspend
    assert step.line == (
        f"a is still {phase.value} and its run holds /data/runs/a: "
        "it is suspended before a-2 is submitted"
    )


@pytest.mark.parametrize("phase", [Phase.COMPLETED, Phase.FAILED, Phase.STOPPED, Phase.UNKNOWN])
def test_an_original_that_ended_needs_nothing(phase: Phase) -> None:
    assert phase not in LIVE
    assert held(phase).step("a-2", SAME) is None


def test_a_new_job_with_its_own_output_dir_leaves_the_original_running() -> None:
    assert held(Phase.RUNNING).step("a-2", [*ARGV, "--output-dir", "/data/runs/a-2"]) is None
    # one dir, written two ways: relative to the working dir, or with a trailing slash
    original = Holder("a", Phase.RUNNING, "/work/out", "/work")
    assert original.step("a-2", [*ARGV, "--output-dir", "out/"]) is not None


@pytest.mark.parametrize("phase", [Phase.STOPPING, Phase.SUSPENDING, Phase.DELETING])
def test_an_original_that_cannot_be_suspended_refuses_with_the_fix(phase: Phase) -> None:
    step = held(phase).step("a-2", SAME)
    assert step is not None and not step.suspend
    assert step.line.startswith(f"a is still {phase.value} and its run holds /data/runs/a")
    assert step.line.endswith("nothing submitted") and "\n" not in step.line
    assert "--set trainer.output-dir=DIR" in step.hint


def test_a_run_that_logged_only_its_wire_check_never_logged_a_step() -> None:
    # A job of two pods logs the wire check's record before its first step; a hung one stops there.
    side = RunSide(label="a", records=[{"kind": "comm", "step": 0}])
    side.records_source = "the master's log"
    assert records_lack(side) == f"trainer metric records (the master's log): it {NEVER_LOGGED}"
    assert run_figures(side.records, None).ended == NEVER_LOGGED
