"""GPU health in preflight (runai_tui/knowledge/probes/gpu_health.py): `nvidia-smi -q` outputs in the
layout NVIDIA's nvidia-smi(1) manual documents ("GPU ATTRIBUTES": ECC Errors > Volatile,
Retired Pages > Pending Page Blacklist, Remapped Rows > Pending, Clocks Throttle Reasons /
Clocks Event Reasons), one from a recent driver (A100: SRAM/DRAM counters, Clocks Event Reasons)
and one from an older (V100: Single/Double Bit totals, Clocks Throttle Reasons), and a kernel log
with XID lines as the driver writes them (NVIDIA's XID catalogue).

The kernel-log excerpts in tests/core/gpu_health/ keep the forms drivers print: `Xid (PCI:...):
N, pid=P, name=X, ...` (recent drivers; `pid='<unknown>', name=<unknown>` for a kernel context:
github.com/madMAx43v3r/chia-gigahorse/issues/301, tinygrad/tinygrad/issues/6947), a `pid=` with no
`name=` (stas00/ml-engineering, "Troubleshooting NVIDIA GPUs"), the old `Xid (0000:01:00): 13, ...`
with no `PCI:` and no process, XID 119's GSP timeout and XID 154's recovery action (lines quoted in
leptonai/gpud's tests), dated as `dmesg`, `dmesg -T` and `dmesg --time-format iso` print them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from runai_tui.knowledge.docs import XID_CODES, xid_codes_table
from runai_tui.knowledge.probes import gpu_health, xid
from runai_tui.knowledge.probes.preflight import (
    FAIL,
    MARK,
    PASS,
    SCRIPT,
    SKIP,
    WARN,
    PodChecklist,
    Preflight,
    checklist,
    render_text,
    status,
)
from runai_tui.knowledge.probes.probe_facts import parse_facts

HERE = Path(__file__).parent / "gpu_health"


def probe_output(
    smi: str | None, kernel: str | None, error: str = "", uptime: str = "", clock: str = ""
) -> str:
    """What preflight's probe prints for these readings (`|` keeps each line's indentation);
    `uptime` and `clock` as the probe reads /proc/uptime and `date +%s %z` ("" not printed)."""
    lines = ["@@pf python 3.12.3"]
    if smi is not None:
        lines += [f"@@pf smi |{line}" for line in smi.splitlines()]
    else:
        lines.append(f"@@pf smi_error {error or 'no nvidia-smi in the pod'}")
    if kernel is not None:
        lines.append("@@pf kernel_log ok")
        lines += [f"@@pf {k} {v}" for k, v in (("uptime", uptime), ("clock", clock)) if v]
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
        ("gpu-xid", PASS, "no NVIDIA XID error in the kernel log in the last 24 h"),
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
    assert [(x.device, x.code, x.pid, x.process) for x in xids] == [
        ("PCI:0000:07:00", 79, "2417", "python3"), ("PCI:0000:0f:00", 48, "2417", "python3"),
        ("PCI:0000:0f:00", 63, "2417", "python3"),
    ]  # fmt: skip
    healthy = "GPU 00000000:07:00.0\n    Product Name : NVIDIA H100 80GB HBM3\n"
    items = gpu_items(probe_output(healthy, log))  # no clock read: the lines are undated
    assert items[0][:2] == ("gpu-health", PASS)
    assert items[1] == ("gpu-xid", FAIL, "GPU PCI:0000:07:00 on node node-7: XID 79 (GPU has "
                        "fallen off the bus; hardware), undated ([ 4213.122141] NVRM: Xid "
                        "(PCI:0000:07:00): 79, pid=2417, name=python3, GPU has fallen off the bus.)")  # fmt: skip
    assert items[2][:2] == ("gpu-xid", FAIL)
    assert items[2][2].startswith("GPU PCI:0000:0f:00 on node node-7: XID 48 (double-bit ECC")
    # 63 alone on a GPU whose rows nvidia-smi shows are not pending: the spare row is in use.
    assert items[3][:2] == ("gpu-xid", WARN) and "XID 63 (GPU memory row remapped" in items[3][2]
    assert [i for i in items if i[1] == FAIL] == items[1:3]


UPTIME_5_DAYS = "432000.00 1698000.12"  # /proc/uptime: the node booted 5 days ago


def test_only_recent_xids_count_hardware_fails_and_the_application_warns() -> None:
    log = (HERE / "kern-xid-mixed.log").read_text()
    output = probe_output("", log, uptime=UPTIME_5_DAYS.split()[0], clock="1796551200 +0000")
    result = gpu_only(checklist("job-worker-0", output, node="node-7"))
    got = [(i.code, status(i), i.message) for i in result.items if i.code == "gpu-xid"]
    # XID 13 of 5 days ago (3601 s after boot) is past the 24 h window: not counted.
    assert [(c, s) for c, s, _ in got] == [("gpu-xid", WARN), ("gpu-xid", FAIL)]
    warned, failed = got[0][2], got[1][2]
    assert warned.startswith(
        "GPU PCI:0000:3b:00 on node node-7: XID 31 (GPU memory page fault (an illegal memory "
        "access); application) from python3 (pid 20817), 43 (GPU stopped processing (the channel "
        "was reset after an application fault); application) from python3 (pid 20817), 45 ("
    )
    assert "16 min ago" in warned and "XID 13" not in warned
    assert failed.startswith("GPU PCI:0000:86:00 on node node-7: XID 79 (GPU has fallen off the "
                             "bus; hardware), 8 min ago (")  # fmt: skip
    warning = next(i for i in result.items if status(i) == WARN)
    assert "usually the application, not the GPU" in warning.fix and warning.severity == "warning"
    assert next(i for i in result.items if status(i) == FAIL).fix == gpu_health.FIX
    # Warnings do not fail the pod, nor are they faults (no cordon, no remedy); the text says so.
    assert [f.message for f in result_faults(result)] == [failed]
    text = render_text(_report(result))
    assert "  WARN  gpu-xid" in text and text.endswith(
        "1 failed check(s), 1 warning(s) in 1 pod(s)"
    )


def gpu_only(result: PodChecklist) -> PodChecklist:
    """The pod's GPU items alone (probe_output prints no other fact: those checks fail)."""
    return PodChecklist(result.pod, [i for i in result.items if i.code.startswith("gpu-")])


def result_faults(result: PodChecklist) -> list:
    return _report(result).faults()


def _report(result: PodChecklist) -> Preflight:
    return Preflight([result])


def test_an_application_xid_alone_warns_and_the_pod_passes() -> None:
    line = "[431000.512210] NVRM: Xid (PCI:0000:3b:00): 13, pid=20817, name=python3, Graphics ..."
    result = gpu_only(checklist("p", probe_output("", line, uptime="431100.0"), node="node-7"))
    assert [status(i) for i in result.items if i.code == "gpu-xid"] == [WARN]
    assert not result.failed and "from python3 (pid 20817), 1 min ago" in result.items[-1].message
    old = checklist("p", probe_output("", line, uptime=str(431001 + 25 * 3600)), node="n")
    [passed] = [i for i in old.items if i.code == "gpu-xid"]
    assert status(passed) == PASS and passed.message == (
        "no NVIDIA XID error in the kernel log in the last 24 h (1 older line(s) not counted: "
        "XID 13, the newest 25 h ago)"
    )


def test_dmesg_T_stamps_are_the_pod_s_local_time_and_63_fails_while_a_row_is_pending() -> None:
    log = (HERE / "kern-xid-ctime.log").read_text()
    smi = (HERE / "a100-faults.txt").read_text()  # 07:00.0 has remapped rows pending, 0F not
    # Sun Dec 6 11:00:00 2026 at +0100 is 10:00:00 UTC; the 48 and 63 lines are 2 min older.
    output = probe_output(smi, log, clock="1796551200 +0100")
    got = [i for i in gpu_items(output) if i[0] == "gpu-xid"]
    assert [(s, m.split(":")[0:3]) for _, s, m in got] == [
        (FAIL, ["GPU PCI", "0000", "07"]), (WARN, ["GPU PCI", "0000", "0f"]),
    ]  # fmt: skip
    assert (
        "XID 48 (double-bit ECC error (uncorrectable GPU memory error); hardware), 63 ("
        in (got[0][2])
    )
    assert ", 1 min ago (" in got[0][2] and "XID 79" not in got[0][2]  # 79: 5 days before
    assert (
        "XID 63" in got[1][2]
        and "the GPU still works" in checklist("p", output, node="node-7").items[-1].fix
    )
    # Without nvidia-smi nothing says the remap was applied: 63 fails on both GPUs.
    blind = [s for _, s, _ in gpu_items(probe_output(None, log, clock="1796551200 +0100"))]
    assert blind == [SKIP, FAIL, FAIL]


def test_iso_stamps_driver_xids_that_need_a_reset_fail_and_the_others_warn() -> None:
    log = (HERE / "kern-xid-iso.log").read_text()
    got = gpu_items(probe_output("", log, clock="1796554800 +0000"))  # 2026-12-06T11:00:00Z
    by_gpu = {m.split(" on ")[0]: (s, m) for _, s, m in got if _ != "gpu-health"}
    assert (
        {gpu: s for gpu, (s, _) in by_gpu.items()}
        == {
            "GPU PCI:0000:9b:00": FAIL,  # 119: GSP timeout, the GPU needs a reset
            "GPU PCI:0009:01:00": FAIL,  # 154: the driver asks to drain and reset
            "GPU PCI:0000:1b:00": FAIL,  # 94: a contained uncorrectable memory error
            "GPU PCI:0000:2c:00": WARN,  # 38 (driver firmware, NVIDIA: ignore) and 171 (not in the table)
        }
    )
    assert (
        "XID 119 (GSP RPC timeout" in by_gpu["GPU PCI:0000:9b:00"][1]
        and "; driver)" in (by_gpu["GPU PCI:0000:9b:00"][1])
    )
    assert ", 19 min ago (" in by_gpu["GPU PCI:0000:9b:00"][1]
    soft = by_gpu["GPU PCI:0000:2c:00"][1]
    assert f"171 (not in runai-tui's table: see {xid.CATALOGUE_URL})" in soft
    item = [i for i in checklist("p", probe_output("", log)).items if status(i) == WARN][0]
    assert "the driver logged it and went on" in item.fix and xid.CATALOGUE_URL in item.fix
    # 154 back to no action asks nothing of the node.
    calm = "NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x4 (Drain and " \
        "Reset) to 0x0 (None)"  # fmt: skip
    assert [s for _, s, _ in gpu_items(probe_output("", calm))][-1] == WARN


def test_old_driver_lines_without_pci_or_process_are_read() -> None:
    log = (HERE / "kern-xid-old-driver.log").read_text()
    xids = gpu_health.parse_xids(log.splitlines())
    assert [(x.device, x.code, x.pid, x.process, x.age) for x in xids] == [
        ("0000:01:00", 13, "", "", None), ("PCI:0000:10:1c", 63, "1896", "", None),
    ]  # fmt: skip
    got = gpu_items(probe_output(None, log))
    assert [(s, m.split(",")[0]) for _, s, m in got[1:]] == [
        (WARN, "GPU 0000:01:00 on node node-7: XID 13 (graphics engine exception (an illegal "
               "instruction or address in a kernel); application)"),
        (FAIL, "GPU PCI:0000:10:1c on node node-7: XID 63 (GPU memory row remapped or page "
               "retired (takes effect at the next reset); hardware)"),
    ]  # fmt: skip
    assert "from pid 1896" not in got[2][2]  # a failure names no process: the node is at fault


def test_the_table_holds_the_filed_codes_with_their_cause() -> None:
    causes = {code: xid.info(code).cause for code in xid.TABLE}  # type: ignore[union-attr]
    for code in (48, 63, 64, 74, 79, 92, 94, 95):
        assert causes[code] == xid.HARDWARE, code
    for code in (13, 31, 43, 45):
        assert causes[code] == xid.APPLICATION and not xid.TABLE[code].fails, code
    assert causes[119] == xid.DRIVER and xid.TABLE[119].fails  # NVIDIA: RESET_GPU
    assert not xid.TABLE[38].fails and xid.info(171) is None
    assert all(row.code == code for code, row in xid.TABLE.items())


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


def test_the_probe_keeps_the_newest_lines_of_each_gpu_and_code_and_dates_them(
    tmp_path: Path,
) -> None:
    """The real probe in a real sh, its `dmesg` a script printing a recorded log with a storm of
    XID 45 after the XID 79: the 79 survives the storm, and the clock is read."""
    storm = [
        f"[431{600 + i}.000001] NVRM: Xid (PCI:0000:3b:00): 45, pid=20817, name=python3, Ch 0000"
        f"{i:04x}"
        for i in range(300)
    ]
    log = (HERE / "kern-xid-mixed.log").read_text().splitlines() + storm
    (tmp_path / "kern.log").write_text("\n".join(log) + "\n")
    dmesg = tmp_path / "dmesg"
    dmesg.write_text(f"#!/bin/sh\ncat {tmp_path / 'kern.log'}\n")
    dmesg.chmod(0o755)
    sh = shutil.which("dash") or shutil.which("sh")
    assert sh
    path = f"{tmp_path}:{os.environ['PATH']}"
    out = subprocess.run(
        [sh, "-c", SCRIPT], env={"PATH": path}, capture_output=True, text=True, timeout=30
    ).stdout
    lines = parse_facts(out, MARK)
    kept = [gpu_health.XID.search(x) for x in lines["xid"]]
    codes = [(m.group(1), int(m.group(2))) for m in kept if m]
    assert codes == [
        ("PCI:0000:3b:00", 13), ("PCI:0000:3b:00", 31), ("PCI:0000:3b:00", 43),
        ("PCI:0000:86:00", 79), *[("PCI:0000:3b:00", 45)] * 5,
    ]  # fmt: skip
    assert lines["xid"][-1].endswith("Ch 0000012b")  # the newest of the storm
    assert float(lines["uptime"][0]) > 0
    now, offset = lines["clock"][0].split(" ")
    assert now.isdigit() and len(offset) == 5


def test_docs_health_md_holds_the_xid_table() -> None:
    doc = (Path(__file__).parents[2] / XID_CODES.doc).read_text()
    assert XID_CODES.current(doc) == xid_codes_table(), XID_CODES.stale


def test_a_stamp_later_than_the_clock_is_undated_and_still_counts() -> None:
    """A container whose /proc/uptime is its own (lxcfs) reads a shorter uptime than the
    kernel's stamps: such a line cannot be dated, so it counts (never silently dropped)."""
    line = "[431000.512210] NVRM: Xid (PCI:0000:86:00): 79, pid=20822, name=python3, GPU has ..."
    [found] = gpu_health.parse_xids([line], gpu_health.KernelClock(uptime=5000.0))
    assert found.age is None
    got = gpu_items(probe_output("", line, uptime="5000.0"))
    assert got[-1][:2] == ("gpu-xid", FAIL) and ", undated (" in got[-1][2]
    # A stamp a few seconds ahead (clocks read one after the other) is now, not undated.
    [now] = gpu_health.parse_xids([line], gpu_health.KernelClock(uptime=430990.0))
    assert now.age == 0.0
