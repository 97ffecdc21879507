"""compare's pure logic (knowledge/compare.py) with two runs, and the tensorboard_port profile
field. The table with many runs: tests/core/test_compare_many.py."""

from __future__ import annotations

import pytest

from runai_tui.knowledge.compare import (
    METRICS,
    NEVER_LOGGED,
    RunSide,
    argv_diff,
    render_table,
    run_figures,
    run_table,
    submission_fields,
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


def test_figures_are_medians_per_rank_the_final_loss_and_the_best_map() -> None:
    figures = run_figures(records([10.0, 40.0, 20.0], 0.5, [0.1, 0.3, 0.2]), world_size=2)
    assert figures.img_s == 20.0 and figures.img_s_per_rank == 10.0
    assert figures.data_time == 0.1 and figures.data_share == pytest.approx(0.2)
    assert figures.final_loss == 1.5  # the last train record's loss
    assert (figures.best_map, figures.best_map_step) == (0.3, 20)
    assert figures.ended == "done" and figures.last_step == 30


def two_runs() -> list[RunSide]:
    a = RunSide(
        "job-a", ["submit", "a", "--workers", "1", "--image", "x"], "jobspec",
        {"world_size": 2, "config": {"lr": 0.01, "seed": 0}}, records([10.0], 1.0, []),
    )  # fmt: skip
    b = RunSide("runs/b", None, "", {"world_size": 4, "config": {"lr": 0.01, "seed": 1}},
                records([40.0], 0.5, [0.2]), lacks=["the submission (a run directory...)"])  # fmt: skip
    return [a, b]


def test_two_runs_are_one_table_the_same_rows_shown_on_asking() -> None:
    table = run_table(two_runs())
    run_json = [(r.key, r.cells, r.same) for r in table.rows if r.section == "run.json"]
    assert run_json == [  # the differences first, then the rows that are the same
        ("config.seed", ("0", "1"), False),
        ("world_size", ("2", "4"), False),
        ("config.lr", ("0.01", "0.01"), True),
    ]
    settings = {r.key: r.cells for r in table.rows if r.section == "settings"}
    assert settings == {"--workers": ("1", "-"), "--image": ("x", "-")}
    figures = {r.key: r for r in table.rows if r.section == "metrics"}
    assert figures["images/s per rank (median)"].cells == ("5.0", "10.0")
    assert figures["images/s per rank (median)"].best == (1,)
    assert figures["best mAP"].cells == ("-", "0.2000")
    assert figures["best mAP at step"].cells == ("-", "10")
    text = "\n".join(render_table(table))
    assert "runs/b lacks the submission (a run directory...)" in text
    assert "== run.json fields: 2 of 3 differ" in text and "config.lr" not in text
    every = "\n".join(render_table(table, differences_only=False))
    assert "== run.json fields: 2 of 3 differ" in every and "config.lr" in every
    doc = table.to_dict()
    seed = next(row for row in doc["rows"] if row["key"] == "config.seed")
    assert seed == {
        "section": "run.json", "key": "config.seed", "cells": {"job-a": "0", "runs/b": "1"},
        "same": False, "better": None, "best": [],
    }  # fmt: skip
    assert doc["differences_only"] is True
    assert "config.lr" not in [row["key"] for row in doc["rows"]]
    assert "config.lr" in [row["key"] for row in table.to_dict(False)["rows"]]


def test_a_side_without_records_is_compared_and_says_what_it_lacks() -> None:
    a = RunSide(
        "job-a", argv=["submit", "job-a", "--workers", "2"], records=records([1.0], 1.0, [])
    )
    b = RunSide(
        "job-b",
        argv=["submit", "job-b", "--workers", "2", "--large-shm"],
        records_source="no metric lines in the master's log",
    )
    table = run_table([a, b])
    text = render_table(table)
    lack = "job-b lacks trainer metric records (no metric lines in the master's log): it never"
    assert [line for line in text if "lacks" in line] == [lack + " logged a step"]
    settings = {r.key: r.cells for r in table.rows if r.section == "settings" and not r.same}
    assert settings == {"--large-shm": ("-", "(set)")}
    figures = {r.key: r.cells for r in table.rows if r.section == "metrics"}
    assert figures["final loss"] == ("2.0000", "-") and figures["ended"] == ("done", NEVER_LOGGED)
    assert table.to_dict()["jobs"][1]["lacks"] == [
        "trainer metric records (no metric lines in the master's log): it never logged a step"
    ]


def test_every_figure_row_comes_from_the_one_list() -> None:
    # A figure is one METRICS entry: the table's figure rows are METRICS' (those some run has),
    # then how each run ended.
    table = run_table(two_runs())
    keys = [r.key for r in table.rows if r.section == "metrics"]
    assert keys == [m.key for m in METRICS if m.key in keys] + ["ended"]
    assert {m.key for m in METRICS if m.always} <= set(keys)


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
