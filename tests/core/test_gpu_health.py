"""GPU health in preflight (runai_tui/knowledge/probes/gpu_health.py): `nvidia-smi -q` outputs in the
layout NVIDIA's nvidia-smi(1) manual documents ("GPU ATTRIBUTES": ECC Errors > Volatile,
Retired Pages > Pending Page Blacklist, Remapped Rows > Pending, Clocks Throttle Reasons /
Clocks Event Reasons), one from a recent driver (A100: SRAM/DRAM counters, Clocks Event Reasons)
and one from an older (V100: Single/Double Bit totals, Clocks Throttle Reasons), and a kernel log
with XID lines as the driver writes them (NVIDIA's XID catalogue)."""

from __future__ import annotations

from pathlib import Path

from runai_tui.knowledge.probes import gpu_health
from runai_tui.knowledge.probes.preflight import FAIL, PASS, SKIP, checklist, status

HERE = Path(__file__).parent / "gpu_health"


def probe_output(smi: str | None, kernel: str | None, error: str = "") -> str:
    """What preflight's probe prints for these readings (`|` keeps each line's indentation)."""
    lines = ["@@pf python 3.12.3"]
    if smi is not None:
        lines += [f"@@pf smi |{line}" for line in smi.splitlines()]
    else:
        lines.append(f"@@pf smi_error {error or 'no nvidia-smi in the pod'}")
    if kernel is not None:
        lines.append("@@pf kernel_log ok")
        lines += [f"@@pf xid {x}" for x in kernel.splitlines() if "NVRM: Xid" in x]
    else:
        lines.append("@@pf kernel_log dmesg: read kernel buffer failed: Operation not permitted")
    return "\n".join([*lines, "@@pf end ok"])


def gpu_items(output: str) -> list[tuple[str, str, str]]:
    items = checklist("job-worker-0", output, node="node-7").items
    return [(i.code, status(i), i.message) for i in items if i.code.startswith("gpu-")]


def test_ecc_errors_rows_pending_and_a_thermal_slowdown_each_name_the_node() -> None:
    gpus = gpu_health.parse_smi((HERE / "a100-faults.txt").read_text())
    assert [g.bus_id for g in gpus] == ["00000000:07:00.0", "00000000:0F:00.0"]
    assert (gpus[0].volatile_uncorrected, gpus[0].pending) == (2, ["remapped rows pending"])
    assert gpus[0].throttles == ["HW slowdown", "HW thermal slowdown"]
    # The second GPU's uncorrected errors are aggregate (before the last reset): not counted.
    assert (gpus[1].volatile_uncorrected, gpus[1].pending, gpus[1].throttles) == (0, [], [])
    items = gpu_items(probe_output((HERE / "a100-faults.txt").read_text(), ""))
    assert items == [
        ("gpu-ecc", FAIL, "GPU 00000000:07:00.0 on node node-7: 2 volatile uncorrected ECC "
                          "error(s) since the last reset"),
        ("gpu-pending", FAIL, "GPU 00000000:07:00.0 on node node-7: remapped rows pending (the "
                              "GPU needs a reset before that memory is safe)"),
        ("gpu-throttled", FAIL, "GPU 00000000:07:00.0 on node node-7: clocks held down by HW "
                                "slowdown, HW thermal slowdown"),
        ("gpu-xid", PASS, "no NVIDIA XID error in the kernel log"),
    ]  # fmt: skip
    output = probe_output((HERE / "a100-faults.txt").read_text(), "")
    failed = [i for i in checklist("p", output).items if i.code.startswith("gpu-")]
    failed = [i for i in failed if status(i) == FAIL]
    assert all(f.fix == gpu_health.FIX for f in failed)
    assert "cordon the node" in gpu_health.FIX and "--exclude-node" in gpu_health.FIX
    assert "--node-pools" in gpu_health.FIX


def test_an_older_driver_s_double_bit_total_retired_page_and_power_brake() -> None:
    items = gpu_items(probe_output((HERE / "v100-faults.txt").read_text(), ""))
    assert [(c, s) for c, s, _ in items] == [
        ("gpu-ecc", FAIL), ("gpu-pending", FAIL), ("gpu-throttled", FAIL), ("gpu-xid", PASS),
    ]  # fmt: skip
    assert "1 volatile uncorrected ECC error(s)" in items[0][2]  # Double Bit > Total, volatile
    assert "retired pages pending" in items[1][2]
    assert items[2][2].endswith("clocks held down by HW power brake")


def test_xid_lines_of_the_kernel_log_name_the_gpu_and_the_node() -> None:
    log = (HERE / "kern-xid.log").read_text()
    xids = gpu_health.parse_xids(log.splitlines())
    assert [(x.device, x.code) for x in xids] == [
        ("PCI:0000:07:00", 79), ("PCI:0000:0f:00", 48), ("PCI:0000:0f:00", 63),
    ]  # fmt: skip
    healthy = "GPU 00000000:07:00.0\n    Product Name : NVIDIA H100 80GB HBM3\n"
    items = gpu_items(probe_output(healthy, log))
    assert items[0][:2] == ("gpu-health", PASS)
    assert items[1] == ("gpu-xid", FAIL, "GPU PCI:0000:07:00 on node node-7: XID 79 in the kernel "
                        "log ([ 4213.122141] NVRM: Xid (PCI:0000:07:00): 79, pid=2417, name=python3, "
                        "GPU has fallen off the bus.)")  # fmt: skip
    assert items[2][2].startswith("GPU PCI:0000:0f:00 on node node-7: XID 48, 63 in the kernel log")


def test_what_the_pod_cannot_read_is_skipped_never_failed() -> None:
    items = gpu_items(probe_output(None, None))
    assert [(c, s) for c, s, _ in items] == [("gpu-health", SKIP), ("gpu-xid", SKIP)]
    assert items[0][2] == "nvidia-smi -q not read (no nvidia-smi in the pod): skipped"
    assert "Operation not permitted" in items[1][2] and "XIDs not checked" in items[1][2]
    items = gpu_items(probe_output(None, "", error="No devices were found"))
    assert items[0] == (
        "gpu-health",
        SKIP,
        "nvidia-smi -q not read (No devices were found): skipped",
    )
