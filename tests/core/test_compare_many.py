"""compare's table with many runs (knowledge/compare.py `run_table`): one column per run, the
grid's values first, the settings that differ, each run's figures with the best of each row
marked, and a run that never logged a step keeping its column."""

from __future__ import annotations

import json
from typing import Any

from runai_tui.knowledge.compare import (
    HIGHER,
    LOWER,
    NEVER_LOGGED,
    RunSide,
    render_table,
    run_curves,
    run_table,
)


def train(step: int, loss: float, img_s: float, tflops: list[float] | None = None) -> dict:
    record: dict[str, Any] = {
        "kind": "train", "step": step, "loss": loss, "images_per_sec": img_s,
    }  # fmt: skip
    if tflops is not None:
        record["ranks"] = {"tflops": tflops, "img_s": [img_s / len(tflops)] * len(tflops)}
    return record


def argv(name: str, lr: str, *extra: str) -> list[str]:
    return ["runai-local", "training", "pytorch", "submit", name, "--workers", "1", *extra,
            "--", "python", "-m", "trainer", "--lr", lr, "--epochs", "1"]  # fmt: skip


def sweep_sides() -> list[RunSide]:
    """Three runs of a sweep over trainer.lr (the third also asked for more shared memory) and
    one that never logged a step."""
    a = RunSide("lr-1", argv("lr-1", "0.01"), "jobspec", values={"trainer.lr": "0.01"},
                records=[train(1, 2.0, 10.0, [0.5, 0.5]), train(2, 1.0, 12.0, [0.5, 0.7]),
                         {"kind": "eval", "step": 2, "map": 0.10}, {"kind": "done", "step": 2}])  # fmt: skip
    b = RunSide("lr-2", argv("lr-2", "0.02"), "jobspec", values={"trainer.lr": "0.02"},
                records=[train(1, 1.5, 20.0, [1.0, 1.0]), train(2, 0.5, 22.0, [1.0, 1.0]),
                         train(3, 0.8, 21.0, [1.0, 1.0]), {"kind": "eval", "step": 3, "map": 0.30},
                         {"kind": "done", "step": 3}])  # fmt: skip
    c = RunSide("lr-3", argv("lr-3", "0.04", "--large-shm"), "jobspec",
                values={"trainer.lr": "0.04"},
                records=[train(1, 3.0, 22.0, [1.0, 1.0]), {"kind": "stopped", "step": 1}])  # fmt: skip
    d = RunSide(
        "lr-4",
        argv("lr-4", "0.08"),
        "jobspec",
        values={"trainer.lr": "0.08"},
        records_source="no metric lines in the master's log",
    )
    return [a, b, c, d]


def rows_of(table: Any) -> dict[str, Any]:
    """The rows shown by default: the settings and run.json fields that differ, every figure."""
    return {row.key: row for row in table.shown()}


def test_grid_first_then_the_settings_that_differ_and_the_same_left_out() -> None:
    table = run_table(sweep_sides(), sweep="sw-1")
    assert [(r.section, r.key) for r in table.shown()[:2]] == [
        ("grid", "trainer.lr"),
        ("settings", "--large-shm"),
    ]
    rows = rows_of(table)
    assert rows["trainer.lr"].cells == ("0.01", "0.02", "0.04", "0.08")
    assert rows["--large-shm"].cells == ("-", "-", "(set)", "-")
    # `args --lr` says what the grid row says; `--workers` and `args --epochs` are the same.
    assert not {"args --lr", "--workers", "args --epochs", "name"} & set(rows)
    # Asked for, the same ones are there too, after those that differ; the grid's repeat not.
    every = [r.key for r in table.shown(differences_only=False) if r.section == "settings"]
    assert every[0] == "--large-shm" and {"--workers", "args --epochs"} <= set(every)
    assert not {"args --lr", "name"} & set(every)


def test_the_best_of_each_row_is_marked_and_which_way_is_said() -> None:
    rows = rows_of(run_table(sweep_sides()))
    final, best = rows["final loss"], rows["best loss"]
    assert final.cells == ("1.0000", "0.8000", "3.0000", "-") and final.better == LOWER
    assert final.best == (1,)
    assert best.cells[1] == "0.5000" and best.best == (1,)  # the lowest, not the last
    img_s = rows["images/s (median, all ranks)"]
    assert img_s.cells == ("11.0", "21.0", "22.0", "-") and img_s.better == HIGHER
    assert img_s.best == (2,)
    tflops = rows["TFLOP/s (median, model)"]  # every rank's summed, the median over records
    assert tflops.cells == ("1.1", "2.0", "2.0", "-") and tflops.best == (1, 2)  # a tie: both
    assert rows["best mAP"].cells == ("0.1000", "0.3000", "-", "-")
    assert rows["best mAP"].best == (1,)
    assert rows["last step"].better is None and rows["last step"].best == ()


def test_a_run_that_never_logged_a_step_keeps_its_column_and_says_so() -> None:
    table = run_table(sweep_sides())
    rows = rows_of(table)
    assert rows["ended"].cells == ("done", "done", "stopped", NEVER_LOGGED)
    assert all(len(row.cells) == 4 for row in table.rows)
    assert table.sides[3].lacks == [
        "trainer metric records (no metric lines in the master's log): it never logged a step"
    ]
    lines = render_table(table)
    assert lines[0] == "compare 4 runs: lr-1, lr-2, lr-3, lr-4"
    assert lines[1].startswith("lr-4 lacks trainer metric records")
    header = next(line for line in lines if line.lstrip().startswith("lr-1"))
    assert header.split() == ["lr-1", "lr-2", "lr-3", "lr-4", "BEST"]
    final = next(line for line in lines if line.startswith("final loss"))
    assert final.split() == ["final", "loss", "1.0000", "0.8000", "*", "3.0000", "-", "lower"]
    assert any(line.startswith("ended") and line.endswith(NEVER_LOGGED) for line in lines)


def test_rows_without_any_figure_are_left_out() -> None:
    sides = [RunSide("a", records=[train(1, 1.0, 5.0)]), RunSide("b", records=[train(1, 2.0, 6.0)])]
    keys = [row.key for row in run_table(sides).rows]
    assert "TFLOP/s (median, model)" not in keys and "best mAP" not in keys
    assert "final loss" in keys


def test_json_is_the_same_table() -> None:
    table = run_table(sweep_sides(), sweep="sw-1")
    doc = json.loads(json.dumps(table.to_dict()))
    assert doc["sweep"] == "sw-1"
    assert [job["label"] for job in doc["jobs"]] == ["lr-1", "lr-2", "lr-3", "lr-4"]
    assert doc["jobs"][0]["values"] == {"trainer.lr": "0.01"}
    assert doc["jobs"][3]["lacks"][0].endswith("it never logged a step")
    assert [row["key"] for row in doc["rows"]] == [row.key for row in table.shown()]
    final = next(row for row in doc["rows"] if row["key"] == "final loss")
    assert final["section"] == "metrics" and final["better"] == "lower"
    assert final["cells"] == {"lr-1": "1.0000", "lr-2": "0.8000", "lr-3": "3.0000", "lr-4": "-"}
    assert final["best"] == ["lr-2"]
    assert final["numbers"] == {"lr-1": 1.0, "lr-2": 0.8, "lr-3": 3.0, "lr-4": None}
    grid = doc["rows"][0]
    assert grid["section"] == "grid" and "numbers" not in grid


def test_curves_are_each_runs_loss_and_images_per_second_against_step() -> None:
    sides = sweep_sides()
    curves = run_curves(sides[1])
    assert curves.label == "lr-2"
    assert curves.loss == [(1, 1.5), (2, 0.5), (3, 0.8)]
    assert curves.img_s == [(1, 20.0), (2, 22.0), (3, 21.0)]
    assert run_curves(sides[3]).loss == []


def test_settings_that_differ_alike_are_each_shown_without_a_grid() -> None:
    # Two flags that differ the same way both show: only a grid row's repeat is left out.
    sides = [
        RunSide("a", argv("a", "0.01", "--priority", "low"), records=[train(1, 1.0, 5.0)]),
        RunSide("b", argv("b", "0.02", "--priority", "high"), records=[train(1, 1.0, 5.0)]),
        RunSide("c", argv("c", "0.01", "--priority", "low")),
    ]
    table = run_table(sides)
    settings = [(r.key, r.cells) for r in table.shown() if r.section == "settings"]
    assert settings == [
        ("--priority", ("low", "high", "low")),
        ("args --lr", ("0.01", "0.02", "0.01")),
    ]
    final = rows_of(table)["final loss"]
    assert final.cells == ("1.0000", "1.0000", "-") and final.best == (0, 1)


def test_runs_all_of_one_sweep_name_it() -> None:
    sides = sweep_sides()[:3]
    for side in sides:
        side.sweep = "lr.3fa9c1"
    table = run_table(sides)
    assert table.sweep == "lr.3fa9c1"
    assert render_table(table)[0] == "compare 3 runs of sweep lr.3fa9c1: lr-1, lr-2, lr-3"
    assert run_table([*sides, RunSide("other", records=[train(1, 1.0, 5.0)])]).sweep is None


def test_a_diverged_run_is_shown_but_never_the_best() -> None:
    sides = [
        RunSide("lr-1", records=[train(1, 2.0, 5.0), train(2, 1.0, 5.0)]),
        RunSide("lr-9", records=[train(1, 3.0, 5.0), train(2, float("nan"), 6.0)]),
        RunSide("lr-10", records=[train(1, float("nan"), 5.0), train(2, 4.0, 6.0)]),
    ]
    table = run_table(sides)
    final = rows_of(table)["final loss"]
    assert final.cells == ("1.0000", "nan", "4.0000") and final.best == (0,)
    assert json.loads(json.dumps(table.to_dict()))["rows"][0]["numbers"] == {
        "lr-1": 1.0,
        "lr-9": None,
        "lr-10": 4.0,
    }
    assert rows_of(table)["best loss"].cells == ("1.0000", "3.0000", "4.0000")


def target(status: str, wall_time: float, step: int) -> dict:
    """A target record as the trainer writes it (--target-map 0.3)."""
    return {"kind": "target", "status": status, "metric": "map", "target": 0.3, "value": 0.31,
            "step": step, "wall_time": wall_time, "images": 8 * step, "gpu_hours": None,
            "eval_share": 0.04}  # fmt: skip


def test_time_to_target_is_a_figure_row_the_fastest_marked() -> None:
    sides = [
        RunSide("slow", records=[train(1, 1.0, 5.0), target("reached", 3725.0, 40)]),
        RunSide("fast", records=[train(1, 1.2, 9.0), target("reached", 1510.4, 30)]),
        RunSide("never", records=[train(1, 0.9, 9.5), target("not reached", 900.0, 12)]),
        RunSide("no-target", records=[train(1, 1.1, 9.0)]),
    ]
    table = run_table(sides)
    row = rows_of(table)["time to target"]
    assert row.cells == ("1h 02m", "25m 10s", "not reached", "-")
    assert row.better == LOWER and row.best == (1,)  # not reached is never the best
    doc = json.loads(json.dumps(table.to_dict()))
    cells = next(r for r in doc["rows"] if r["key"] == "time to target")
    assert cells["numbers"] == {"slow": 3725.0, "fast": 1510.4, "never": None, "no-target": None}
    assert cells["best"] == ["fast"]
    line = next(line for line in render_table(table) if line.startswith("time to target"))
    assert line.split()[-1] == "lower" and "25m 10s *" in line
    # Runs that set no target have no such row.
    assert "time to target" not in rows_of(run_table(sweep_sides()))
