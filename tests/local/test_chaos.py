"""One fixed schedule of the chaos run (benchmarks/chaos.py) on the local cluster, for real:
recovery in place off, the name the watcher would give attempt 2 taken beforehand, then as the
job trains: the watcher SIGKILLed at step 5 and two started again at once (one is refused), and
the worker pod SIGKILLed at step 8 (the job fails; the watcher submits it again under a free
name, and it resumes from a checkpoint). Every invariant the chaos run checks holds: at most
--max-attempts submissions, never two live attempts, one watcher at a time and no flood, every
job Completed or Failed with its reason, at most a checkpoint interval of steps lost per resume,
one writer per output dir. Then the checks themselves, on made-up chains: they find what they
look for.

One schedule (two short trainer runs, about a minute of CPU; a rank killed in place is
test_recovery.py's): `python benchmarks/chaos.py` runs twenty."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.chaos import (
    RECORD,
    Run,
    Schedule,
    chain_of,
    check_attempts,
    check_live,
    check_steps,
    draw,
    run_schedule,
)

SEED = 11  # not in place: watcher@5, pod@8, taken


@pytest.mark.slow
def test_a_fixed_schedule_of_faults_breaks_no_invariant(tmp_path: Path) -> None:
    schedule = draw(SEED)
    kinds = [k for k, _ in schedule.timed] + schedule.setup
    assert kinds == ["watcher", "pod", "taken"] and not schedule.in_place
    run, broken = run_schedule(schedule, tmp_path)
    assert not broken, "\n".join(b.line() for b in broken)
    # The schedule did what it says: the faults were applied, the chain failed once and was
    # submitted again under a free name (not the taken cx-r2), and one watcher was refused.
    applied = [k for k, _, what in run.applied if not what.startswith("not applied")]
    assert applied == ["taken", "watcher", "pod"], run.applied
    chain = chain_of(run)
    assert [run.jobs[n]["phase"] for n in chain] == ["Failed", "Completed"]
    assert chain[1] != "cx-r2" and "cx-r2" in run.jobs
    assert sorted(w.refused() for w in run.watchers) == [False, False, True]


def _run(tmp_path: Path, jobs: dict[str, Any], records: list[dict[str, Any]]) -> Run:
    """A Run as the checks read it, without a cluster: described jobs and the trainer's records."""
    env = {var: str(tmp_path / var.lower()) for var in ("XDG_STATE_HOME", "XDG_DATA_HOME")}
    run = Run(Schedule(0, False, [], []), tmp_path, env, jobs=jobs)
    run.output_dir.mkdir(parents=True)
    text = "".join(json.dumps(r) + "\n" for r in records)
    (run.output_dir / "metrics.jsonl").write_text(text)
    return run


def _job(name: str, attempt: int, parent: str | None, *runs: tuple[str, str]) -> dict[str, Any]:
    record = json.dumps({"attempt": attempt, "parent": parent})
    pods = [{"name": f"{name}-master-0",
             "runs": [{"startedAt": s, "finishedAt": e} for s, e in runs]}]  # fmt: skip
    return {"name": name, "phase": "Completed", "createdAt": runs[0][0], "pods": pods,
            "spec": {"annotations": {RECORD: record}}}  # fmt: skip


def test_the_checks_find_two_live_attempts_two_writers_and_steps_lost(tmp_path: Path) -> None:
    """The invariants can break: attempts that overlap by 1.5 s, a third submission of attempt
    2 past --max-attempts, a resume that lost 5 steps, steps of two runs interleaved."""
    jobs = {
        "cx": _job("cx", 1, None, ("2026-12-06T12:00:00.000Z", "2026-12-06T12:00:10.000Z")),
        "cx-r2": _job("cx-r2", 2, "cx", ("2026-12-06T12:00:08.500Z", "2026-12-06T12:00:20Z")),
        "cx-2": _job("cx-2", 2, "cx", ("2026-12-06T12:00:30.000Z", "2026-12-06T12:00:40Z")),
        "cx-3": _job("cx-3", 3, "cx-2", ("2026-12-06T12:00:50.000Z", "2026-12-06T12:01:00Z")),
    }
    steps = [{"kind": "train", "step": s} for s in (1, 2, 3, 4, 5, 6, 7, 8)]
    steps += [{"kind": "resume", "step": 3, "lost": 5}, {"kind": "train", "step": 4},
              {"kind": "train", "step": 9}, {"kind": "train", "step": 5}]  # fmt: skip
    run = _run(tmp_path, jobs, steps)
    chain = chain_of(run)
    assert chain == ["cx", "cx-r2", "cx-2", "cx-3"]
    assert check_attempts(run, chain) == [
        f"4 submissions in the chain, at most 3: {chain}",
        "attempt 2 submitted 2 times: ['cx-r2', 'cx-2']",
    ]
    (overlap,) = check_live(run, chain)
    assert overlap.startswith("cx and cx-r2 live at once: cx-master-0 ran until 12:00:10")
    assert overlap.endswith("started 1.50 s before that")
    assert check_steps(run, chain) == [
        "resume at step 3 lost 5 steps (> 3)",
        "skipped steps: step 9 written after step 4 with no resume",
        "two writers: step 5 written after step 9 with no resume",
    ]


def test_the_checks_pass_a_clean_chain(tmp_path: Path) -> None:
    jobs = {
        "cx": _job("cx", 1, None, ("2026-12-06T12:00:00.000Z", "2026-12-06T12:00:10.000Z")),
        "cx-r2": _job("cx-r2", 2, "cx", ("2026-12-06T12:00:10.001Z", "2026-12-06T12:00:20Z")),
    }
    steps = [{"kind": "train", "step": s} for s in (1, 2, 3, 4)]
    steps += [{"kind": "resume", "step": 3, "lost": 1}, {"kind": "train", "step": 4}]
    run = _run(tmp_path, jobs, steps)
    chain = chain_of(run)
    assert chain == ["cx", "cx-r2"]
    assert check_attempts(run, chain) == check_live(run, chain) == []
    assert check_steps(run, chain) == []
