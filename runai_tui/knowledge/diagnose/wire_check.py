"""The detectors of the trainer's wire check (its `comm` record, knowledge/records/wire.py): wire-slow
(the all-reduce's busbw under a share of the link the pods read) and wire-slow-pair (one pair of
neighbouring ranks far slower than the others of its kind, between pods or inside one, naming
the node)."""

from __future__ import annotations

from collections.abc import Iterator

from runai_tui.knowledge.diagnose.codes import make_finding
from runai_tui.knowledge.diagnose.joblogs import JobLogs
from runai_tui.knowledge.findings import Finding
from runai_tui.knowledge.records.progress import parse_metric_line
from runai_tui.knowledge.records.wire import WireCheck, below_link, read_check, slow_pair


def job_check(job: JobLogs) -> tuple[str, int, WireCheck] | None:
    """(the pod whose log holds it, its line, the check): the newest comm record of any pod,
    with the pairs' unknown nodes filled from describe."""
    for pod in job.pods:
        if pod.comm_record is None:
            continue
        number, line = pod.comm_record
        record = parse_metric_line(line)
        check = read_check(record) if record is not None else None
        if check is None:
            continue
        if job.detail is not None:
            check = check.with_nodes({p.name: p.node for p in job.detail.pods if p.node})
        return pod.pod, number, check
    return None


def wire_slow(job: JobLogs) -> Iterator[Finding]:
    found = job_check(job)
    if found is None:
        return
    pod, line, check = found
    evidence = below_link(check)
    if evidence is not None:
        yield make_finding("wire-slow", pod, line, evidence)


def wire_slow_pair(job: JobLogs) -> Iterator[Finding]:
    """The finding is on the pod of the suspect node when the record names it there (its
    line: the record's in the first pod's log), so its remedy keeps the job off that node."""
    found = job_check(job)
    if found is None:
        return
    pod, line, check = found
    slow = slow_pair(check)
    if slow is None:
        return
    pair, node, evidence = slow
    if not node:  # one link, either end: the job's finding, no node to keep off
        finding = make_finding("wire-slow-pair", "", 0, evidence)
        finding.message += f" (the link {' / '.join(pair.nodes)})"
        yield finding
        return
    suspect = next((p for p, n in zip(pair.pods, pair.nodes, strict=True) if n == node), pod)
    finding = make_finding("wire-slow-pair", suspect, line if suspect == pod else 0, evidence)
    finding.message += f" (node {node})"
    yield finding
