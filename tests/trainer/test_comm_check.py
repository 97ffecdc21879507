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


def test_the_link_speed_is_read_as_the_pod_sees_it(tmp_path: Path) -> None:
    net = tmp_path / "class" / "net" / "net1"
    net.mkdir(parents=True)
    (net / "speed").write_text("25000\n")
    env = {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "=net1"}
    transport, link = comm_check.link_of("nccl", env, str(tmp_path))
    assert transport == "nccl NET/Socket on net1"
    assert link == {"kind": "tcp", "iface": "net1", "gbps": 25.0}
    for device, rate in (("mlx5_0", "100 Gb/sec (4X EDR)"), ("mlx5_1", "200 Gb/sec (4X HDR)")):
        port = tmp_path / "class" / "infiniband" / device / "ports" / "1"
        port.mkdir(parents=True)
        (port / "rate").write_text(rate + "\n")
    _, link = comm_check.link_of("nccl", {"NCCL_IB_HCA": "mlx5_1"}, str(tmp_path))
    assert link == {"kind": "rdma", "gbps": 200.0, "source": "mlx5_1:1"}
    _, link = comm_check.link_of("nccl", {}, str(tmp_path))
    assert link["gbps"] == 100.0  # the slower port bounds it
    _, link = comm_check.link_of("gloo", {"GLOO_SOCKET_IFNAME": "eth9"}, str(tmp_path))
    assert link["gbps"] is None and "class/net/eth9/speed" in str(link["note"])


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
