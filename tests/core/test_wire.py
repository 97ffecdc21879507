"""The trainer's wire check read back (runai_tui/knowledge/records/wire.py): diagnose's slow-wire
findings from a recorded `comm` record (tests/core/diagnose_logs/wire-slow.log: three ranks on
TCP at 25 Gb/s, one node slow), burnin's table, and the record found however long the log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


# -- like with like: pairs between pods and pairs inside a pod compared apart ------------------


def job_record(
    pods: int, per_pod: int, gbs: dict[tuple[int, int], float], inside: float, between: float
) -> dict:
    """A comm record of `pods` pods x `per_pod` ranks, the trainer's ring of neighbour pairs
    (r, r+1 mod n): pairs inside a pod at `inside` GB/s, between pods at `between`, `gbs`
    overriding single pairs."""
    world = pods * per_pod
    ranks = [{"rank": r, "pod": f"j-{r // per_pod}", "node": f"node-{r // per_pod}",
              "transport": "nccl", "link": {"kind": "rdma", "gbps": 200.0}}
             for r in range(world)]  # fmt: skip
    pairs = []
    for a in range(world):
        b = (a + 1) % world
        same = a // per_pod == b // per_pod
        pairs.append({"ranks": [a, b], "pods": [ranks[a]["pod"], ranks[b]["pod"]],
                      "nodes": [ranks[a]["node"], ranks[b]["node"]],
                      "gbs": gbs.get((a, b), inside if same else between)})  # fmt: skip
    return {"kind": "comm", "step": 0, "backend": "nccl", "algorithm": "NCCL's choice",
            "transport": "nccl", "world_size": world, "ranks": ranks,
            "sizes": [{"bytes": 64 << 20, "time_ms": 6.0, "algbw_gbs": 11.2,
                       "busbw_gbs": 21.0}], "pairs": pairs, "seconds": 2.0}  # fmt: skip


def diagnosed(record: dict) -> list:
    line = json.dumps(record, separators=(", ", ": "))
    return combine([PodDiagnoser("j-0").feed_all([line])]).findings


def test_a_healthy_two_by_eight_job_is_not_accused() -> None:
    # 14 NVLink pairs at 150 GB/s, 2 network pairs at 22 GB/s: 6.8x apart, and healthy.
    record = job_record(2, 8, {}, inside=150.0, between=22.0)
    check = read_check(record)
    assert check is not None and slow_pair(check) is None
    assert [f.code for f in diagnosed(record)] == []


def test_one_slow_network_pair_is_still_named() -> None:
    # 4 pods x 8: node-2's NIC is slow, so both of its pairs between pods are (15-16, 23-24).
    record = job_record(4, 8, {(15, 16): 3.0, (23, 24): 3.5}, inside=150.0, between=22.0)
    check = read_check(record)
    assert check is not None
    found = slow_pair(check)
    assert found is not None
    pair, node, evidence = found
    assert pair.ranks == (15, 16) and node == "node-2"
    assert "of the other pairs between pods" in evidence
    [finding] = diagnosed(record)
    assert finding.code == "wire-slow-pair" and finding.pod == "j-2"
    assert finding.message.endswith("(node node-2)")


def test_one_slow_link_names_the_link_and_suspects_no_node() -> None:
    # One cable: the pair 7-8 alone is slow; node-0 and node-1 each have one slow pair and one
    # fast one: either end. The finding is the job's: no node is kept off for it.
    record = job_record(4, 8, {(7, 8): 2.0}, inside=150.0, between=22.0)
    [finding] = diagnosed(record)
    assert finding.code == "wire-slow-pair" and finding.pod == ""
    assert finding.message.endswith("(the link node-0 / node-1)")
    assert "either" not in finding.message and "alike" in finding.evidence


def test_a_slow_pair_inside_a_pod_names_its_node() -> None:
    # An NVLink down between GPUs 3 and 4 of node-1 (ranks 11-12): the other pairs inside
    # the pods run at 150, the network pairs are not its peers.
    record = job_record(2, 8, {(11, 12): 12.0}, inside=150.0, between=22.0)
    [finding] = diagnosed(record)
    assert finding.code == "wire-slow-pair" and finding.pod == "j-1"
    assert "of the other pairs inside a pod" in finding.evidence
    assert "both ranks are on node node-1" in finding.evidence


# -- the link, read from the facts the trainer records, as NCCL reads NCCL_* -------------------


def with_facts(env: dict[str, str]) -> dict:
    """The slow 3-pod record, its ranks with the facts a new trainer records instead of a link:
    mlx5_0/mlx5_1 at 200 Gb/s, net1 at 25 Gb/s."""
    rec = record()
    for rank in rec["ranks"]:
        del rank["link"]
        rank["transport"] = "nccl (the network NCCL picks; NCCL_DEBUG=INFO names it)"
        rank["env"] = env
        rank["rdma"] = [["mlx5_0:1", 200.0], ["mlx5_1:1", 200.0]]
        rank["net"] = [["eth0", 10.0], ["lo", None], ["net1", 25.0]]
    return rec


@pytest.mark.parametrize(
    ("env", "transport", "link"),
    [
        ({"NCCL_IB_HCA": "mlx5"}, "nccl NET/IB asked (mlx5_0:1,mlx5_1:1)", ("rdma", 200.0)),
        ({"NCCL_IB_HCA": "=mlx5_1"}, "nccl NET/IB asked (mlx5_1:1)", ("rdma", 200.0)),
        ({"NCCL_IB_HCA": "mlx5", "NCCL_IB_DISABLE": "true"}, "nccl NET/IB asked (mlx5_0:1,mlx5_1:1)",
         ("rdma", 200.0)),  # `true` is 0 to NCCL: IB stays on
        ({"NCCL_IB_DISABLE": "0x1", "NCCL_SOCKET_IFNAME": "net"}, "nccl NET/Socket on net1",
         ("tcp", 25.0)),
        ({"NCCL_IB_DISABLE": "2", "NCCL_SOCKET_IFNAME": "^lo,eth"}, "nccl NET/Socket on net1",
         ("tcp", 25.0)),
        ({"NCCL_IB_HCA": "mlx4"}, "nccl NET/IB asked", ("rdma", None)),
    ],
)  # fmt: skip
def test_the_link_is_read_as_nccl_reads_its_variables(
    env: dict[str, str], transport: str, link: tuple[str, float | None]
) -> None:
    check = read_check(with_facts(env))
    assert check is not None
    assert check.transport == transport
    assert {(kind, gbps) for kind, gbps, _ in check.links} == {link}


def test_the_shipped_rdma_profiles_prefix_gets_its_wire_judged() -> None:
    # retinanet-rdma sets NCCL_IB_HCA=mlx5 (NCCL's prefix form): the rate of mlx5_0/mlx5_1 is
    # read, and an all-reduce at a tiny share of 200 Gb/s is a slow wire.
    env = {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "mlx5", "NCCL_IB_GID_INDEX": "3"}
    line = json.dumps(with_facts(env), separators=(", ", ": "))
    report = combine([PodDiagnoser("rt-master-0").feed_all([line])])
    slow = next(f for f in report.findings if f.code == "wire-slow")
    assert "of the 200 Gb/s rdma link the pods read" in slow.evidence
    check = read_check(with_facts({"NCCL_IB_HCA": "mlx4"}))
    assert check is not None and "no port rate readable for NCCL_IB_HCA=mlx4" in check.links[0][2]
