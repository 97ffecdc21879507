"""Profile checks (`runai-tui lint`): what an operator should know before pressing submit.

Each rule is one small function registered with its code, severity and field; it looks at a
resolved profile (overrides applied) and returns what it finds, each with a concrete fix. The
CLI (`lint`, the warnings of `submit`) and the TUI's submit screen all call `lint()`.
README "Profile checks" lists every code. Core module: no Textual, no torch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from runai_tui.errors import UsageError
from runai_tui.knowledge import fixes
from runai_tui.knowledge.findings import Finding, Severity, worst_first
from runai_tui.knowledge.trainer_facts import (
    TrainerArgs,
    parse_trainer_args,
    trainer_args,
    trainer_args_problem,
)
from runai_tui.profiles import Profile

MULTUS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
# Interfaces every pod has: naming only these needs no secondary network.
POD_INTERFACES = ("eth", "lo")
SECRET_WORDS = ("TOKEN", "PASSWORD", "PASSWD", "SECRET", "KEY")
# ...unless the name says the value is where the secret lives (HF_TOKEN_PATH, SSH_KEY_FILE).
FILE_WORDS = ("PATH", "FILE", "DIR")


def finding_dict(profile: str, finding: Finding) -> dict[str, str]:
    """A lint finding as `lint --json` gives it."""
    return {
        "profile": profile,
        "code": finding.code,
        "severity": finding.severity,
        "field": finding.field,
        "message": finding.message,
        "fix": finding.fix,
    }


def finding_line(profile: str, finding: Finding) -> str:
    """`PROFILE: severity: code: field: message (fix: ...)` (lint's text output)."""
    return (
        f"{profile}: {finding.severity}: {finding.code}: {finding.field}: {finding.message} "
        f"(fix: {finding.fix})"
    )


@dataclass(frozen=True)
class Hit:
    """What a rule found: `message` and `fix`; `severity` and `field` (None: the rule's)."""

    message: str
    fix: str
    severity: Severity | None = None
    field: str | None = None


@dataclass(frozen=True)
class Facts:
    """The `profile` plus what several rules derive from it: the `trainer`'s arguments (None when
    the command does not run the trainer) and `trainer_error` (why they do not parse, "" when
    they do)."""

    profile: Profile
    trainer: TrainerArgs | None
    trainer_error: str

    @property
    def env(self) -> dict[str, str]:
        return self.profile.env

    @property
    def max_gpus_per_pod(self) -> int:
        return max(self.profile.gpus or 0, self.profile.master_gpus or 0)

    @property
    def ib_disabled(self) -> bool:
        """NCCL_IB_DISABLE set to a non-zero number (NCCL reads it as an integer)."""
        value = self.env.get("NCCL_IB_DISABLE", "").strip()
        try:
            return int(value) != 0
        except ValueError:
            return False

    @property
    def ib_on(self) -> bool:
        """NCCL will try InfiniBand/RoCE: the job uses GPUs (NCCL) and NCCL_IB_DISABLE is unset
        or 0 (NCCL_IB_HCA set asks for IB too, but NCCL_IB_DISABLE=1 wins, as in NCCL)."""
        return self.max_gpus_per_pod > 0 and not self.ib_disabled

    @property
    def rdma_resources(self) -> list[str]:
        """Extended resources that are RDMA devices: `rdma` in the name (openshift.io/mlxrdma,
        rdma/hca_shared_devices_a, rdma/rdma_shared_device_a)."""
        return [k for k in self.profile.extended_resources if "rdma" in k.lower()]


Check = Callable[[Facts], Iterable[Hit]]


@dataclass(frozen=True)
class Rule:
    """A registered rule: its `code`, `severity`, `field`, `summary` and `check` function."""

    code: str
    severity: Severity
    field: str
    summary: str
    check: Check


RULES: dict[str, Rule] = {}


def rule(code: str, severity: Severity, field: str, summary: str) -> Callable[[Check], Check]:
    """Register a check under code (one place per rule)."""

    def register(check: Check) -> Check:
        if code in RULES:
            raise ValueError(f"rule {code} registered twice")
        RULES[code] = Rule(code, severity, field, summary, check)
        return check

    return register


def facts(profile: Profile) -> Facts:
    words = trainer_args(profile)
    if words is None:
        return Facts(profile, None, "")
    try:
        return Facts(profile, parse_trainer_args(words), "")
    except UsageError as error:
        return Facts(profile, None, error.message)


def lint(profile: Profile) -> list[Finding]:
    """Every finding for profile, errors first, then warnings, then infos (rule order within)."""
    known = facts(profile)
    found: list[Finding] = []
    for spec in RULES.values():
        for hit in spec.check(known):
            found.append(
                Finding(
                    spec.code,
                    hit.severity or spec.severity,
                    hit.message,
                    hit.fix,
                    field=hit.field or spec.field,
                )
            )
    return worst_first(found)


def exit_code(findings: Iterable[Finding]) -> int:
    """0 when nothing is above info, 1 when any warning or error (as ruff and shellcheck do)."""
    return 1 if any(f.severity != "info" for f in findings) else 0


def blocking(findings: Iterable[Finding]) -> list[Finding]:
    """The findings `submit --strict` refuses on: warnings and errors."""
    return [f for f in findings if f.severity != "info"]


def _show(value: str) -> str:
    return repr(value) if len(value) <= 40 else repr(value[:37] + "...")


# ---------------------------------------------------------------------------------------------
# Kubernetes quantities

_SUFFIX = {
    "": 1,
    "m": 1e-3,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([A-Za-z]*)$")


def quantity_bytes(text: str) -> float | None:
    """A Kubernetes memory quantity in bytes (a bare number is bytes), or None if unreadable."""
    match = _QUANTITY.match(text.strip())
    if not match or match.group(2) not in _SUFFIX:
        return None
    return float(match.group(1)) * _SUFFIX[match.group(2)]


# ---------------------------------------------------------------------------------------------
# The rules


@rule("memory-unit", "warning", "memory", "a memory quantity with no unit (read as bytes)")
def _memory_unit(f: Facts) -> Iterable[Hit]:
    for key in ("request", "limit"):
        value = f.profile.memory.get(key)
        if value is None:
            continue
        match = _QUANTITY.match(value)
        if match and match.group(2) in ("", "m"):
            unit = "milli-bytes" if match.group(2) == "m" else "bytes"
            number = match.group(1)
            yield Hit(
                f"memory.{key} {value} has no unit: Kubernetes reads it as {value} {unit}, not MiB",
                f"write the unit: --set memory.{key}={number}Mi (or {number}M, or e.g. 16Gi)",
                field=f"memory.{key}",
            )


@rule("memory-limit-below-request", "error", "memory.limit", "memory limit below the request")
def _memory_limit(f: Facts) -> Iterable[Hit]:
    request, limit = f.profile.memory.get("request"), f.profile.memory.get("limit")
    if request is None or limit is None:
        return
    req, lim = quantity_bytes(request), quantity_bytes(limit)
    if req is not None and lim is not None and lim < req:
        yield Hit(
            f"limit {limit} is below request {request}: Kubernetes rejects the pod",
            f"raise the limit to at least the request: --set memory.limit={request}",
        )


@rule(
    "cuda-visible-devices",
    "warning",
    "env.CUDA_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES pinned in the pod env",
)
def _cuda_visible_devices(f: Facts) -> Iterable[Hit]:
    if "CUDA_VISIBLE_DEVICES" not in f.env:
        return
    value = f.env["CUDA_VISIBLE_DEVICES"]
    gpus = f.max_gpus_per_pod
    fix = (
        "delete CUDA_VISIBLE_DEVICES from env (in a profile that extends this one: "
        "env: {CUDA_VISIBLE_DEVICES: null}); the device plugin already exposes the pod's GPUs"
    )
    hidden = value.strip() in ("", "-1", "none", "NoDevFiles")
    if gpus > 1 or (hidden and gpus > 0):
        yield Hit(
            f"CUDA_VISIBLE_DEVICES={_show(value)} overrides the device plugin's choice and a pod "
            f"has {gpus} GPU(s): the entry script and the trainer see the wrong devices",
            fix,
            severity="error",
        )
    else:
        yield Hit(
            f"CUDA_VISIBLE_DEVICES={_show(value)} overrides the device plugin's choice: harmless "
            "with one GPU per pod, wrong as soon as a pod gets two",
            fix,
        )


@rule(
    "socket-ifname-network",
    "warning",
    "env.NCCL_SOCKET_IFNAME",
    "NCCL_SOCKET_IFNAME without a secondary network",
)
def _socket_ifname(f: Facts) -> Iterable[Hit]:
    value = f.env.get("NCCL_SOCKET_IFNAME")
    if value is None or MULTUS_ANNOTATION in f.profile.annotations:
        return
    text = value.strip()
    if not text or text.startswith("^"):  # an exclusion list picks among the pod's interfaces
        return
    names = [n.strip() for n in text.lstrip("=").split(",") if n.strip()]
    if all(n.startswith(POD_INTERFACES) for n in names):
        return
    yield Hit(
        f"NCCL_SOCKET_IFNAME={_show(value)} names an interface a secondary network creates, but "
        f"no {MULTUS_ANNOTATION} annotation attaches one: NCCL finds no such interface",
        f"add the network: annotations: {{{MULTUS_ANNOTATION}: NAME}} (your "
        "NetworkAttachmentDefinition), or delete NCCL_SOCKET_IFNAME to use the pod network",
    )


@rule("ib-ipc-lock", "warning", "capabilities", "InfiniBand/RoCE on without IPC_LOCK")
def _ib_ipc_lock(f: Facts) -> Iterable[Hit]:
    if not f.ib_on or "IPC_LOCK" in f.profile.capabilities:
        return
    why = _ib_why(f)
    yield Hit(
        f"NCCL may use InfiniBand/RoCE ({why}) but the pod lacks the IPC_LOCK capability: "
        "registering memory for RDMA (ibv_reg_mr) fails and NCCL falls back to TCP",
        fixes.MEMLOCK + "; or set NCCL_IB_DISABLE=1 for TCP on purpose",
    )


@rule(
    "ib-without-rdma-resource",
    "warning",
    "extended_resources",
    "InfiniBand/RoCE on without an RDMA device",
)
def _ib_without_rdma(f: Facts) -> Iterable[Hit]:
    if not f.ib_on or f.rdma_resources:
        return
    yield Hit(
        f"NCCL may use InfiniBand/RoCE ({_ib_why(f)}) but no RDMA extended resource is "
        "requested: the pod gets no RDMA device and NCCL falls back to sockets",
        "request one: extended_resources: {openshift.io/mlxrdma: 1} (your cluster's RDMA "
        "resource), or --set env.NCCL_IB_DISABLE=1 to say TCP on purpose",
    )


def _ib_why(f: Facts) -> str:
    if "NCCL_IB_DISABLE" in f.env:
        return f"NCCL_IB_DISABLE={f.env['NCCL_IB_DISABLE']}"
    if "NCCL_IB_HCA" in f.env:
        return f"NCCL_IB_HCA={f.env['NCCL_IB_HCA']}"
    return "NCCL_IB_DISABLE unset"


@rule("rdma-resource-unused", "warning", "extended_resources", "RDMA device with IB disabled")
def _rdma_unused(f: Facts) -> Iterable[Hit]:
    if not f.ib_disabled:
        return
    for name in f.rdma_resources:
        yield Hit(
            f"{name} is requested but NCCL_IB_DISABLE={f.env['NCCL_IB_DISABLE']}: the RDMA "
            "device is held and never used",
            f"drop it (extended_resources: {{{name}: null}} in a profile that extends this one),"
            " or set NCCL_IB_DISABLE=0 to use it",
            field=f"extended_resources.{name}",
        )


@rule("shm-loader-workers", "warning", "large_shm", "loader workers with the default /dev/shm")
def _shm_workers(f: Facts) -> Iterable[Hit]:
    if f.trainer is None or f.profile.large_shm or f.trainer.workers <= 0:
        return
    origin = "--workers" if "workers" in f.trainer.given else "--workers default"
    yield Hit(
        f"the trainer runs {f.trainer.workers} data-loader workers per process ({origin}) and "
        "large_shm is off: they pass batches through /dev/shm (64 MiB by default) and die "
        "with a bus error",
        "set large_shm: true (--set large_shm=true), or pass --workers 0 to the trainer",
    )


@rule("sync-bn-single-pod", "info", "args", "--sync-bn with one pod")
def _sync_bn(f: Facts) -> Iterable[Hit]:
    if f.trainer is None or not f.trainer.sync_bn or (f.profile.workers or 0) > 0:
        return
    yield Hit(
        "--sync-bn with one pod: SyncBatchNorm synchronises every forward pass, which pays "
        "only when batch statistics span nodes",
        "drop --sync-bn from args (plain BatchNorm on one node)",
    )


@rule("nccl-debug-info", "info", "env.NCCL_DEBUG", "NCCL_DEBUG=INFO")
def _nccl_debug(f: Facts) -> Iterable[Hit]:
    if f.env.get("NCCL_DEBUG", "").upper() != "INFO":
        return
    yield Hit(
        "NCCL_DEBUG=INFO: right for a first run (it shows NET/IB or NET/Socket), noisy in "
        "production",
        "once the transport is confirmed: --set env.NCCL_DEBUG=WARN",
    )


# The variables torch 2.15 reads (the first name set wins; the second is the older NCCL name).
FR_BUFFER_VARS = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")
FR_DUMP_VARS = ("TORCH_FR_DUMP_ON_TIMEOUT", "TORCH_NCCL_DUMP_ON_TIMEOUT")


@rule("flight-recorder-off", "info", "env", "a multi-pod job without the Flight Recorder")
def _flight_recorder_off(f: Facts) -> Iterable[Hit]:
    if not f.profile.workers:
        return
    buffer = next((f.env[v] for v in FR_BUFFER_VARS if f.env.get(v)), "")
    dump = next((f.env[v] for v in FR_DUMP_VARS if f.env.get(v)), "")
    if buffer.strip().isdigit() and int(buffer) > 0 and dump.strip().lower() in ("1", "true"):
        return
    yield Hit(
        "the Flight Recorder is not set to dump on a collective timeout: when a rank hangs, "
        "`runai-tui diagnose` cannot name it",
        "--set env.TORCH_FR_BUFFER_SIZE=2000 --set env.TORCH_FR_DUMP_ON_TIMEOUT=1 (the shipped "
        "profiles set both; the trainer writes the dumps to <output-dir>/flight-recorder)",
    )


@rule("clean-pod-policy-logs", "info", "clean_pod_policy", "a clean-pod policy that deletes pods")
def _clean_pod_policy(f: Facts) -> Iterable[Hit]:
    policy = f.profile.clean_pod_policy
    if policy not in ("All", "Running"):
        return
    which = "every pod" if policy == "All" else "the pods still running"
    yield Hit(
        f"clean_pod_policy {policy}: when the job ends, {which} is deleted, and with them "
        "their logs (the reason a job failed)",
        "--set clean_pod_policy=None keeps finished pods and their logs; delete the job when done",
    )


@rule("secret-in-env", "warning", "env", "a literal secret in the env")
def _secret_in_env(f: Facts) -> Iterable[Hit]:
    for name, value in f.env.items():
        parts = re.split(r"[_.\-]+", name.upper())
        if not any(p.endswith(SECRET_WORDS) for p in parts if p) or parts[-1] in FILE_WORDS:
            continue
        if not value.strip() or value.startswith(("$(", "${", "SECRET:")):
            continue
        yield Hit(
            f"{name} carries a literal value (not shown): it lands in the profile file, the "
            "command line and the job spec, readable by anyone who can list them",
            f"delete env.{name}, put the value in a Kubernetes Secret (kubectl create secret "
            f"generic NAME --from-literal=KEY=...) and pass it with runai's --env-secret "
            f"{name}=NAME,key=KEY; rotate the value that was exposed",
            field=f"env.{name}",
        )


@rule("trainer-args", "error", "args", "trainer arguments the trainer would refuse")
def _trainer_args(f: Facts) -> Iterable[Hit]:
    if f.trainer_error:
        yield Hit(f.trainer_error, "fix the value in args")
        return
    problem = trainer_args_problem(f.trainer) if f.trainer is not None else ""
    if problem:
        yield Hit(f"{problem} (the trainer refuses it)", "fix the value in args")
