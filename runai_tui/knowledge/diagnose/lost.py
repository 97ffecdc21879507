"""The `pod-lost` detector: a pod of an ended job was killed from outside (its node lost or
rebooted, an eviction, a SIGKILL), as describe's events and the pods' messages say. A fault of the
cluster, not of the job: the retry catalogue (codes.py) says the same submission may run again.

Kubernetes says it with a pod reason or an event (`Evicted`, `NodeLost`, `NodeNotReady`,
`TaintManagerEviction`, the `DisruptionTarget` condition); the local cluster with
`pod NAME killed by SIGKILL` (its supervisor's PodFailed event). A pod killed for its memory
(`OOMKilled`) is not lost: its own limit killed it, and running it again fails the same way.
A pod stopped because another failed (`stopped: …`) is the consequence, not the fault.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from runai_tui.knowledge.diagnose.codes import make_finding
from runai_tui.knowledge.diagnose.joblogs import JobLogs
from runai_tui.knowledge.findings import Finding

LOST = re.compile(
    r"\bkilled by SIG(?:KILL|TERM|HUP)\b|\bEvicted\b|\bNodeLost\b|\bNodeNotReady\b|"
    r"TaintManagerEviction|DisruptionTarget|\bnode \S+ (?:was )?(?:lost|not ready|unreachable)",
    re.IGNORECASE,
)
_OOM = re.compile(r"OOMKilled|out of memory", re.IGNORECASE)
_POD = re.compile(r"\bpod (\S+)")


def _lost(text: str) -> bool:
    return bool(LOST.search(text)) and not _OOM.search(text) and not text.startswith("stopped:")


def pod_lost(job: JobLogs) -> Iterator[Finding]:
    """One finding per lost pod of a job that no longer runs (a running one was restarted in
    place, or still is): the event that says so, else the pod's own message."""
    if job.running or job.detail is None:
        return
    seen: set[str] = set()
    for event in job.detail.events:
        text = f"{event.reason}: {event.message}" if event.reason else event.message
        if not _lost(event.message) and not _lost(event.reason):
            continue
        named = _POD.search(event.message)
        pod = named.group(1) if named else job.detail.job.name
        if pod not in seen:
            seen.add(pod)
            yield make_finding("pod-lost", pod, 0, text)
    for p in job.detail.pods:
        if p.name not in seen and _lost(p.message):
            seen.add(p.name)
            yield make_finding("pod-lost", p.name, 0, p.message)
