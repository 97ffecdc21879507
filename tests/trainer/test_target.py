"""Time to a target (--target-map): a short synthetic run stops at the first evaluation that
reaches a low target and says where in run.json and a `target` record; an unreachable target
says "not reached". Tiny runs in this process: ResNet-18, 64 px, fp32, a few steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer import __main__ as entry

MAX_STEPS = 12
# An untrained ResNet-18 keeping every detection (--score-thresh 0) scores about 0.01 mAP@.5 on
# the synthetic images (0.0082-0.0155 over 12 steps at seed 0): 0.004 is met, 1.0 never is.
LOW_TARGET = 0.004


def tiny_run(out: Path, monkeypatch: pytest.MonkeyPatch, *words: str) -> list[dict]:
    """One run of the trainer's command line in this process; its records."""
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    code = entry.main([
        "--dataset", "synthetic", "--synthetic-train-images", "32", "--synthetic-val-images", "8",
        "--model", "retinanet_resnet18_fpn", "--min-size", "64", "--max-size", "64",
        "--workers", "0", "--batch-size", "4", "--amp", "none", "--device", "cpu",
        "--warmup-steps", "0", "--log-every", "1", "--checkpoint-every", "0",
        "--score-thresh", "0", "--eval-max-images", "8", "--output-dir", str(out), *words,
    ])  # fmt: skip
    assert code == 0
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def reached(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    out = tmp_path_factory.mktemp("target-reached")
    with pytest.MonkeyPatch.context() as monkeypatch:
        records = tiny_run(
            out, monkeypatch, "--max-steps", str(MAX_STEPS), "--eval-every-steps", "3",
            "--target-map", str(LOW_TARGET), "--target-metric", "map50",
        )  # fmt: skip
    return out, records


@pytest.mark.slow
def test_the_run_stops_at_the_first_evaluation_that_reaches_the_target(reached) -> None:
    out, records = reached
    evals = [r for r in records if r["kind"] == "eval"]
    first = next(r for r in evals if r["map50"] >= LOW_TARGET)
    assert evals[-1] is first  # no evaluation after it
    assert all(r["step"] % 3 == 0 for r in evals)  # every --eval-every-steps
    assert first["step"] < MAX_STEPS
    last_train = [r for r in records if r["kind"] == "train"][-1]
    assert last_train["step"] == first["step"]  # no step trained after it
    (target,) = [r for r in records if r["kind"] == "target"]
    assert target["status"] == "reached" and target["metric"] == "map50"
    assert (target["step"], target["value"]) == (first["step"], first["map50"])
    assert target["images"] == 4 * first["step"] and target["gpu_hours"] is None
    assert 0 < target["eval_seconds"] < target["wall_time"]
    assert target["eval_share"] == pytest.approx(target["eval_seconds"] / target["wall_time"], 1e-2)
    assert records[-1]["kind"] == "done" and records[-1]["step"] == first["step"]
    run = json.loads((out / "run.json").read_text())
    assert run["target"] == {k: v for k, v in target.items() if k not in ("kind", "time")}
    assert (out / "checkpoints" / f"step-{first['step']:09d}.pt").is_file()  # the final one


@pytest.mark.slow
def test_runai_tui_reads_the_time_to_target_the_run_wrote(reached) -> None:
    """`runai-tui ranks` (through TrainingProgress, as from the pod's log) and compare read it."""
    from runai_tui.knowledge.records.progress import TimeToTarget, TrainingProgress

    out, records = reached
    progress = TrainingProgress()
    for line in (out / "metrics.jsonl").read_text().splitlines():
        progress.feed(line)
    (record,) = [r for r in records if r["kind"] == "target"]
    assert progress.target is not None and progress.target.reached
    assert progress.target.to_dict() == {
        k: v for k, v in record.items() if k not in ("kind", "time", "epoch", "eval_seconds")
    }
    text = progress.target.text()
    assert text.startswith(f"map50 {LOW_TARGET:g} reached at step {record['step']} after ")
    assert f"({record['images']} images; evaluation " in text
    run = json.loads((out / "run.json").read_text())
    assert TimeToTarget.from_record(run["target"]) == progress.target


@pytest.mark.slow
def test_an_unreachable_target_says_not_reached(tmp_path, monkeypatch) -> None:
    records = tiny_run(
        tmp_path, monkeypatch, "--max-steps", "2", "--eval-every-steps", "1", "--target-map", "1",
    )  # fmt: skip
    evals = [r for r in records if r["kind"] == "eval"]
    assert [r["step"] for r in evals] == [1, 2]  # the last step is evaluated once
    (target,) = [r for r in records if r["kind"] == "target"]
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["target"]["status"] == target["status"] == "not reached"
    assert (target["metric"], target["target"], target["step"]) == ("map", 1.0, 2)
    assert target["value"] == max(r["map"] for r in evals)
    from runai_tui.knowledge.records.progress import TimeToTarget

    read = TimeToTarget.from_record(target)
    assert read is not None and not read.reached
    assert read.text().startswith("map 1 not reached: best ")


def test_a_target_needs_evaluations_and_a_fraction(tmp_path) -> None:
    base = ["--dataset", "synthetic", "--output-dir", str(tmp_path)]
    assert entry.main([*base, "--target-map", "35"]) == 2
    assert entry.main([*base, "--target-map", "0.3", "--eval-every", "0"]) == 2
    assert entry.main([*base, "--eval-every-steps", "5", "--eval-every", "0"]) == 2


@pytest.mark.slow
def test_the_time_to_target_after_a_resume_counts_the_lost_steps_and_the_gap(
    tmp_path, monkeypatch
) -> None:
    """A run checkpoints at step 2, trains on to 4 and stops without a checkpoint there (its
    last one deleted: a crash); after a gap longer than its whole start-up, a second attempt
    resumes from step 2. Its time to target runs from the first attempt's start: the steps
    lost after the checkpoint and the gap included, the gap said apart."""
    import time

    from trainer import checkpoint

    words = ("--eval-every", "1", "--target-map", "1", "--checkpoint-every", "2")
    began = time.time()
    first = tiny_run(tmp_path, monkeypatch, "--max-steps", "4", *words)
    (newest, path), *_ = checkpoint.list_checkpoints(str(tmp_path))
    assert newest == 4
    Path(path).unlink()  # the crash: step 2's checkpoint is the newest now
    first_record = first[0]["time"]
    slept = (first_record - began) + 0.5  # longer than the first attempt's start-up
    time.sleep(slept)
    second = tiny_run(tmp_path, monkeypatch, "--max-steps", "6", *words)
    resumed = next(r for r in second if r["kind"] == "resume")
    assert (resumed["step"], resumed["lost"]) == (2, 2)
    target = [r for r in second if r["kind"] == "target"][-1]
    # From the first attempt's start (before its first record) to the target record.
    assert target["wall_time"] >= target["time"] - first_record
    assert target["gap_seconds"] >= slept
    assert target["wall_time"] > target["gap_seconds"]
