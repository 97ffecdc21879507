"""diagnose on real NCCL output (tests/core/nccl_real/, each file citing its source): the IB
completion-error WARN in every format NCCL has printed (`with error 4, opcode` to 2.19,
`with status=12 opcode=` 2.20-2.27, `with status=IBV_WC_RETRY_EXC_ERR(12)` from 2.28, the GIN
transport's), an NCCL_DEBUG=INFO log of nccl-tests' all_reduce_perf on IB, and nccl-tests' table."""

from __future__ import annotations

from pathlib import Path

import pytest

from runai_tui.knowledge.diagnose import PodDiagnoser, combine
from runai_tui.knowledge.diagnose.codes import line_codes
from runai_tui.knowledge.diagnose.nccl_net import TRANSPORT_IB
from runai_tui.knowledge.diagnose.prefilter import PythonPrefilter, pick_prefilter

REAL = Path(__file__).parent / "nccl_real"


def log_lines(name: str) -> list[str]:
    """The file's lines less its source comment (`# ` lines before the log)."""
    return [x for x in (REAL / name).read_text().splitlines() if not x.startswith("# ")]


def warn_lines() -> list[str]:
    return [
        line
        for name in ("ib-completion-error-with-error.log", "ib-completion-error-status.log",
                     "ib-completion-error-formats.txt")
        for line in log_lines(name)
        if "Got completion from peer" in line
    ]  # fmt: skip


def test_every_format_is_there() -> None:
    lines = warn_lines()
    assert len(lines) == 8
    assert any("with error 4, opcode 32564, len 32564, vendor err 81 (Send)" in x for x in lines)
    assert any("with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid" in x for x in lines)
    assert any("NET/IB: Got completion" in x and "status=IBV_WC_RETRY_EXC_ERR(12)" in x
               for x in lines)  # fmt: skip
    assert any("NET/IB/GIN: Got completion" in x for x in lines)


@pytest.mark.parametrize("line", warn_lines())
def test_each_completion_error_format_is_an_nccl_error(line: str) -> None:
    assert line_codes(line) == ("nccl-error",)
    block = (line + "\n").encode()
    assert PythonPrefilter().candidates(block, 0, len(block), None)[0] == [len(line)]
    assert pick_prefilter().candidates(block, 0, len(block), None)[0] == [len(line)]


@pytest.mark.parametrize(
    "name", ["ib-completion-error-with-error.log", "ib-completion-error-status.log"]
)
def test_a_real_log_with_the_warn_gives_one_finding_on_its_line(name: str) -> None:
    lines = log_lines(name)
    report = combine([PodDiagnoser("p").feed_all(lines)])
    assert report.codes() == ["nccl-error"]
    [finding] = report.findings
    assert "Got completion from peer" in finding.evidence
    assert lines[finding.line - 1] == finding.evidence  # the WARN's own line
    assert not any(c.startswith("nccl-") for c in line_codes(lines[finding.line]))  # "-> 6"


def test_an_info_log_of_all_reduce_perf_on_ib_says_ib_and_nothing_wrong() -> None:
    pod = PodDiagnoser("testgpu2").feed_all(log_lines("nccl-tests-ib-2.19.3.log"))
    assert pod.ib_wanted is True  # "NCCL_IB_DISABLE set by environment to 0."
    assert pod.transport is not None and pod.transport.transport == TRANSPORT_IB
    assert pod.transport.device == "mlx5_0:1/IB"
    assert combine([pod]).codes() == []
    table = log_lines("all-reduce-perf-16-ranks.txt")
    assert combine([PodDiagnoser("p").feed_all(table)]).codes() == []
