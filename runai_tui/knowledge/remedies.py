"""Remedies: what a finding proposes to change in the profile, as `--set FIELD=VALUE` overrides.

A finding of lint, diagnose or preflight keeps its fix text (for what no override can do: the
nodes' memlock, a quota); where its own evidence and the profile say which field to change and
to what, it also carries a `Remedy`. `attach` computes them and keeps only those the field table
accepts (`apply_overrides` re-validates the profile) and that change something: an invalid or
empty remedy is never offered.

Core, pure: the profile, the findings and a `Context` (what describe and the node say) in,
remedies out. `runai-tui diagnose`, `lint`, `preflight`, `resubmit` and the TUI show the same.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from runai_tui.knowledge import nccl_env
from runai_tui.knowledge.findings import Finding, Remedy
from runai_tui.knowledge.submitted import Submitted, submitted
from runai_tui.knowledge.trainer_facts import TrainerArgs, read_trainer_args
from runai_tui.profiles import Profile, apply_overrides
from runai_tui.shapes.errors import RuntimeFailure, UsageError
from runai_tui.shapes.models import JobDetail
from runai_tui.trainer_flags import FIELD, spelled

IPC_LOCK = "IPC_LOCK"
EXPANDABLE = "expandable_segments:True"
# What retinanet-rdma sets to put NCCL on InfiniBand/RoCE (profiles/retinanet-rdma.yaml).
IB_ENV = {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "mlx5", "NCCL_IB_GID_INDEX": "3"}
# A Mellanox NIC or an RDMA VF among the extended resources: the profile means to use IB.
IB_RESOURCE = re.compile(r"mellanox|mlnx|rdma", re.IGNORECASE)
# The interface every Kubernetes pod gets from its CNI: a remedy's choice when nothing better
# is known about the pod's interfaces.
POD_NETWORK_IFACE = "eth0"


@dataclass(frozen=True)
class Context:
    """What the remedies may know besides the profile and the finding: the node of each pod
    (describe), the pods' network interfaces (preflight; on the local cluster, this machine's),
    whether the master is reached over loopback, and whether the cluster has a single node (the
    local cluster, unless its pods ran on several: excluding its node would leave none)."""

    nodes: dict[str, str] = field(default_factory=dict)  # pod -> node
    rank_pods: dict[int, str] = field(default_factory=dict)  # pod (node) rank -> pod
    interfaces: tuple[str, ...] = ()
    loopback_master: bool = False
    single_node: bool = False


def local_interfaces() -> tuple[str, ...]:
    """This machine's network interfaces: the local cluster's pods share its network."""
    try:
        return tuple(sorted(os.listdir("/sys/class/net")))
    except OSError:
        return ()


def context_of(
    detail: JobDetail | None,
    interfaces: Sequence[str] = (),
    *,
    local: bool = False,
) -> Context:
    """A Context from describe: each pod's node, and the pod of each rank as the PyTorch
    operator numbers them (the master 0, worker i i+1; without a master, worker i is i)."""
    if detail is None:
        return Context(interfaces=tuple(interfaces), loopback_master=local, single_node=local)
    nodes = {p.name: p.node for p in detail.pods if p.node}
    has_master = any(p.name.endswith("-master-0") for p in detail.pods)
    ranks: dict[int, str] = {}
    for pod in detail.pods:
        if pod.name.endswith("-master-0"):
            ranks[0] = pod.name
        elif (m := re.search(r"-worker-(\d+)$", pod.name)) is not None:
            ranks[int(m.group(1)) + (1 if has_master else 0)] = pod.name
    # The local cluster has one node unless local.yaml says more: its pods name the nodes it has.
    single = local and len(set(nodes.values())) <= 1
    return Context(nodes, ranks, tuple(interfaces), loopback_master=local, single_node=single)


# --- the value forms `--set` takes ------------------------------------------------------------

_PLAIN = re.compile(r"^-{0,2}[A-Za-z_][A-Za-z0-9_./-]*$")
_YAML_WORDS = {"true", "false", "null", "yes", "no", "on", "off", "~"}


def flow_list(items: Iterable[str]) -> str:
    """A list as `--set` parses it (YAML flow): `[IPC_LOCK, SYS_NICE]`, each word quoted when
    YAML would read it as something else than that text (`"2"`, `"true"`)."""
    words = []
    for item in items:
        plain = _PLAIN.match(item) and item.lower() not in _YAML_WORDS
        words.append(item if plain else '"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return "[" + ", ".join(words) + "]"


# --- the trainer's flags ----------------------------------------------------------------------


def _trainer_flags(profile: Profile) -> TrainerArgs | None:
    """The trainer's flags as the profile passes them; None when its command does not run the
    trainer or passes a value the trainer would refuse."""
    try:
        return read_trainer_args(profile)
    except UsageError:
        return None


def _trainer_sets(values: dict[str, object]) -> tuple[str, ...]:
    """`trainer.NAME=VALUE` overrides: `--set` puts each flag in the profile's command or args
    exactly once (profiles/overrides.py, runai_tui/trainer_flags set_flag)."""
    return tuple(f"{FIELD}.{spelled(name)}={value}" for name, value in values.items())


# --- one function per kind of finding --------------------------------------------------------

Propose = Callable[[Finding, Profile, Context], Remedy | None]


def _fewer_loader_workers(profile: Profile, why: str) -> Remedy | None:
    flags = _trainer_flags(profile)
    if flags is None or not flags.workers:
        return None
    fewer = flags.workers // 2
    return Remedy(
        _trainer_sets({"workers": fewer}),
        f"{flags.workers} → {fewer} DataLoader workers per process: {why}",
    )


def _shm(finding: Finding, profile: Profile, context: Context) -> Remedy | None:
    if not profile.large_shm:
        return Remedy(
            ("large_shm=true",), "a large /dev/shm (--large-shm) for the DataLoader workers"
        )
    return _fewer_loader_workers(profile, "/dev/shm is large already; fewer batches in flight")


def _ipc_lock(finding: Finding, profile: Profile, context: Context) -> Remedy | None:
    if IPC_LOCK in profile.capabilities:
        return None  # the pod has it: what is left (the nodes' memlock) is the fix text's
    return Remedy(
        (f"capabilities={flow_list([*profile.capabilities, IPC_LOCK])}",),
        "the pod gets IPC_LOCK; memlock unlimited on the nodes stays for the admin (fix)",
    )


def _back_on_ib(finding: Finding, profile: Profile, context: Context) -> Remedy | None:
    if not any(IB_RESOURCE.search(key) for key in profile.extended_resources):
        return None  # the profile asks for no IB device: TCP may be what it means
    sets = []
    for key, value in IB_ENV.items():
        now = profile.env.get(key)
        if now is None or (key == "NCCL_IB_DISABLE" and nccl_env.ib_disabled({key: now})):
            sets.append(f"env.{key}={value}")
    if IPC_LOCK not in profile.capabilities:
        sets.append(f"capabilities={flow_list([*profile.capabilities, IPC_LOCK])}")
    if not sets:
        return None
    return Remedy(tuple(sets), "NCCL back on InfiniBand/RoCE (as retinanet-rdma), with IPC_LOCK")


_IFACE_VAR = re.compile(r"\b(NCCL|GLOO)_SOCKET_IFNAME\b")


def pick_interface(interfaces: Sequence[str], loopback_master: bool) -> str | None:
    """The interface a socket variable should name: `lo` when the master is reached over
    loopback (the local cluster), else the pod network's `eth0`, else the first one not `lo`."""
    if loopback_master and "lo" in interfaces:
        return "lo"
    if POD_NETWORK_IFACE in interfaces:
        return POD_NETWORK_IFACE
    return next((i for i in interfaces if i != "lo"), None)


def _interfaces_seen(finding: Finding) -> tuple[str, ...]:
    """Preflight puts the pod's interfaces in its evidence: `interfaces: lo eth0 net1`."""
    if finding.evidence.startswith("interfaces:"):
        return tuple(finding.evidence.split(":", 1)[1].split())
    return ()


def _socket_ifname(finding: Finding, profile: Profile, context: Context) -> Remedy | None:
    said = _IFACE_VAR.search(f"{finding.message} {finding.evidence}")
    if said is not None:
        variable = said.group(0)
    elif "gloo" in finding.evidence.lower() or "Unable to find address" in finding.evidence:
        variable = "GLOO_SOCKET_IFNAME"
    else:
        variable = "NCCL_SOCKET_IFNAME"
    seen = _interfaces_seen(finding) or context.interfaces
    iface = pick_interface(seen, context.loopback_master)
    if iface is None or nccl_env.names_only(variable, profile.env.get(variable), iface, seen):
        return None  # the variable already picks that interface alone
    where = "seen in the pod" if _interfaces_seen(finding) else "of the pods' node"
    return Remedy(
        (f"env.{variable}={iface}",),
        f"{variable} names {iface}, an interface {where} ({' '.join(seen)})",
    )


def _loader_killed(finding: Finding, profile: Profile, context: Context) -> Remedy | None:
    fewer = _fewer_loader_workers(profile, "less memory for batches in flight")
    if fewer is not None:
        return fewer
    limit = profile.memory.get("limit")
    m = re.fullmatch(r"(\d+)([KMGT]i?)?", limit or "")
    if m is None:
        return None
    doubled = f"{int(m.group(1)) * 2}{m.group(2) or ''}"
    return Remedy((f"memory.limit={doubled}",), f"the memory limit doubled: {limit} → {doubled}")


def _cuda_oom(finding: Finding, profile: Profile, context: Context) -> Remedy | None:
    env = profile.env
    conf = env.get("PYTORCH_ALLOC_CONF", "") or env.get("PYTORCH_CUDA_ALLOC_CONF", "")
    if EXPANDABLE not in conf:
        return Remedy(
            (f"env.PYTORCH_ALLOC_CONF={EXPANDABLE}",),
            "expandable segments: less fragmentation of the GPU memory",
        )
    flags = _trainer_flags(profile)
    if flags is None or flags.grad_accum < 1 or flags.batch_size % (flags.grad_accum * 2):
        return None  # not the trainer, or its micro-batch does not halve
    accum, micro = flags.grad_accum, flags.batch_size // flags.grad_accum
    # --batch-size is what each process steps on; --grad-accum splits it into micro-batches
    return Remedy(
        _trainer_sets({"grad_accum": accum * 2}),
        f"micro-batch {micro} → {micro // 2} images (--grad-accum {accum} → {accum * 2}): the "
        f"same global batch in half the activation memory",
    )


_RANK = re.compile(r"^rank (\d+):")


def _exclude_node(finding: Finding, profile: Profile, context: Context) -> Remedy | None:
    pods = finding.all_pods  # a fault on several pods: the nodes of them all
    m = _RANK.match(finding.evidence)
    if finding.code == "straggler" and m is not None:
        per_pod = max(1, profile.master_pod_gpus)  # ranks fill the master first
        pods = [context.rank_pods.get(int(m.group(1)) // per_pod, "")]
    on = {p: context.nodes[p] for p in pods if context.nodes.get(p)}
    nodes = [n for n in dict.fromkeys(on.values()) if n not in profile.exclude_node]
    if not nodes or context.single_node:
        return None
    ran = "; ".join(f"{', '.join(p for p in on if on[p] == n)} ran on {n}" for n in nodes)
    return Remedy(
        (f"exclude_node={flow_list([*profile.exclude_node, *nodes])}",),
        f"{ran}: the new job's pods keep off {'it' if len(nodes) == 1 else 'them'}",
    )


_FREE = re.compile(r"\((\d+) free\)")


def _pending(finding: Finding, profile: Profile, context: Context) -> Remedy | None:
    if "GPU" not in finding.message:
        return None
    per_worker, master = profile.gpus or 0, profile.master_pod_gpus
    workers = profile.workers or 1
    if per_worker <= 0 or workers <= 1:
        return None
    need = master + workers * per_worker
    free = _FREE.search(finding.evidence)
    if free is not None:
        fits = (int(free.group(1)) - master) // per_worker
        if fits < 1 or fits >= workers:
            return None
        said = f"{free.group(1)} free"
    else:
        fits, said = workers - 1, "free GPUs unknown: one worker fewer"
    asks = f"{master} + {workers}×{per_worker} = {need} GPUs"
    now = f"{master} + {fits}×{per_worker} = {master + fits * per_worker}"
    return Remedy(
        (f"workers={fits}",),
        f"the job asks {asks} ({said}); {fits} workers ask {now} (or another node pool: "
        f"--set node_pools=[POOL])",
    )


PROPOSALS: dict[str, Propose] = {
    "shm": _shm,  # diagnose and preflight
    "shm-loader-workers": _shm,  # lint
    "memlock": _ipc_lock,  # diagnose and preflight
    "ib-ipc-lock": _ipc_lock,  # lint
    "tcp-fallback": _back_on_ib,
    "socket-ifname": _socket_ifname,  # diagnose and preflight
    "dataloader-killed": _loader_killed,
    "cuda-oom": _cuda_oom,
    "straggler": _exclude_node,
    "hang-rank": _exclude_node,
    "wire-slow-pair": _exclude_node,  # the finding is on the pod of the suspect node
    **dict.fromkeys(("gpu-ecc", "gpu-pending", "gpu-throttled", "gpu-xid"), _exclude_node),
    "pending": _pending,
}


# `--set FIELD=VALUE`, as a fix text writes an override (in backquotes or not).
FIX_SET = re.compile(r"--set[ =]([\w.\-]+=[^\s`,;()]*)")


def fix_overrides(finding: Finding) -> Remedy | None:
    """The override a finding's fix writes out, as its remedy: the first `--set FIELD=VALUE` of
    the fix and those that follow it directly (`--set A=1 --set B=2`); an alternative after
    `or` is not taken. None when the fix writes none."""
    first = FIX_SET.search(finding.fix)
    if first is None:
        return None
    sets, at = [first.group(1)], first.end()
    while (more := FIX_SET.match(finding.fix, at + 1)) and finding.fix[at] == " ":
        sets.append(more.group(1))
        at = more.end()
    after = re.match(r"`?\s*\(([^()]+)\)", finding.fix[at:])  # `--set A=1 (what it does)`
    why = finding.fix[: first.start()].strip(" `:(,") or (after and after.group(1)) or ""
    return Remedy(tuple(sets), why or f"the fix of {finding.code}")


def propose(finding: Finding, profile: Profile, context: Context) -> Remedy | None:
    """The finding's remedy as computed from its evidence, not yet validated."""
    make = PROPOSALS.get(finding.code)
    return make(finding, profile, context) if make is not None else None


def validate(remedy: Remedy, profile: Profile) -> bool:
    """The remedy goes through the field table (`--set` parsing and validation) and changes
    the profile."""
    try:
        changed = apply_overrides(profile, list(remedy.sets))
    except UsageError:
        return False
    return changed.data != profile.data


def attach(
    findings: Iterable[Finding],
    profile: Profile,
    context: Context | None = None,
    from_fix: bool = False,
) -> int:
    """Give each finding its remedy where one validates; returns how many got one. `from_fix`
    (lint's profile findings): a code no proposal knows gets the override its fix writes out
    (`write the unit: --set memory.request=3846Mi`); diagnose's codes say in their table
    whether they have a remedy, so theirs come from PROPOSALS alone."""
    context = context or Context()
    count = 0
    for finding in findings:
        remedy = propose(finding, profile, context)
        if from_fix and finding.code not in PROPOSALS:
            remedy = fix_overrides(finding)
        finding.remedy = remedy if remedy is not None and validate(remedy, profile) else None
        count += finding.remedy is not None
    return count


def set_words(sets: Iterable[str]) -> list[str]:
    """`--set FIELD=VALUE` words for a command line (each override its own argv word)."""
    return [word for item in sets for word in ("--set", item)]


def remedy_line(remedy: Remedy) -> str:
    """`remedy: --set large_shm=true  (why)`: one line, shell-quoted as a user would type it."""

    words = " ".join(shlex.quote(w) for w in set_words(remedy.sets))
    return f"remedy: {words}" + (f"  ({remedy.why})" if remedy.why else "")


def overrides(findings: Iterable[Finding]) -> list[tuple[str, Finding]]:
    """Every remedy's overrides, once each, with the finding that proposes it: the first finding
    to set a field wins (findings come most severe first)."""
    out: list[tuple[str, Finding]] = []
    seen: set[str] = set()
    for finding in findings:
        for item in finding.remedy.sets if finding.remedy else ():
            key = item.partition("=")[0]
            if key not in seen:
                seen.add(key)
                out.append((item, finding))
    return out


def attach_for_job(
    findings: list[Finding], detail: JobDetail, *, local: bool, found: Submitted | None = None
) -> str:
    """Remedies for a job's findings against what it was submitted with (`found`, else read
    here: its submission record, else describe's submit argv): "" when done, else one line
    saying why there are none."""
    if found is None:
        try:
            found = submitted(detail)
        except RuntimeFailure as exc:
            return f"no remedies: {exc.message}"
    interfaces = local_interfaces() if local else (POD_NETWORK_IFACE, "lo")
    attach(findings, found.profile, context_of(detail, interfaces, local=local))
    return ""
