"""The wire measured on the local cluster: `burnin` runs retinanet-local's two pods with the comm
check alone (real gloo all-reduces over loopback), prints the table and leaves no job behind."""

from __future__ import annotations

import json

import pytest

from tests.local.test_through_runai_tui import tui


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_burnin_prints_the_table_and_leaves_no_job() -> None:
    res = tui("burnin", "--profile", "retinanet-local", timeout=580)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["SIZE", "TIME", "ms", "ALGBW", "GB/s", "BUSBW", "GB/s"]
    assert lines[1].startswith("1 MiB ")
    sizes = [line for line in lines[1:] if " MiB " in line]
    assert len(sizes) >= 6  # 1 MiB doubling past the 25 MiB bucket, to the model's gradient
    for row in sizes:
        _size, _unit, time_ms, algbw, busbw = row.split()
        assert float(time_ms) > 0 and float(algbw) > 0
        assert float(busbw) == pytest.approx(float(algbw), abs=0.002)  # 2 ranks: 2(n-1)/n = 1
    assert "2 ranks, gloo (gloo ring), gloo/TCP on lo" in res.stdout
    assert "slowest pair: ranks 0-1 (pods retinanet-local-burnin-master-0 / " in res.stdout
    assert "link: speed unknown (/sys/class/net/lo/speed:" in res.stdout
    assert "deleted retinanet-local-burnin" in res.stderr
    assert json.loads(tui("list", "--json").stdout) == []


def test_a_profile_with_one_pod_has_no_wire_to_measure() -> None:
    res = tui("burnin", "--profile", "retinanet-local", "--set", "no_master=true")
    assert res.returncode == 2
    assert res.stderr.splitlines()[0] == (
        "error: profile 'retinanet-local' runs 1 pod: a burn-in measures the wire between pods"
    )
    assert json.loads(tui("list", "--json").stdout) == []
