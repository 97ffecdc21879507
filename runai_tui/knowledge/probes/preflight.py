"""Preflight: a read-only check run inside each running pod, parsed into a checklist.

Core (no Textual). `SCRIPT` is the one POSIX sh probe: it changes nothing, prints one
`@@pf KEY VALUE` line per fact and ends with `@@pf end ok`. The client runs it through `exec`
(no TTY, time-bounded); `checklist` turns the facts into items that pass, fail or are skipped,
each with the reason and the fix. The CLI (`runai-tui preflight`) and the TUI show the same items,
and the failed ones once per fault (`Preflight.faults`): the fix and remedy of a check that fails
the same way on every pod are given once, naming the pods.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from runai_tui.knowledge import nccl_env
from runai_tui.knowledge.findings import (
    ERROR,
    FIX_MEMLOCK,
    FIX_SHM,
    INFO,
    WARNING,
    Finding,
    Remedy,
    one_per_fault,
    pods_named,
)
from runai_tui.knowledge.probes import gpu_health
from runai_tui.knowledge.probes.probe_facts import last_fact, parse_facts
from runai_tui.knowledge.remedies import remedy_line
from runai_tui.util.text import literal

PASS, FAIL, SKIP, WARN = "pass", "fail", "skip", "warn"
MARK = "@@pf"
SHM_MIN_KB = 1024 * 1024  # /dev/shm below 1 GiB starves DataLoader workers
EXEC_TIMEOUT = 30.0  # seconds for the probe in one pod
CONNECT_TIMEOUT = 3  # seconds for the master's port to answer

# Read-only: ulimit, df, ls and env only read; python is asked for versions without importing
# torch (importlib.metadata), and opens (then closes) one TCP connection to the master's port.
SCRIPT = r"""
p() { printf '@@pf %s %s\n' "$1" "$2"; }
p memlock "$(ulimit -l 2>/dev/null || echo '?')"
if [ -d /dev/shm ]; then
  p shm_kb "$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print $2}')"
else
  p shm_kb missing
fi
if [ "${NVIDIA_VISIBLE_DEVICES:-}" = void ]; then
  p gpus_visible "0 NVIDIA_VISIBLE_DEVICES=void"
elif command -v nvidia-smi >/dev/null 2>&1; then
  p gpus_visible "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU') nvidia-smi"
else
  n=0
  for d in /dev/nvidia[0-9]*; do [ -e "$d" ] && n=$((n + 1)); done
  p gpus_visible "$n /dev/nvidia*"
fi
p gpus_requested "${RUNAI_NUM_OF_GPUS:-}"
p cuda_visible_devices "${CUDA_VISIBLE_DEVICES-(unset)}"
p rdma "$(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')"
p netifs "$(ls /sys/class/net 2>/dev/null | tr '\n' ' ')"
env | while IFS= read -r kv; do
  case "$kv" in NCCL_*) p env "$kv" ;; esac
done
p master_addr "${MASTER_ADDR:-}"
p master_port "${MASTER_PORT:-}"
py=""
for c in python3 python; do
  if command -v "$c" >/dev/null 2>&1; then py="$c"; break; fi
done
if [ -n "$py" ]; then
  p python "$("$py" -c 'import platform; print(platform.python_version())' 2>/dev/null)"
  p torch "$("$py" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null || echo none)"
  if [ -n "${MASTER_ADDR:-}" ] && [ -n "${MASTER_PORT:-}" ]; then
    p master "$("$py" -c '
import os, socket
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
try:
    ip = socket.getaddrinfo(addr, port, proto=socket.IPPROTO_TCP)[0][4][0]
except (OSError, ValueError) as e:
    print("unresolved", e)
    raise SystemExit
try:
    socket.create_connection((ip, port), timeout=__TIMEOUT__).close()
    print("open", ip)
except OSError as e:
    print("closed", ip, e)
' 2>&1 | head -n 1)"
  fi
else
  p python none
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  if q="$(nvidia-smi -q 2>&1)"; then
    printf '%s\n' "$q" | while IFS= read -r l; do p smi "|$l"; done
  else
    p smi_error "$(printf '%s' "$q" | head -n 1)"
  fi
else
  p smi_error "no nvidia-smi in the pod"
fi
if k="$(dmesg 2>&1)"; then
  p kernel_log ok
  p uptime "$(cut -d' ' -f1 /proc/uptime 2>/dev/null)"
  p clock "$(date +%s) $(date +%z)"
  printf '%s\n' "$k" | grep 'NVRM: Xid' | awk '
    { l[NR] = $0 }
    END {
      for (i = NR; i > 0; i--) {
        k = l[i]; sub(/.*NVRM: Xid /, "", k); sub(/,.*/, "", k)
        if (++n[k] <= 5) keep[i] = 1
      }
      for (i = 1; i <= NR; i++) if (i in keep) print l[i]
    }' | while IFS= read -r l; do p xid "$l"; done
else
  p kernel_log "$(printf '%s' "$k" | head -n 1)"
fi
p end ok
""".replace("__TIMEOUT__", str(CONNECT_TIMEOUT))

COMMAND = ["sh", "-c", SCRIPT]


def check_passed(check: str, reason: str) -> Finding:
    """A check that passed: an info finding marked `ok`."""
    return Finding(check, INFO, reason, ok=True)


def check_failed(check: str, reason: str, fix: str = "") -> Finding:
    """A check that failed: an error finding with its fix."""
    return Finding(check, ERROR, reason, fix)


def check_skipped(check: str, reason: str) -> Finding:
    """A check that could not apply (IB off, no GPU asked for...): an info finding."""
    return Finding(check, INFO, reason)


def status(item: Finding) -> str:
    """A checklist item's status: pass, fail, warn (found, but not this pod's fault: an
    application's XID) or skip."""
    if item.ok:
        return PASS
    return {ERROR: FAIL, WARNING: WARN}.get(item.severity, SKIP)


def item_dict(item: Finding, remedy: Remedy | None = None) -> dict[str, object]:
    """A checklist item as `preflight --json` gives it: its status, then the finding's one
    shape (Finding.to_dict); `remedy`: its fault's, when the remedy was attached to the fault
    (Preflight.faults) rather than to the item."""
    return {"status": status(item), **replace(item, remedy=remedy or item.remedy).to_dict()}


@dataclass
class PodChecklist:
    pod: str
    items: list[Finding] = field(default_factory=list)

    def __post_init__(self) -> None:
        for item in self.items:  # every item is about this pod
            item.pod = self.pod

    @property
    def failed(self) -> bool:
        return any(status(i) == FAIL for i in self.items)

    def to_dict(
        self, remedies: dict[tuple[str, str, str], Remedy] | None = None
    ) -> dict[str, object]:
        """`remedies`: (check, fix, pod) -> the remedy of that fault (Preflight.to_dict)."""
        given = remedies or {}
        items = [item_dict(i, given.get((i.code, i.fix, self.pod))) for i in self.items]
        return {"pod": self.pod, "items": items}


@dataclass
class Preflight:
    pods: list[PodChecklist] = field(default_factory=list)
    _faults: list[Finding] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def failed(self) -> bool:
        return any(p.failed for p in self.pods)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def faults(self) -> list[Finding]:
        """The failed checks one per fault (findings.one_per_fault): what remedies attach to
        and what the fixes are shown for. Kept, so a remedy attached is the one shown."""
        if self._faults is None:
            failed = (i for p in self.pods for i in p.items if status(i) == FAIL)
            self._faults = one_per_fault(failed)
        return self._faults

    def to_dict(self) -> dict[str, object]:
        # Each failed item shows its fault's remedy, computed once for all the fault's pods.
        remedies = {
            (f.code, f.fix, pod): f.remedy for f in self.faults() if f.remedy for pod in f.all_pods
        }
        return {
            "pods": [p.to_dict(remedies) for p in self.pods],
            "faults": [f.to_dict() for f in self.faults()],  # `message`: the first pod's
        }


def checklist(pod: str, output: str, node: str = "") -> PodChecklist:
    """The probe's output into a checklist; a fact the probe could not print is a fail or a skip
    that says so, never a pass."""
    facts = parse_facts(output, MARK)
    env = dict(kv.partition("=")[::2] for kv in facts.get("env", []))
    rdma = last_fact(facts, "rdma").split()
    netifs = last_fact(facts, "netifs").split()
    ib_disabled = nccl_env.ib_disabled(env)  # as NCCL reads it: `true` is 0, `2` and `0x1` not
    hca = env.get("NCCL_IB_HCA", "")
    ib_on = not ib_disabled and bool(hca or rdma)
    if ib_disabled:
        shown = nccl_env.int_text("NCCL_IB_DISABLE", env["NCCL_IB_DISABLE"])
        ib_why = f"IB is off ({shown}): NCCL uses sockets"
    else:
        ib_why = "IB is not in use: no NCCL_IB_HCA and no RDMA device in /sys/class/infiniband"
    items = [
        _memlock(last_fact(facts, "memlock"), ib_on, ib_why),
        _shm(last_fact(facts, "shm_kb")),
        _gpus(
            last_fact(facts, "gpus_requested"),
            last_fact(facts, "gpus_visible"),
            last_fact(facts, "cuda_visible_devices"),
        ),  # fmt: skip
        _rdma(rdma, ib_on, hca, ib_why),
        _socket_ifname(env.get("NCCL_SOCKET_IFNAME"), netifs),
        _nccl_env(env),
        _master(last_fact(facts, "master_addr"), last_fact(facts, "master_port"), facts),
        *_versions(facts),
        *gpu_health_items(facts, node),
    ]
    if last_fact(facts, "end") != "ok":
        items.append(
            check_failed(
                "probe",
                "the check did not finish in the pod (no end marker): its output was cut",
                "run `runai-tui exec JOB -- sh` and look; raise --timeout if the pod is slow",
            )
        )
    return PodChecklist(pod, items)


def _memlock(value: str, ib_on: bool, ib_why: str) -> Finding:
    if not ib_on:
        return check_skipped("memlock", f"{ib_why} (ulimit -l: {value or '?'})")
    if value == "unlimited":
        return check_passed("memlock", "ulimit -l: unlimited")
    return check_failed(
        "memlock",
        f"ulimit -l is {value or 'unknown'} KiB with IB on: RDMA memory registration "
        "(ibv_reg_mr) will fail",
        FIX_MEMLOCK,
    )


def _shm(value: str) -> Finding:
    fix = FIX_SHM
    if value == "missing":
        return check_failed("shm", "/dev/shm does not exist", fix)
    if not value.isdigit():
        return check_failed("shm", f"could not read the size of /dev/shm ({value or 'no df'})", fix)
    size = int(value)
    shown = f"/dev/shm is {_size(size)}"
    if size < SHM_MIN_KB:
        return check_failed("shm", f"{shown}: DataLoader workers will hit bus errors", fix)
    return check_passed("shm", shown)


def _size(kib: int) -> str:
    if kib >= 1024 * 1024:
        return f"{kib / 1024 / 1024:.1f} GiB"
    return f"{kib / 1024:.0f} MiB"


def _gpus(requested: str, visible: str, cuda_visible: str) -> Finding:
    count_text, _, how = visible.partition(" ")
    try:
        wanted = float(requested) if requested else 0.0
    except ValueError:
        return check_skipped("gpus", f"RUNAI_NUM_OF_GPUS={requested!r} is not a number")
    if wanted <= 0:
        return check_skipped("gpus", "no GPUs requested (RUNAI_NUM_OF_GPUS is 0 or unset)")
    count = int(count_text) if count_text.isdigit() else 0
    if cuda_visible not in ("(unset)", ""):
        listed = [d for d in cuda_visible.split(",") if d.strip()]
        if cuda_visible.strip() in ("-1", "none", "NoDevFiles"):
            listed = []
        count = min(count, len(listed))
        how += f", CUDA_VISIBLE_DEVICES={cuda_visible}"
    need = max(1, int(wanted)) if wanted == int(wanted) else 1
    reason = f"{count} GPU(s) visible ({how}), {requested} requested"
    if count >= need:
        return check_passed("gpus", reason)
    return check_failed(
        "gpus",
        reason,
        "check the node's GPU device plugin, and that CUDA_VISIBLE_DEVICES (profile env) does "
        "not hide the GPUs Run:ai assigned",
    )


def _rdma(devices: list[str], ib_on: bool, hca: str, ib_why: str) -> Finding:
    if not ib_on:
        return check_skipped("rdma", ib_why)
    if not devices:
        return check_failed(
            "rdma",
            f"NCCL_IB_HCA={hca} but /sys/class/infiniband has no device",
            "request the RDMA resource (extended_resources openshift.io/mlxrdma: 1) and the "
            "SR-IOV network annotation, or set NCCL_IB_DISABLE=1 to use TCP on purpose",
        )
    wanted = nccl_env.hca_list(hca)
    if not wanted.items:
        return check_passed("rdma", f"RDMA devices: {' '.join(devices)}")
    if any(wanted.selects(d) for d in devices):
        return check_passed("rdma", f"RDMA devices: {' '.join(devices)} (NCCL_IB_HCA={hca})")
    return check_failed(
        "rdma",
        f"NCCL_IB_HCA={hca} matches none of the RDMA devices: {' '.join(devices)}",
        "set NCCL_IB_HCA to a device prefix listed in /sys/class/infiniband (e.g. mlx5)",
    )


def _socket_ifname(value: str | None, netifs: list[str]) -> Finding:
    if value is None:
        return check_skipped("socket-ifname", "NCCL_SOCKET_IFNAME is not set: NCCL picks one")
    if value.startswith("^"):
        return check_skipped("socket-ifname", f"NCCL_SOCKET_IFNAME={value} only excludes names")
    shown = " ".join(netifs) or "none"
    if nccl_env.selected(value, netifs):
        return check_passed("socket-ifname", f"NCCL_SOCKET_IFNAME={value}; interfaces: {shown}")
    failed = check_failed(
        "socket-ifname",
        f"NCCL_SOCKET_IFNAME={value} names no interface of the pod (interfaces: {shown})",
        "check the Multus network annotation (k8s.v1.cni.cncf.io/networks) that adds the "
        "interface, or set NCCL_SOCKET_IFNAME to one listed",
    )
    failed.evidence = f"interfaces: {' '.join(netifs)}"  # what a remedy picks from
    return failed


def _nccl_env(env: dict[str, str]) -> Finding:
    if not env:
        return check_skipped("nccl-env", "no NCCL_* variables in the pod")
    return check_passed("nccl-env", " ".join(f"{k}={v}" for k, v in sorted(env.items())))


def _master(addr: str, port: str, facts: dict[str, list[str]]) -> Finding:
    if not addr or not port:
        return check_skipped("master", "MASTER_ADDR/MASTER_PORT are not set (a single pod?)")
    if last_fact(facts, "python") in ("", "none"):
        return check_skipped("master", f"{addr}:{port}: no python in the pod to test the port")
    answer = last_fact(facts, "master")
    state, _, rest = answer.partition(" ")
    where = f"{addr}:{port}"
    if state == "open":
        return check_passed("master", f"{where} resolves to {rest} and answers")
    if state == "unresolved":
        return check_failed(
            "master",
            f"{addr} does not resolve: {rest}",
            "check the master pod exists and its service/DNS name (a headless service per job)",
        )
    return check_failed(
        "master",
        f"{where} ({rest or answer or 'no answer'}) does not answer",
        "the master pod's rendezvous listens once torchrun started there: check it is Running "
        "and that no NetworkPolicy blocks the port",
    )


def _versions(facts: dict[str, list[str]]) -> list[Finding]:
    python = last_fact(facts, "python")
    if python in ("", "none"):
        fix = "use an image with python3 (e.g. nvcr.io/nvidia/pytorch)"
        return [
            check_failed("python", "no python3 or python in the pod", fix),
            check_skipped("torch", "no python"),
        ]
    torch = last_fact(facts, "torch")
    items = [check_passed("python", f"Python {python}")]
    if torch in ("", "none"):
        items.append(check_failed("torch", "torch is not installed", "use a PyTorch image"))
    else:
        items.append(check_passed("torch", f"torch {torch}"))
    return items


def gpu_health_items(facts: dict[str, list[str]], node: str) -> list[Finding]:
    """GPU health (knowledge/probes/gpu_health.py): `nvidia-smi -q` and the kernel log's recent XIDs,
    each fault of the node a failed item naming it (an XID that is not the node's fault: a
    warning); what the pod cannot read is skipped, never failed."""
    items: list[Finding] = []
    pending: set[tuple[int, int, int] | None] | None = None  # GPUs with a remap pending
    if "smi" in facts:
        gpus = gpu_health.parse_smi("\n".join(line[1:] for line in facts["smi"]))
        pending = {gpu_health.bus_key(g.bus_id) for g in gpus if g.pending}
        faults = gpu_health.smi_faults(gpus, node)
        items += [check_failed(f.check, f.reason, gpu_health.FIX) for f in faults]
        if not gpus:
            items.append(check_skipped("gpu-health", "nvidia-smi -q listed no GPU"))
        elif not faults:
            items.append(check_passed("gpu-health", f"{len(gpus)} GPU(s): no volatile "
                                      "uncorrected ECC error, no page or row pending, no HW "
                                      "slowdown, thermal slowdown or power brake"))  # fmt: skip
    else:
        why = last_fact(facts, "smi_error") or "not probed"
        items.append(check_skipped("gpu-health", f"nvidia-smi -q not read ({why}): skipped"))
    said = last_fact(facts, "kernel_log")
    if said != "ok":
        why = said or "not probed"
        items.append(check_skipped("gpu-xid", f"the kernel log is not readable here ({why}): "
                                   "XIDs not checked"))  # fmt: skip
        return items
    clock = gpu_health.KernelClock.from_facts(last_fact(facts, "uptime"), last_fact(facts, "clock"))
    xids = gpu_health.parse_xids(facts.get("xid", []), clock)
    judged = gpu_health.judge_xids(xids, node, pending)
    for fault in judged.faults:
        if fault.severity == ERROR:
            items.append(check_failed(fault.check, fault.reason, fault.fix))
        else:
            items.append(Finding(fault.check, WARNING, fault.reason, fault.fix))
    if not judged.faults:
        items.append(check_passed("gpu-xid", judged.passed()))
    return items


def render_text(report: Preflight) -> str:
    """The CLI's checklist, then each fault once with the pods it is on, its fix and remedy;
    values from the pod go through `literal` (inert on a terminal)."""
    out: list[str] = []
    marks = {PASS: "PASS", FAIL: "FAIL", SKIP: "skip", WARN: "WARN"}
    for pod in report.pods:
        out.append(literal(pod.pod))
        for item in pod.items:
            out.append(f"  {marks[status(item)]:<4}  {item.code:<13} {literal(item.message)}")
        out.append("")
    for fault in report.faults():
        out.append(f"FAIL  {fault.code:<13} {literal(pods_named(fault))}")
        if fault.fix:
            out.append(f"      {'':<13} fix: {fault.fix}")
        if fault.remedy is not None:
            out.append(f"      {'':<13} {remedy_line(fault.remedy)}")
    if report.faults():
        out.append("")
    failed = sum(1 for p in report.pods for i in p.items if status(i) == FAIL)
    warned = sum(1 for p in report.pods for i in p.items if status(i) == WARN)
    also = f", {warned} warning(s)" if warned else ""
    out.append(f"{failed} failed check(s){also} in {len(report.pods)} pod(s)")
    return "\n".join(out)
