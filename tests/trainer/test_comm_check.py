"""The wire check (trainer/comm_check.py): when it runs, its sizes, the link as a pod reads it,
and one real 2-rank gloo run of `python -m trainer comm-check`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainer import comm_check

REPO = Path(__file__).resolve().parents[2]
MiB = 1 << 20


def test_auto_runs_when_the_job_spans_more_than_one_pod() -> None:
    two_pods = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "1"}
    one_pod = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"}
    assert comm_check.wanted("auto", two_pods) == (True, "auto: 2 ranks over 2 pods")
    assert comm_check.wanted("auto", one_pod)[0] is False
    assert comm_check.wanted("on", one_pod) == (True, "--comm-check on")
    assert comm_check.wanted("off", two_pods)[0] is False
    assert comm_check.wanted("on", {}) == (False, "one rank: nothing to measure")


def test_sizes_run_from_one_mib_to_the_bucket_or_the_gradient() -> None:
    # A 77 MB gradient (retinanet_resnet18_fpn) above the 25 MiB default bucket: its own size.
    top = comm_check.top_bytes(0, 76_974_624)
    assert top == 76_974_624
    assert comm_check.sizes(top) == [MiB * 2**k for k in range(7)] + [top]
    assert comm_check.top_bytes(0, 10 * MiB) == 25 * MiB  # the bucket is larger
    assert comm_check.top_bytes(512, 10 * MiB) == 512 * MiB
    assert comm_check.top_bytes(0, 10**10) == 256 * MiB  # capped
    assert comm_check.neighbour_pairs(2) == [(0, 1)]
    assert comm_check.neighbour_pairs(3) == [(0, 1), (1, 2), (2, 0)]


def test_the_link_facts_are_read_as_the_pod_sees_them(tmp_path: Path) -> None:
    # The trainer records what the pod has and the NCCL_* it ran with, reading no meaning into
    # them: runai-tui's nccl_env reads them as NCCL does (tests/core/test_wire.py).
    for iface, speed in (("net1", "25000"), ("lo", "-1")):
        net = tmp_path / "class" / "net" / iface
        net.mkdir(parents=True)
        (net / "speed").write_text(speed + "\n")
    for device, rate in (("mlx5_0", "100 Gb/sec (4X EDR)"), ("mlx5_1", "200 Gb/sec (4X HDR)")):
        port = tmp_path / "class" / "infiniband" / device / "ports" / "1"
        port.mkdir(parents=True)
        (port / "rate").write_text(rate + "\n")
    env = {"NCCL_IB_DISABLE": "true", "NCCL_IB_HCA": "mlx5", "PATH": "/bin"}
    facts = comm_check.link_facts("nccl", env, str(tmp_path))
    assert facts["env"] == {"NCCL_IB_DISABLE": "true", "NCCL_IB_HCA": "mlx5"}
    assert facts["rdma"] == [["mlx5_0:1", 100.0], ["mlx5_1:1", 200.0]]
    assert facts["net"] == [["lo", None], ["net1", 25.0]]
    facts = comm_check.link_facts("gloo", {"GLOO_SOCKET_IFNAME": "eth9"}, str(tmp_path))
    assert facts["transport"] == "gloo/TCP on eth9"
    link = facts["link"]
    assert isinstance(link, dict) and link["gbps"] is None
    assert "class/net/eth9/speed" in str(link["note"])


REAL = REPO / "tests" / "core" / "nccl_real"


@pytest.mark.parametrize(("name", "world"), [("all-reduce-perf-16-ranks.txt", 16),
                                             ("nccl-tests-ib-2.19.3.log", 2)])  # fmt: skip
def test_bandwidths_are_nccl_tests_own(name: str, world: int) -> None:
    # Real all_reduce_perf rows: size (B), count, type, redop, root, then out-of-place and
    # in-place time (us), algbw, busbw (GB/s), #wrong; printed to 2 decimals.
    rows = [line.split() for line in (REAL / name).read_text().splitlines()]
    rows = [r for r in rows if len(r) == 13 and r[0].isdigit()]
    assert rows
    for r in rows:
        size = int(r[0])
        for time_us, algbw, busbw in ((r[5], r[6], r[7]), (r[9], r[10], r[11])):
            mine = comm_check.bandwidths(size, float(time_us) / 1e6, world)
            assert mine == (pytest.approx(float(algbw), abs=0.006),
                            pytest.approx(float(busbw), abs=0.011))  # fmt: skip


@pytest.mark.slow  # the trainer's own process
def test_one_rank_is_one_line_and_a_usage_error() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "trainer", "comm-check"], cwd=REPO, capture_output=True, text=True
    )
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0, res.stderr
    assert "one rank: nothing to measure" in res.stderr


@pytest.mark.slow
def test_two_gloo_ranks_record_a_real_table() -> None:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "trainer", "comm-check", "--device", "cpu", "--model", "retinanet_resnet18_fpn",
           "--dataset", "synthetic"]  # fmt: skip
    env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "POD_NAME": "p", "NODE_NAME": "n"}
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    records = [json.loads(x) for x in res.stdout.splitlines() if x.startswith('{"kind": "comm"')]
    assert len(records) == 1, res.stdout
    rec = records[0]
    assert rec["backend"] == "gloo" and rec["world_size"] == 2
    assert rec["transport"].startswith("gloo/TCP on ")
    sizes = [row["bytes"] for row in rec["sizes"]]
    assert sizes[0] == MiB and sizes[-1] > 64 * MiB  # the model's gradient, above the bucket
    for row in rec["sizes"]:
        assert row["time_ms"] > 0
        # nccl-tests' definitions: algbw = bytes / time, busbw = algbw x 2(n-1)/n (n = 2: equal)
        assert row["algbw_gbs"] == pytest.approx(row["bytes"] / row["time_ms"] / 1e6, rel=0.02)
        assert row["busbw_gbs"] == pytest.approx(row["algbw_gbs"], rel=0.01)
    assert rec["pairs"][0]["ranks"] == [0, 1] and rec["pairs"][0]["gbs"] > 0
    assert rec["slowest_pair"]["nodes"] == ["n", "n"]
    assert "comm check: all-reduce busbw" in res.stdout
