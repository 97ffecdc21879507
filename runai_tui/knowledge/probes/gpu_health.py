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

Each fault of the node is a failed preflight item naming the node, with the fix in the
installed CLI's own terms (`exclude_node` is runai's `--exclude-node`, `node_pools` its
`--node-pools`). An XID counts only from the last RECENT_HOURS, and only fails the node when
knowledge/probes/xid.py says the node is at fault (hardware, or a driver fault that needs a GPU reset);
the others (the application's, naming the process the driver logged) are warnings. What cannot
be read (no nvidia-smi, a kernel log the pod may not read) is a skipped item: never a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from runai_tui.knowledge.findings import ERROR, WARNING
from runai_tui.knowledge.probes import xid

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
class KernelClock:
    """What dates a kernel log line: the node's `uptime` (seconds since boot, /proc/uptime) for
    dmesg's `[12345.678901]` stamps, and the pod's `now` (epoch seconds) with its UTC offset
    (`date +%z`, in seconds) for `dmesg -T` (`[Sun Dec  6 11:19:48 2026]`, local time) and
    `--time-format iso` (`2026-12-06T11:19:48,123456+00:00`) stamps; None: not read."""

    uptime: float | None = None
    now: float | None = None
    utc_offset: int | None = None

    @classmethod
    def from_facts(cls, uptime: str, clock: str) -> KernelClock:
        """From the probe's `uptime` (`4213.55`) and `clock` (`1796555988 +0100`) facts."""
        now_text, _, offset = clock.partition(" ")
        sign = -1 if offset.startswith("-") else 1
        digits = offset.lstrip("+-")
        return cls(
            _number(uptime.split(" ")[0]),
            _number(now_text),
            sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
            if len(digits) == 4 and digits.isdigit()
            else None,
        )

    def age(self, prefix: str) -> float | None:
        """Seconds since the line whose text before `NVRM:` is `prefix` was logged; None when
        its stamp is missing, this clock cannot date it, or it is later than the clock (an
        uptime a container namespaces, as lxcfs does: that clock is not the kernel's)."""
        boot = BOOT_STAMP.search(prefix)
        if boot is not None:
            age = None if self.uptime is None else self.uptime - float(boot.group(1))
        else:
            stamp = _epoch(prefix, self.utc_offset)
            age = None if stamp is None or self.now is None else self.now - stamp
        return None if age is None or age < -CLOCK_SLACK else max(age, 0.0)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


CLOCK_SLACK = 60.0  # seconds a stamp may be ahead of the clock read after it (skew, rounding)
BOOT_STAMP = re.compile(r"\[\s*(\d+\.\d+)\]")  # dmesg: seconds since boot
CTIME_STAMP = re.compile(r"\[\w{3} (\w{3}) +(\d{1,2}) (\d\d:\d\d:\d\d) (\d{4})\]")  # dmesg -T
ISO_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?[+-]\d\d:?\d\d")  # iso


def _epoch(prefix: str, utc_offset: int | None) -> float | None:
    iso = ISO_STAMP.search(prefix)
    if iso is not None:
        return datetime.fromisoformat(iso.group(0)).timestamp()
    ctime = CTIME_STAMP.search(prefix)
    if ctime is None or utc_offset is None:
        return None
    month, day, clock, year = ctime.groups()
    try:
        local = datetime.strptime(f"{year} {month} {day} {clock}", "%Y %b %d %H:%M:%S")
    except ValueError:
        return None
    return local.replace(tzinfo=timezone(timedelta(seconds=utc_offset))).timestamp()


@dataclass(frozen=True)
class Xid:
    """One `NVRM: Xid (PCI:0000:07:00): 79, pid=2417, name=python3, ...` line: the GPU, the
    code, the process the driver named (`pid`, `process`: "" when it named none or
    `<unknown>`), how long ago (`age`, seconds; None: undated) and the line as logged."""

    device: str
    code: int
    text: str
    pid: str = ""
    process: str = ""
    age: float | None = None


# Drivers before about 470 wrote `Xid (0000:01:00): 13, ...`, later ones `Xid (PCI:0000:01:00):
# 79, pid=2417, name=python3, ...` (`pid='<unknown>', name=<unknown>` for a kernel context).
XID = re.compile(r"NVRM: Xid \(((?:PCI:)?[0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f.]+)\): (\d+)(.*)")
PROCESS = re.compile(r"^,\s*pid='?([^,']*)'?(?:,\s*name=([^,]*))?")


def parse_xids(lines: list[str], clock: KernelClock | None = None) -> list[Xid]:
    """Every `NVRM: Xid (...): N, ...` line of a kernel log, dated by `clock`."""
    clock = clock or KernelClock()
    found = []
    for line in lines:
        match = XID.search(line)
        if not match:
            continue
        who = PROCESS.match(match.group(3))
        pid, name = (who.group(1), who.group(2) or "") if who else ("", "")
        pid, name = ("" if v.strip() in ("<unknown>", "") else v.strip() for v in (pid, name))
        age = clock.age(line[: match.start()])
        found.append(Xid(match.group(1), int(match.group(2)), line.strip(), pid, name, age))
    return found


def bus_key(device: str) -> tuple[int, int, int] | None:
    """(domain, bus, device) of `PCI:0000:07:00` (an XID's) or `00000000:07:00.0` (nvidia-smi's),
    so the two name one GPU alike; None when it is neither."""
    parts = device.removeprefix("PCI:").split(".")[0].split(":")
    try:
        return (int(parts[0], 16), int(parts[1], 16), int(parts[2], 16))
    except (IndexError, ValueError):
        return None


@dataclass(frozen=True)
class Fault:
    check: str  # gpu-ecc, gpu-pending, gpu-throttled, gpu-xid
    reason: str
    severity: str = ERROR  # a failure; WARNING: an XID that is not the node's fault
    fix: str = FIX


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


RECENT_HOURS = 24  # an XID older than this does not count (dmesg holds this boot's lines only)


def ago(seconds: float | None) -> str:
    """`3 min ago`, `5 h ago`, `2 d ago`; `undated` for None."""
    if seconds is None:
        return "undated"
    if seconds < 3600:
        return f"{max(0, int(seconds // 60))} min ago"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} d ago"


def fails(found: Xid, pending: set[tuple[int, int, int] | None] | None) -> bool:
    """Whether `found` fails the node (knowledge/probes/xid.py says who is at fault); `pending`: the
    GPUs nvidia-smi shows with a remap or retirement pending (None: not read)."""
    row = xid.info(found.code)
    if row is None:
        return False
    if found.code == 154:  # `GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot...)`
        return not found.text.rstrip(". ").endswith(xid.RECOVERY_NONE)
    if found.code in xid.PENDING_ONLY:
        return pending is None or bus_key(found.device) in pending
    return row.fails


@dataclass
class XidJudgement:
    """The kernel log's XIDs judged: `faults` (failures and warnings, per GPU) and `old`, the
    lines older than the window (not counted)."""

    faults: list[Fault]
    old: list[Xid]

    def passed(self) -> str:
        """The pass message when no fault: the window, and the old lines left out."""
        said = f"no NVIDIA XID error in the kernel log in the last {RECENT_HOURS} h"
        if not self.old:
            return said
        codes = ", ".join(str(c) for c in dict.fromkeys(x.code for x in self.old))
        newest = min(x.age or 0.0 for x in self.old)
        left = f"{len(self.old)} older line(s) not counted: XID {codes}, the newest {ago(newest)}"
        return f"{said} ({left})"


def judge_xids(
    xids: list[Xid], node: str, pending: set[tuple[int, int, int] | None] | None = None
) -> XidJudgement:
    """Per GPU, one failed item for the XIDs that fail the node (hardware, or a driver fault
    that needs a reset) and one warning for the rest (the application's, naming its process);
    only lines of the last RECENT_HOURS (an undated line counts)."""
    window = RECENT_HOURS * 3600
    recent = [x for x in xids if x.age is None or x.age <= window]
    old = [x for x in xids if x.age is not None and x.age > window]
    by_device: dict[str, list[Xid]] = {}
    for line in recent:
        by_device.setdefault(line.device, []).append(line)
    faults: list[Fault] = []
    for device, found in by_device.items():
        on = f"GPU {device} on node {node or '?'}"
        bad = [x for x in found if fails(x, pending)]
        soft = [x for x in found if not fails(x, pending)]
        if bad:
            faults.append(Fault("gpu-xid", f"{on}: XID {_codes(bad)}, {ago(bad[-1].age)} "
                                           f"({bad[-1].text})"))  # fmt: skip
        if soft:
            reason = f"{on}: XID {_codes(soft, named=True)}, {ago(soft[-1].age)} ({soft[-1].text})"
            faults.append(Fault("gpu-xid", reason, WARNING, _soft_fix(soft)))
    return XidJudgement(faults, old)


def _codes(found: list[Xid], named: bool = False) -> str:
    """`13 (graphics engine exception…; application) from python3 (pid 2417), 31 (…)`."""
    out = []
    for code in dict.fromkeys(x.code for x in found):
        text = xid.describe(code)
        if named:
            who = dict.fromkeys(_process(x) for x in found if x.code == code and x.pid)
            text += f" from {', '.join(who)}" if who else ""
        out.append(text)
    return ", ".join(out)


def _process(found: Xid) -> str:
    return f"{found.process} (pid {found.pid})" if found.process else f"pid {found.pid}"


FIX_APPLICATION = (
    "usually the application, not the GPU (NVIDIA: restart the application, check it and "
    "CUDA): read that process's log for its CUDA error (`runai-tui diagnose JOB`); the pid is "
    "the node's, and on a shared (fractional) GPU it may be another job's. If it comes back on "
    "this GPU with a program known to be good, ask the admins to run DCGM diagnostics there"
)
FIX_DRIVER = (
    "the driver logged it and went on (NVIDIA: ignore); if it recurs, tell the cluster's admins "
    "with the driver version (nvidia-smi)"
)
FIX_UNKNOWN = f"look the code up in NVIDIA's XID catalogue ({xid.CATALOGUE_URL})"


def _soft_fix(found: list[Xid]) -> str:
    causes = {row.cause if row else "" for row in (xid.info(x.code) for x in found)}
    fixes = [
        (xid.APPLICATION, FIX_APPLICATION),
        (xid.DRIVER, FIX_DRIVER),
        (xid.HARDWARE, "the GPU still works: tell the admins at the next maintenance"),
        ("", FIX_UNKNOWN),
    ]
    return "; ".join(fix for cause, fix in fixes if cause in causes)
