"""The trainer's wire check read back (runai_tui/knowledge/records/wire.py): diagnose's slow-wire
findings from a recorded `comm` record (tests/core/diagnose_logs/wire-slow.log: three ranks on
TCP at 25 Gb/s, one node slow), burnin's table, and the record found however long the log."""

from __future__ import annotations

import json
from pathlib import Path

from runai_tui.knowledge import diagnose
from runai_tui.knowledge.diagnose import PodDiagnoser, combine
from runai_tui.knowledge.diagnose.prefilter import PythonPrefilter, pick_prefilter
from runai_tui.knowledge.records.wire import find_check, read_check, slow_pair, table

LOG = Path(__file__).parent / "diagnose_logs" / "wire-slow.log"


def record() -> dict:
    line = next(x for x in LOG.read_text().splitlines() if x.startswith('{"kind": "comm"'))
    return json.loads(line)


def test_a_recorded_slow_wire_gives_both_findings_naming_the_pair_and_the_node() -> None:
    lines = diagnose.read_log_lines(LOG)
    report = combine([PodDiagnoser("rt-master-0").feed_all(lines)])
    assert set(report.codes()) == {"wire-slow", "wire-slow-pair"}
    by_code = {f.code: f for f in report.findings}
    slow = by_code["wire-slow"]
    assert slow.pod == "rt-master-0" and slow.line == 7  # the comm record's line
    # 1.045 GB/s busbw = 8.4 Gb/s on a 25 Gb/s link the pods read: a third of it.
    assert slow.evidence.startswith("all-reduce busbw 1.045 GB/s (8.4 Gb/s) at 138.3 MiB is 33%")
    assert "25 Gb/s tcp link the pods read (under 50%)" in slow.evidence
    assert "slowest pair ranks 2-0 (pods rt-worker-1 / rt-master-0" in slow.evidence
    pair = by_code["wire-slow-pair"]
    assert pair.pod == "rt-worker-1"  # the pod on the node the two slow pairs share
    assert pair.message.endswith("(node node-c)")
    assert "rank 2 (node node-c) has the slower pairs: 0.091 GB/s on average" in pair.evidence


def test_a_healthy_wire_and_a_loopback_without_speed_give_nothing() -> None:
    fast = record()
    for row in fast["sizes"]:
        row["busbw_gbs"] = 2.9  # 23 Gb/s of 25
    for p in fast["pairs"]:
        p["gbs"] = 1.4
    check = read_check(fast)
    assert check is not None and slow_pair(check) is None
    report = combine([PodDiagnoser("p").feed_all([json.dumps(fast, separators=(", ", ": "))])])
    assert report.codes() == []
    for rank in fast["ranks"]:
        rank["link"] = {"kind": "tcp", "iface": "lo", "gbps": None, "note": "lo: Invalid argument"}
    for row in fast["sizes"]:
        row["busbw_gbs"] = 0.1
    report = combine([PodDiagnoser("p").feed_all([json.dumps(fast, separators=(", ", ": "))])])
    assert report.codes() == []  # no speed read: nothing to hold it against


def test_the_record_is_found_past_the_records_kept_and_by_both_prefilters() -> None:
    line = json.dumps(record(), separators=(", ", ": "))
    train = '{"kind": "train", "step": %d, "loss": 1.0, "time": 1795000000.0}'
    lines = ["start", line, *(train % i for i in range(1, 400))]
    pod = PodDiagnoser("p").feed_all(lines)
    assert pod.records_dropped and pod.comm_record == (2, line)
    block = ("\n".join(lines) + "\n").encode()
    python = PythonPrefilter().candidates(block, 0, len(block), None)
    assert pick_prefilter().candidates(block, 0, len(block), None) == python
    assert python[0] == [len("start\n") + len(line)]  # the record's line, and it alone


def test_burnins_table() -> None:
    check = find_check(LOG.read_text().splitlines())
    assert check is not None
    text = table(check)
    lines = text.splitlines()
    assert lines[0].split() == ["SIZE", "TIME", "ms", "ALGBW", "GB/s", "BUSBW", "GB/s"]
    assert lines[1].split() == ["1", "MiB", "1.90", "0.552", "0.736"]
    assert "3 ranks, nccl (NCCL's choice (NCCL_ALGO unset)), nccl NET/Socket on net1" in text
    assert "slowest pair: ranks 2-0 (pods rt-worker-1 / rt-master-0, nodes node-c / node-a)" in text
    assert lines[-1] == "link: 25 Gb/s (tcp); busbw 8.4 Gb/s is 33% of it"
