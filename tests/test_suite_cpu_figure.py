"""The `suite-cpu` figure's arithmetic (benchmarks/fig_suite_cpu.py): the modules' CPU summed,
now against the last recorded run, the +10% ceiling, and the record file."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.fig_suite_cpu import CGROUPS, RUSAGE, judge, modules_cpu, read_record, write_record

TSV = (
    "tests/trainer/test_ddp.py\t107.7\t180.2\tgw0\t15.1\n"
    "tests/core/test_cli.py\t12.3\t20.0\tgw1\t1.0\n"
    "tests/test_layers.py\t0.5\t0.9\tgw2\n"  # an older row: no system column
)


def test_the_modules_cpu_is_summed() -> None:
    assert modules_cpu(TSV) == pytest.approx(120.5)
    assert modules_cpu("") == 0


@pytest.mark.parametrize(
    ("now", "met", "change"),
    [
        (1000.0, True, "+0.0%"),
        (1100.0, True, "+10.0%"),
        (1100.2, False, "+10.0%"),
        (900, True, "-10.0%"),
    ],
)
def test_now_against_the_last_run_and_its_ceiling(now: float, met: bool, change: str) -> None:
    last = {"cpu_s": 1000.0, "method": CGROUPS, "commit": "abc1234", "date": "2026-12-06 12:00 UTC"}
    fig = judge(now, CGROUPS, last)
    assert fig.ours == now and fig.yardstick == 1000.0
    assert fig.ratio == pytest.approx(now / 1000.0)
    assert fig.met is met
    assert f"now {now:.1f} CPU-s, last 1000.0 (abc1234" in fig.note and change in fig.note
    assert ("over +10%" in fig.note) is (not met)


def test_no_record_or_one_counted_otherwise_is_not_judged() -> None:
    assert judge(500.0, CGROUPS, None).met is None
    other = judge(500.0, CGROUPS, {"cpu_s": 400.0, "method": RUSAGE})
    assert other.met is None and other.yardstick is None and RUSAGE in other.note


def test_the_record_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "suite_cpu.json"
    assert read_record(path) is None
    write_record(1234.56, CGROUPS, path)
    record = read_record(path)
    assert record is not None
    assert record["cpu_s"] == 1234.6 and record["method"] == CGROUPS
    assert record["commit"] and record["date"].endswith("UTC")


def test_the_committed_record_reads() -> None:
    """benchmarks/suite_cpu.json: no figure yet (null), or a whole run's."""
    record = read_record()
    assert record is None or (record["cpu_s"] > 0 and record["method"] in (CGROUPS, RUSAGE))
