"""The benchmark suite's harness (benchmarks/run.py) runs a cheap figure end to end with tiny
sizes and writes its report; figures are judged as ratios. No timing is asserted."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.harness import REPO, Figure
from benchmarks.run import (
    DOC_BEGIN,
    DOC_END,
    SUMMARY_BEGIN,
    SUMMARY_END,
    main,
    table,
    write_doc,
)


def test_suite_runs_the_cli_figure_and_writes_the_report(tmp_path: Path, capsys) -> None:
    out = tmp_path / "report.json"
    assert main(["--only", "cli", "--only", "trainer", "--quick", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["machine"]["nproc"] >= 1 and report["machine"]["date"]
    cli, trainer = report["figures"]
    assert cli["name"] == "cli" and cli["ours"] > 0 and cli["yardstick"] > 0
    assert cli["ratio"] == cli["ours"] / cli["yardstick"]
    assert cli["met"] in (True, False) and cli["target"] == "ratio <= 2.5"
    assert trainer["met"] is None and "--reference-dir" in trainer["note"]  # skipped, said why
    printed = capsys.readouterr().out
    assert "figure" in printed and "cli" in printed and "not measured" in printed


def test_judging_and_the_table() -> None:
    fast = Figure("a", "a", "s", ours=1.0, yardstick=2.0)
    fast.judge("<=", 1.5)
    rate = Figure("b", "b", "lines/s", ours=90_000, yardstick=100_000)
    rate.judge(">=", 1.0)
    missing = Figure("c", "c", "s", note="not available: no such command")
    missing.judge("<=", 5)
    assert (fast.met, rate.met, missing.met) == (True, False, None)
    text = table([fast, rate, missing])
    assert "0.50x" in text and "0.90x" in text and "NO" in text
    assert "c: not available: no such command" in text


def test_trainer_steady_window_starts_after_the_last_recompile(tmp_path: Path) -> None:
    """A real process logs iterations 0.05 s apart, except a recompile (as dynamo's
    TORCH_LOGS=recompiles announces it) that makes iteration 7 take 1 s: the steady window
    starts after it and the run is read on until the window is as long as asked."""
    import re
    import sys

    from benchmarks.fig_trainer import timed_iterations

    script = tmp_path / "fake_trainer.py"
    script.write_text(
        "import time\n"
        "for i in range(1, 30):\n"
        "    if i == 7:\n"
        "        print('Recompiling function forward in model.py:1', flush=True)\n"
        "        time.sleep(1.0)\n"
        "    time.sleep(0.05)\n"
        "    print('it', i, flush=True)\n"
    )
    run = timed_iterations(
        [sys.executable, str(script)], {}, tmp_path, re.compile(rb"^it "), iterations=8
    )
    assert run["recompiles"] == [{"after_iteration": 6, "function": "forward"}]
    assert run["steady_from"] == 8  # the first iteration after the recompiling one
    assert run["iterations"] == 10  # 8 .. 10: as many as iterations 6 .. 8 would have given
    assert run["s_per_it"] < 0.5  # the 1 s iteration is outside the window


def test_trainer_figure_takes_the_fastest_setting_at_no_more_memory() -> None:
    from benchmarks.fig_trainer import trainer_figure

    def run(s: float, cpu: float, rss: float, first: float = 20.0, recompiles: int = 0) -> dict:
        return {
            "s_per_it": s, "cpu_s_per_it": cpu, "peak_rss_mb": rss, "first_s": first,
            "first_step_excess_s": first - 20.0,
            "steady_from": 6, "size": [800, 1333],
            "recompiles": [{"after_iteration": 3, "function": "forward"}] * recompiles,
        }  # fmt: skip

    runs = {
        "reference": run(10.0, 20.0, 8000),
        "fp32": run(9.0, 18.0, 7000),
        "bf16": run(4.0, 8.0, 5000),
        "fp32 compiled": run(8.0, 16.0, 7500, first=320.0, recompiles=1),
        "bf16 compiled": run(3.0, 6.0, 9000, first=300.0, recompiles=1),  # over the memory
    }
    fig = trainer_figure(runs, (800, 1333), "abc", 2, 0, 10, Path("/ref"))
    assert fig.details["best"] == "bf16"  # bf16 compiled is faster but takes more memory
    assert fig.ratio == 10.0 / 4.0 and fig.met is True
    rows = fig.details["extra_rows"]
    assert rows["bf16"]["met"] is True and rows["fp32"]["met"] is False
    assert rows["bf16 compiled"]["met"] is False  # 3.3x but 9.0 GB against 8.0 GB
    compile_row = rows["fp32 compiled: compile"]
    assert compile_row["ours"].startswith("300 s to compile, 2 graph(s)")
    assert compile_row["ratio"] == 9.0 / 8.0
    assert "by CPU time 1.25x" in rows["fp32 compiled"]["ours"]


def test_compile_time_is_the_first_steps_excess_over_the_later_ones(tmp_path: Path) -> None:
    from benchmarks.fig_trainer import first_step_excess

    metrics = tmp_path / "metrics.jsonl"
    records = [
        {"kind": "train", "step": n, "step_time": t} for n, t in enumerate((151, 16, 17, 40))
    ]
    metrics.write_text("\n".join(json.dumps(r) for r in records) + '\n{"kind": "eval"}\n')
    assert first_step_excess(metrics) == 151 - 17
    assert first_step_excess(tmp_path / "missing.jsonl") is None


def test_a_whole_run_writes_its_table_into_the_doc(tmp_path: Path) -> None:
    """docs/performance.md's figures are the last whole `make bench`'s: the block between the
    markers is made from the report, every figure and extra row one line, the rest kept."""
    fig = Figure("cli", "headless submit --dry-run wall", "s", ours=0.1, yardstick=0.05)
    fig.judge("<=", 2.5)
    fig.details["extra_rows"] = {"cli CPU": {"ours": "90 ms", "ratio": 1.5, "met": True}}
    machine = {"date": "2026-11-28 12:48 UTC", "nproc": 2, "cpu": "X", "python": "3.11.7"}
    report = {"machine": {**machine, "load_avg": [1.5, 1, 1]}, "figures": [fig.to_json()]}
    doc = tmp_path / "performance.md"
    doc.write_text(f"# Before\n\n{DOC_BEGIN}\nold\n{DOC_END}\n\nAfter\n", encoding="utf-8")
    write_doc(doc, report)
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# Before\n") and text.endswith(f"{DOC_END}\n\nAfter\n")
    assert "old" not in text and "2026-11-28 12:48 UTC" in text
    assert "| `cli`: headless submit --dry-run wall | 100.0 ms | 50.0 ms | 2.00x |" in text
    assert "| `cli CPU` | 90 ms | - | 1.50x |  | yes |" in text
    shipped = (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    assert shipped.index(DOC_BEGIN) < shipped.index(DOC_END)


def test_the_readme_gets_the_judged_rows_of_the_same_run(tmp_path: Path) -> None:
    """The README's Performance table is the last whole run's judged figures: a ratio where
    the target is one, else the figure itself; unjudged rows are left out."""
    fig = Figure("job-table", "jobs table refresh", "s", ours=0.3, yardstick=0.7)
    fig.met, fig.target = True, "5,000 < 500 ms"
    fig.details["extra_rows"] = {
        "job-table 500 jobs, CPU": {
            "ours": "62 ms",
            "ratio": 0.41,
            "target": "< 50 ms",
            "met": False,
        },
        "job-table 500 jobs, wall": {
            "ours": "91 ms",
            "ratio": 0.5,
            "target": "(load)",
            "met": None,
        },
    }
    cli = Figure("cli", "headless submit --dry-run wall", "s", ours=0.1, yardstick=0.05)
    cli.judge("<=", 2.5)
    machine = {"date": "2026-11-28 12:48 UTC", "nproc": 2, "cpu": "X", "python": "3.11.7"}
    report = {
        "machine": {**machine, "load_avg": [1.5, 1, 1]},
        "figures": [cli.to_json(), fig.to_json()],
    }
    readme = tmp_path / "README.md"
    readme.write_text(f"# R\n{SUMMARY_BEGIN}\n{SUMMARY_END}\n", encoding="utf-8")
    write_doc(readme, report)
    rows = [
        line for line in readme.read_text(encoding="utf-8").splitlines() if line.startswith("| `")
    ]
    assert rows == [
        "| `cli`: headless submit --dry-run wall | 2.00x | ratio <= 2.5 | yes |",
        "| `job-table`: jobs table refresh | 300.0 ms | 5,000 < 500 ms | yes |",
        "| `job-table 500 jobs, CPU` | 62 ms | < 50 ms | **no** |",
    ]
    shipped = (REPO / "README.md").read_text(encoding="utf-8")
    assert shipped.index(SUMMARY_BEGIN) < shipped.index(SUMMARY_END)
