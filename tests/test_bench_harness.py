"""The benchmark suite's harness (benchmarks/run.py) runs a cheap figure end to end with tiny
sizes and writes its report; figures are judged as ratios. No timing is asserted."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.harness import Figure
from benchmarks.run import main, table


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
