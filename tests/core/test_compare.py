"""compare's pure logic (knowledge/compare.py) and the tensorboard_port profile field."""

from __future__ import annotations

import pytest

from runai_tui.knowledge.compare import (
    RunSide,
    argv_diff,
    compare,
    render,
    submission_fields,
    summarize,
)
from runai_tui.profiles import ProfileError, ProfileStore, apply_overrides
from runai_tui.runai.command import build_submit_argv


def test_a_submit_argv_splits_field_by_field() -> None:
    argv = [
        "runai-local", "training", "pytorch", "submit", "job-a", "--workers", "1", "-e",
        "OMP_NUM_THREADS=1", "-e", "A=b=c", "--large-shm", "--command", "--", "sh", "run.sh",
        "--epochs", "1", "--amp", "bf16", "--tensorboard",
    ]  # fmt: skip
    assert submission_fields(argv) == [
        ("name", "job-a"),
        ("--workers", "1"),
        ("-e OMP_NUM_THREADS", "1"),
        ("-e A", "b=c"),
        ("--large-shm", "(set)"),
        ("--command", "(set)"),
        ("command", "sh"),
        ("args (word)", "run.sh"),
        ("args --epochs", "1"),
        ("args --amp", "bf16"),
        ("args --tensorboard", "(set)"),
    ]


def records(img_s: list[float], loss: float, maps: list[float]) -> list[dict]:
    out: list[dict] = [
        {"kind": "train", "step": i + 1, "images_per_sec": v, "data_time": 0.1, "step_time": 0.5,
         "loss": loss + (len(img_s) - i)}
        for i, v in enumerate(img_s)
    ]  # fmt: skip
    out += [{"kind": "eval", "step": 10 * (i + 1), "map": m} for i, m in enumerate(maps)]
    return [*out, {"kind": "done", "step": len(img_s)}]


def test_metrics_summary_medians_per_rank_final_loss_best_map() -> None:
    summary = summarize(records([10.0, 40.0, 20.0], 0.5, [0.1, 0.3, 0.2]), world_size=2)
    assert summary.img_s_total == 20.0 and summary.img_s_per_rank == 10.0
    assert summary.data_time == 0.1 and summary.data_share == pytest.approx(0.2)
    assert summary.final_loss == 1.5  # the last train record's loss
    assert (summary.best_map, summary.best_map_step) == (0.3, 20)
    assert summary.finished == "done" and summary.last_step == 30


def test_differences_come_first_and_each_lack_is_said() -> None:
    a = RunSide(
        "job-a", ["submit", "a", "--workers", "1", "--image", "x"], "jobspec",
        {"world_size": 2, "config": {"lr": 0.01, "seed": 0}}, records([10.0], 1.0, []),
    )  # fmt: skip
    b = RunSide("runs/b", None, "", {"world_size": 4, "config": {"lr": 0.01, "seed": 1}},
                records([40.0], 0.5, [0.2]), lacks=["the submission (a run directory...)"])  # fmt: skip
    result = compare(a, b)
    assert [(r.key, r.a, r.b) for r in result.run_json] == [
        ("config.seed", "0", "1"), ("world_size", "2", "4"), ("config.lr", "0.01", "0.01")
    ]  # fmt: skip
    assert result.submission[0].key == "name" and result.submission[0].b == "-"
    metrics = {r.key: (r.a, r.b) for r in result.metrics}
    assert metrics["median img/s per rank"] == ("5.0", "10.0")
    assert metrics["best mAP"] == ("-", "0.2000 (step 10)")
    text = "\n".join(render(result))
    assert "B lacks the submission (a run directory...)" in text
    assert "== run.json: 2 of 3 differ" in text
    assert "config.lr" not in "\n".join(render(result, same_rows=False))
    assert result.to_dict()["run_json"][0] == {
        "key": "config.seed",
        "a": "0",
        "b": "1",
        "same": False,
    }


def test_a_side_without_records_is_compared_and_says_what_it_lacks() -> None:
    a = RunSide(
        "job-a", argv=["submit", "job-a", "--workers", "2"], records=records([1.0], 1.0, [])
    )
    b = RunSide(
        "job-b",
        argv=["submit", "job-b", "--workers", "2", "--large-shm"],
        records_source="no metric lines in the master's log",
    )
    result = compare(a, b)
    text = render(result)
    lack = "B lacks trainer metric records (no metric lines in the master's log): it never logged"
    assert [line for line in text if "lacks" in line] == [lack + " a step"]
    assert not any(line.startswith("A lacks") for line in text)
    submission = {r.key: (r.a, r.b) for r in result.submission if not r.same}
    assert submission == {"name": ("job-a", "job-b"), "--large-shm": ("-", "(set)")}
    metrics = {r.key: (r.a, r.b) for r in result.metrics}
    assert metrics["records"] == ("2", "0") and metrics["final loss"][1] == "-"
    assert metrics["ended"] == ("done", "-")
    assert result.to_dict()["b"]["lacks"] == [
        "trainer metric records (no metric lines in the master's log): it never logged a step"
    ]


def test_argv_diff_lists_only_what_changed() -> None:
    before = ["runai", "training", "pytorch", "submit", "x", "--workers", "2", "-e", "A=1"]
    after = ["runai", "training", "pytorch", "submit", "x-2", "--workers", "2", "-e", "A=2"]
    rows = argv_diff(before, after)
    assert [(r.key, r.a, r.b) for r in rows] == [("name", "x", "x-2"), ("-e A", "1", "2")]


def test_tensorboard_port_is_a_profile_field_but_never_a_runai_flag() -> None:
    profile = ProfileStore().load("retinanet-local")
    assert profile.tensorboard_port is None  # the TUI's F then uses 6006
    changed = apply_overrides(profile, ["tensorboard_port=7007"])
    assert changed.tensorboard_port == 7007
    assert build_submit_argv(changed) == build_submit_argv(profile)
    with pytest.raises(ProfileError) as info:
        apply_overrides(profile, ["tensorboard_port=70000"])
    assert "tensorboard_port" in str(info.value.problems[0])
