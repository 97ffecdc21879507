"""Why a job waits: a Pending job's (or pod's) events and messages turned into named reasons.

Core (no Textual), pure: `why_pending(detail)` reads what describe returned (JobDetail's events,
pod messages and the job's message) and matches the phrases the Kubernetes scheduler, the kubelet
and the Run:ai scheduler print. `one_line` is the jobs table's HEALTH cell; diagnose turns each
reason into a `pending` finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from runai_tui.shapes.models import JobDetail, Phase


@dataclass(frozen=True)
class Rule:
    kind: str
    summary: str  # the one line, e.g. "not enough GPUs"
    fix: str
    pattern: re.Pattern[str]


def _re(text: str) -> re.Pattern[str]:
    return re.compile(text, re.IGNORECASE)


# In order: the first rule that matches an event names its reason. Phrases are the scheduler's
# FailedScheduling messages ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu."), the
# kubelet's image pull reasons, and the Run:ai scheduler's quota wording; the exact Run:ai
# sentence varies by version, so any "exceeds/over ... quota" counts.
RULES: tuple[Rule, ...] = (
    Rule(
        "quota",
        "over quota",
        "the project's GPU quota is used up: wait for other jobs, ask for a larger quota, or "
        "submit as preemptible (a training on over-quota resources) if the project allows it",
        _re(r"\b(exceed(s|ed)?|over)\b[^.\n]{0,60}\bquota\b|\bquota\b[^.\n]{0,30}\bexceeded\b"),
    ),
    Rule(
        "gpu",
        "not enough free GPUs",
        "ask for fewer GPUs per pod (gpu / workers in the profile), or wait for GPUs to free up "
        "(`runai-tui list` shows who holds them)",
        _re(r"Insufficient nvidia\.com/gpu|enough resources?:? GPU|not enough GPU"),
    ),
    Rule(
        "memory",
        "not enough free memory on any node",
        "lower cpu_memory_request in the profile, or wait for memory to free up",
        _re(r"Insufficient memory|enough resources?:? (?:CPU )?memory"),
    ),
    Rule(
        "cpu",
        "not enough free CPU on any node",
        "lower cpu_core_request in the profile, or wait for CPU to free up",
        _re(r"Insufficient cpu\b"),
    ),
    Rule(
        "pvc",
        "a PVC is not bound",
        "check the claim exists in the project's namespace and is Bound (a typo in pvcs.claim "
        "is the usual cause; `kubectl get pvc`), or its storage class can provision it",
        _re(
            r"unbound (?:immediate )?PersistentVolumeClaims|persistentvolumeclaim \S+ not found"
            r"|PVC path (?:is )?missing"
        ),
    ),
    Rule(
        "image",
        "the image cannot be pulled",
        "check the image name and tag, and the registry credentials (an imagePullSecret in the "
        "project); `runai-tui describe JOB` shows the registry's answer",
        _re(r"ErrImagePull|ImagePullBackOff|Failed to pull image|InvalidImageName"),
    ),
    Rule(
        "node-selector",
        "no node matches the node selector or affinity",
        "check node_pools / node selector labels in the profile against the cluster's nodes",
        _re(r"didn't match (?:Pod's )?node (?:affinity|selector)|node\(s\) didn't match"),
    ),
    Rule(
        "taint",
        "every free node has a taint the pod does not tolerate",
        "add the toleration to the profile, or pick a node pool without the taint",
        _re(r"untolerated taint|had taints? that the pod didn't tolerate"),
    ),
    Rule(
        "capacity",
        "the node runs as many pods as it may",
        "wait for a job to end, or raise the node's pod capacity (max_pods in local.yaml on "
        "the local cluster)",
        _re(r"Too many pods"),
    ),
)


@dataclass
class PendingReason:
    kind: str
    summary: str
    fix: str
    evidence: str  # the event or message that says so, as the cluster printed it
    pod: str = ""  # the pod it is about, when the message came from a pod
    time: str = ""


def waiting(detail: JobDetail) -> bool:
    """The job, or one of its pods, waits to be scheduled or started."""
    if detail.job.phase is Phase.PENDING:
        return True
    active = detail.job.phase not in (Phase.COMPLETED, Phase.FAILED, Phase.STOPPED)
    return active and any(p.phase is Phase.PENDING for p in detail.pods)


def match(text: str) -> Rule | None:
    for rule in RULES:
        if rule.pattern.search(text):
            return rule
    return None


def why_pending(detail: JobDetail) -> list[PendingReason]:
    """Why the job waits, newest evidence first, one reason per kind; one `unknown` reason when
    nothing it says names a known one; empty when it does not wait."""
    if not waiting(detail):
        return []
    found: dict[str, PendingReason] = {}
    texts: list[tuple[str, str, str]] = []  # (text, pod, time), newest first
    for pod in detail.pods:
        if pod.phase is Phase.PENDING and pod.message:
            texts.append((pod.message, pod.name, ""))
    for event in sorted(detail.events, key=lambda e: e.time, reverse=True):
        texts.append((f"{event.reason}: {event.message}", "", event.time))
    if detail.job.raw.get("message"):
        texts.append((str(detail.job.raw["message"]), "", ""))
    for text, pod_name, time in texts:
        rule = match(text)
        if rule is not None and rule.kind not in found:
            found[rule.kind] = PendingReason(
                rule.kind, rule.summary, rule.fix, text, pod_name, time
            )
    if not found:
        waiting_pod = next((p.name for p in detail.pods if p.phase is Phase.PENDING), "")
        return [
            PendingReason("unknown", UNKNOWN_SUMMARY, UNKNOWN_FIX, _latest(detail), waiting_pod)
        ]
    return list(found.values())


UNKNOWN_SUMMARY = "no reason given yet"
UNKNOWN_FIX = "read the events with `runai-tui describe JOB`; a fresh job may only need a moment"


def _latest(detail: JobDetail) -> str:
    events = sorted(detail.events, key=lambda e: e.time)
    return f"{events[-1].reason}: {events[-1].message}" if events else "no events"


def one_line(detail: JobDetail) -> str:
    """The HEALTH cell of a waiting job, `pending: REASON[; REASON]`; empty if it does not wait."""
    reasons = why_pending(detail)
    return "pending: " + "; ".join(r.summary for r in reasons) if reasons else ""
