"""GPU health as preflight reads it in a running pod: `nvidia-smi -q` and the kernel log's XIDs.

`nvidia-smi -q` prints, per GPU (a `GPU 00000000:07:00.0` line), sections indented by four
spaces, `Name : Value` leaves (NVIDIA's nvidia-smi(1) manual, "GPU ATTRIBUTES"; drivers
differ in names, each kept here): ECC Errors > Volatile > `DRAM Uncorrectable` / `SRAM
Uncorrectable...` (Ampere on) or Double Bit > Total (before), Retired Pages > `Pending Page
Blacklist` (`Pending Page Retirement`), Remapped Rows > `Pending` / `Remapping Failure
Occurred`, and `Clocks Throttle Reasons` (renamed `Clocks Event Reasons` in later drivers) >
`HW Slowdown`, `HW Thermal Slowdown`, `HW Power Brake Slowdown`, `SW Thermal Slowdown`:
Active / Not Active. The driver logs an XID as `NVRM: Xid (PCI:0000:07:00): 79, pid=...,
GPU has fallen off the bus.` (NVIDIA's XID errors catalogue).

Each fault is a failed preflight item naming the node, with the fix in the installed CLI's own
terms (`exclude_node` is runai's `--exclude-node`, `node_pools` its `--node-pools`). What
cannot be read (no nvidia-smi, a kernel log the pod may not read) is a skipped item: never a
failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

FIX = (
    "cordon the node (`kubectl cordon NODE`) and tell the cluster's admins; resubmit keeping "
    "off it: `--set exclude_node=[NODE]` (runai --exclude-node NODE), or a node pool or node "
    "type without it (`--set node_pools=[POOL]`: --node-pools; `--set node_type=TYPE`: "
    "--node-type)"
)
THROTTLES = {
    "HW Slowdown": "HW slowdown",
    "HW Thermal Slowdown": "HW thermal slowdown",
    "HW Power Brake Slowdown": "HW power brake",
    "SW Thermal Slowdown": "SW thermal slowdown",
}
CLOCK_SECTIONS = ("Clocks Throttle Reasons", "Clocks Event Reasons")
XID = re.compile(r"NVRM: Xid \((PCI:[0-9A-Fa-f:.]+)\): (\d+)(?:, (.*))?")


@dataclass
class GpuState:
    """What one GPU's `nvidia-smi -q` block says that matters here."""

    bus_id: str
    volatile_uncorrected: int = 0
    pending: list[str] = field(default_factory=list)  # "retired pages", "remapped rows", ...
    throttles: list[str] = field(default_factory=list)  # active reasons (THROTTLES' names)


def parse_smi(text: str) -> list[GpuState]:
    """Every GPU block of `nvidia-smi -q`, read by indentation: a line without ` : ` opens a
    section at its depth; a `Name : Value` line is a leaf of the sections above it."""
    gpus: list[GpuState] = []
    path: list[tuple[int, str]] = []  # (indent, section name)
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        name, sep, value = (part.strip() for part in line.partition(" : "))
        if indent == 0 and name.startswith("GPU ") and not sep:
            gpus.append(GpuState(name[4:]))
            path = []
            continue
        path = [(i, s) for i, s in path if i < indent]
        if not sep:
            path.append((indent, name))
            continue
        if gpus:
            _leaf(gpus[-1], [s for _, s in path], name, value)
    return gpus


def _leaf(gpu: GpuState, sections: list[str], name: str, value: str) -> None:
    if "ECC Errors" in sections and "Volatile" in sections:
        uncorrected = "Uncorrectable" in name or (sections[-1] == "Double Bit" and name == "Total")
        if uncorrected and value.isdigit():
            gpu.volatile_uncorrected += int(value)
    elif sections[-1:] == ["Retired Pages"] and name.startswith("Pending") and value == "Yes":
        gpu.pending.append("retired pages pending")
    elif sections[-1:] == ["Remapped Rows"] and value == "Yes":
        if name == "Pending":
            gpu.pending.append("remapped rows pending")
        elif name == "Remapping Failure Occurred":
            gpu.pending.append("a row remapping failed")
    elif sections and sections[-1] in CLOCK_SECTIONS and name in THROTTLES and value == "Active":
        gpu.throttles.append(THROTTLES[name])


@dataclass(frozen=True)
class Xid:
    device: str
    code: int
    text: str  # the line as the kernel logged it


def parse_xids(lines: list[str]) -> list[Xid]:
    """Every `NVRM: Xid (PCI:...): N, ...` line of a kernel log."""
    found = []
    for line in lines:
        match = XID.search(line)
        if match:
            found.append(Xid(match.group(1), int(match.group(2)), line.strip()))
    return found


@dataclass(frozen=True)
class Fault:
    check: str  # gpu-ecc, gpu-pending, gpu-throttled, gpu-xid
    reason: str


def smi_faults(gpus: list[GpuState], node: str) -> list[Fault]:
    on = f"on node {node or '?'}"
    out = []
    for gpu in gpus:
        if gpu.volatile_uncorrected:
            out.append(Fault("gpu-ecc", f"GPU {gpu.bus_id} {on}: {gpu.volatile_uncorrected} "
                                        "volatile uncorrected ECC error(s) since the last reset"))  # fmt: skip
        if gpu.pending:
            out.append(Fault("gpu-pending", f"GPU {gpu.bus_id} {on}: " + ", ".join(gpu.pending)
                             + " (the GPU needs a reset before that memory is safe)"))  # fmt: skip
        if gpu.throttles:
            out.append(Fault("gpu-throttled", f"GPU {gpu.bus_id} {on}: clocks held down by "
                             + ", ".join(gpu.throttles)))  # fmt: skip
    return out


def xid_faults(xids: list[Xid], node: str) -> list[Fault]:
    """One fault per device, its XIDs listed (the newest line as evidence)."""
    by_device: dict[str, list[Xid]] = {}
    for xid in xids:
        by_device.setdefault(xid.device, []).append(xid)
    return [
        Fault(
            "gpu-xid",
            f"GPU {device} on node {node or '?'}: XID "
            + ", ".join(str(c) for c in dict.fromkeys(x.code for x in found))
            + f" in the kernel log ({found[-1].text})",
        )  # fmt: skip
        for device, found in by_device.items()
    ]
