"""Stragglers, every rank's figures, metrics rows and the end of a job, in the core.

The logs are real 2-process DDP runs of the trainer (gloo, CPU), made as
tests/trainer/test_rank_figures.py makes them: `straggler.log` with rank 1's DataLoader worker
held stopped most of the time, `straggler-compute.log` with rank 1's process running a third of
the time, `ranks-even.log` left alone (those three from a trainer that did not count FLOPs), and
`ranks-flops.log` left alone with `--peak-tflops 1`: its records carry every rank's TFLOP/s and MFU.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from runai_tui.knowledge import diagnose
from runai_tui.knowledge.records.progress import (
    TrainingProgress,
    job_totals,
    mfu_text,
    rank_figures,
    tflops_text,
)
from runai_tui.knowledge.records.stragglers import find_stragglers, stragglers_in_lines
from runai_tui.shapes.errors import ErrorKind, RunaiError, UsageError
from runai_tui.shapes.models import Job, JobDetail, Phase
from runai_tui.workflows.job_end import ended, judge, wait_for
from runai_tui.workflows.job_records import PodRecords, metric_columns, metric_rows

LOGS = Path(__file__).parent / "diagnose_logs"


def records_of(name: str) -> list[tuple[int, dict]]:
    lines = (LOGS / name).read_text().splitlines()
    return [(n, json.loads(x)) for n, x in enumerate(lines, 1) if x.startswith('{"kind"')]


def train_records_of(name: str) -> list[tuple[int, dict]]:
    return [(n, r) for n, r in records_of(name) if r["kind"] == "train"]


def test_a_real_run_whose_rank_waits_for_data_names_that_rank() -> None:
    report = diagnose.diagnose_files([LOGS / "straggler.log"])
    assert report.codes() == ["straggler"] and report.exit_code == 0  # a warning
    finding = report.findings[0]
    assert finding.severity == "warning" and finding.pod == "straggler"
    assert finding.evidence.startswith("rank 1: median step ")
    assert "data wait" in finding.evidence and "--workers" in finding.fix
    train_lines = [n for n, r in records_of("straggler.log") if r["kind"] == "train"]
    assert finding.line == train_lines[-1]
    text = diagnose.render_text(report)
    assert "WARNING straggler  straggler:" in text and "evidence: rank 1:" in text


def test_a_real_run_whose_rank_computes_slower_names_that_rank() -> None:
    report = diagnose.diagnose_files([LOGS / "straggler-compute.log"])
    assert report.codes() == ["straggler"]
    finding = report.findings[0]
    assert finding.evidence.startswith("rank 1: median step ") and "; forward " in finding.evidence
    assert "CPU throttling" in finding.fix and "NIC" in finding.fix
    lines = (LOGS / "straggler-compute.log").read_text().splitlines()
    [found] = stragglers_in_lines(enumerate(lines, 1))
    assert (found.rank, found.slow, found.starved) == (1, True, False)
    assert found.forward_time is not None and found.others_forward_time is not None
    assert found.forward_time >= 1.5 * found.others_forward_time
    assert found.step_time < 1.5 * found.others_step_time  # DDP keeps the wall steps equal


def test_a_real_even_run_has_no_straggler() -> None:
    assert diagnose.diagnose_files([LOGS / "ranks-even.log"]).codes() == []
    lines = (LOGS / "ranks-even.log").read_text().splitlines()
    assert stragglers_in_lines(enumerate(lines, 1)) == []


def slowed(
    records: list[tuple[int, dict]], rank: int, factor: float, figure: str = "step_time"
) -> list[tuple[int, dict]]:
    """The real even run's records with one rank's figure multiplied: the thresholds' edges."""
    out = []
    for n, r in records:
        if r["kind"] == "train":
            r = json.loads(json.dumps(r))
            r["ranks"][figure][rank] *= factor
        out.append((n, r))
    return out


def test_the_step_time_rule_fires_at_one_and_a_half_times_the_others() -> None:
    even = records_of("ranks-even.log")
    assert find_stragglers(slowed(even, 1, 1.4)) == []
    found = find_stragglers(slowed(even, 1, 1.6))
    assert [(s.rank, s.slow, s.starved) for s in found] == [(1, True, False)]
    assert found[0].step_time >= 1.5 * found[0].others_step_time
    assert "CPU throttling" in found[0].fix and "NIC" in found[0].fix
    assert find_stragglers(slowed(even, 0, 1.4, "forward_time")) == []
    found = find_stragglers(slowed(even, 0, 1.6, "forward_time"))
    assert [(s.rank, s.slow, s.starved) for s in found] == [(0, True, False)]


def test_only_the_newest_records_of_the_newest_world_size_count() -> None:
    even = train_records_of("ranks-even.log")
    old_slow = slowed(even, 0, 3.0)  # an earlier stretch where rank 0 was slow...
    assert find_stragglers(old_slow + even * 4) == []  # ...pushed out by 24 newer records
    single = [(n, {**r, "ranks": {k: v[:1] for k, v in r["ranks"].items()}}) for n, r in even]
    assert find_stragglers(single) == []  # one rank: nothing to compare


def test_rank_figures_are_parsed_and_bad_shapes_ignored() -> None:
    progress = TrainingProgress()
    for line in (LOGS / "straggler.log").read_text().splitlines():
        progress.feed(line)
    assert [f.rank for f in progress.ranks] == [0, 1] and progress.ranks[0].step == 6
    assert len(progress.curve) == 6 and all(len(p.img_s) == 2 for p in progress.curve)
    assert rank_figures({"ranks": {"step_time": [1.0], "data_time": [0.1, 0.2]}}) == []
    assert rank_figures({"ranks": "nope"}) == [] and rank_figures({}) == []
    mixed = rank_figures({"step": 3, "ranks": {"step_time": [1.0, "x"], "img_s": [2.0, 3.0]}})
    assert [(f.step_time, f.data_time, f.img_s) for f in mixed] == [
        (1.0, None, 2.0),
        (None, None, 3.0),
    ]


def progress_of(name: str) -> TrainingProgress:
    progress = TrainingProgress()
    for line in (LOGS / name).read_text().splitlines():
        progress.feed(line)
    return progress


def test_every_ranks_tflops_and_mfu_and_the_jobs_from_a_real_run() -> None:
    progress = progress_of("ranks-flops.log")
    last = train_records_of("ranks-flops.log")[-1][1]
    assert [f.tflops for f in progress.ranks] == last["ranks"]["tflops"]
    assert [f.mfu for f in progress.ranks] == last["ranks"]["mfu"]
    assert all(f.tflops is not None and f.tflops > 0 for f in progress.ranks)
    assert last["tflops"] == last["ranks"]["tflops"][0]  # the record's own is rank 0's
    # --peak-tflops 1: the MFU is the TFLOP/s itself, rank by rank.
    assert all(f.mfu == f.tflops for f in progress.ranks)
    job = job_totals(progress.ranks)
    assert job.tflops == pytest.approx(sum(last["ranks"]["tflops"]))
    assert job.mfu == pytest.approx(sum(last["ranks"]["mfu"]) / 2)
    assert job.img_s == pytest.approx(sum(last["ranks"]["img_s"]))
    assert f"{tflops_text(job.tflops)} TFLOP/s (MFU {mfu_text(job.mfu)})" in progress.summary()
    rows = metric_rows([PodRecords("m-0", [r for _, r in records_of("ranks-flops.log")])])
    at_last = [r for r in rows if r["kind"] == "train" and r["step"] == last["step"]]
    assert [r["rank_tflops"] for r in at_last] == last["ranks"]["tflops"]
    assert {"rank_tflops", "rank_mfu"} <= set(metric_columns(rows))


def test_records_of_a_trainer_that_counts_no_flops_show_none() -> None:
    progress = progress_of("ranks-even.log")
    assert progress.ranks and all(f.tflops is None and f.mfu is None for f in progress.ranks)
    job = job_totals(progress.ranks)
    assert (job.tflops, job.mfu) == (None, None) and job.img_s is not None
    assert "TFLOP/s" not in progress.summary()
    assert (tflops_text(None), mfu_text(None)) == ("-", "-")
    assert (tflops_text(194.4), tflops_text(12.34), tflops_text(0.000801)) == (
        "194",
        "12.3",
        "0.000801",
    )
    assert mfu_text(0.1962) == "19.6%"


def test_metric_rows_have_a_row_per_record_and_rank() -> None:
    records = [r for _, r in records_of("straggler.log")]
    rows = metric_rows([PodRecords("m-0", records), PodRecords("w-0", [])])
    train = [r for r in rows if r["kind"] == "train"]
    assert len(train) == 2 * 6 and [r["rank"] for r in train[:2]] == [0, 1]
    assert train[1]["rank_data_time"] == records[0]["ranks"]["data_time"][1]
    assert rows[-1]["kind"] == "done" and rows[-1]["rank"] == 0
    columns = metric_columns(rows)
    assert columns[:6] == ["pod", "rank", "kind", "step", "epoch", "time"]
    assert "ranks" not in columns and "rank_img_s" in columns


def test_ended_is_running_to_an_end_only() -> None:
    assert ended(Phase.RUNNING, Phase.COMPLETED) and ended(Phase.RUNNING, Phase.STOPPED)
    assert not ended(None, Phase.FAILED) and not ended(Phase.PENDING, Phase.FAILED)
    assert judge("running", Phase.COMPLETED) == "reached"
    assert judge("completed", Phase.FAILED) == "failed" and judge("done", Phase.FAILED) == "reached"
    assert judge("completed", Phase.RUNNING) is None


class Phases:
    """describe answers in turn (a RunaiError is raised); stands for the cluster's answers."""

    def __init__(self, *answers: Phase | RunaiError) -> None:
        self.answers = list(answers)

    async def adescribe(self, name: str) -> JobDetail:
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, RunaiError):
            raise answer
        return JobDetail(job=Job(name, answer))


async def no_sleep(_: float) -> None:
    return None


def test_wait_for_bad_input_and_outcomes() -> None:
    gone = RunaiError(ErrorKind.NOT_FOUND, "not found")
    with pytest.raises(UsageError, match="unknown job 'j'"):
        asyncio.run(wait_for(Phases(gone), "j", "done", None, 0.1, no_sleep))
    with pytest.raises(UsageError, match="--for 'later'"):
        asyncio.run(wait_for(Phases(Phase.RUNNING), "j", "later", None, 0.1, no_sleep))
    seen: list[Phase] = []
    result = asyncio.run(
        wait_for(
            Phases(Phase.PENDING, Phase.RUNNING, gone),
            "j",
            "done",
            None,
            0.1,
            no_sleep,
            on_waiting=seen.append,
        )  # fmt: skip
    )
    assert (result.outcome, result.exit_code, seen) == ("deleted", 1, [Phase.PENDING])
    result = asyncio.run(wait_for(Phases(Phase.PENDING), "j", "running", 0.0, 0.1, no_sleep))
    assert (result.outcome, result.exit_code, result.phase) == ("timeout", 2, "Pending")


def test_a_slower_forward_counts_only_when_it_adds_a_share_of_the_step() -> None:
    # Twice the others' forward time, but what it adds is under 5% of a long step (a rank that
    # computes while the others wait in a collective): not what slows the job.
    records = []
    for line, record in train_records_of("ranks-even.log"):
        ranks = dict(record["ranks"])
        ranks["step_time"] = [6.0, 6.0]
        ranks["forward_time"] = [0.2, 0.1]
        records.append((line, {**record, "ranks": ranks}))
    assert find_stragglers(records) == []
    for _, record in records:
        record["ranks"]["forward_time"] = [0.5, 0.1]  # adds 0.4 s: 6.7% of the step
    assert [(s.rank, s.slow) for s in find_stragglers(records)] == [(0, True)]
