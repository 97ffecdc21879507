"""The detectors of the codes no single line shows: tcp-fallback (from the transport),
data-starved, straggler and stalled (from the trainer's records). Each takes the whole job (JobLogs)
and returns its findings; report.DETECTORS runs them in order."""

from __future__ import annotations

import time
from collections.abc import Iterator

from runai_tui.knowledge.diagnose.codes import make_finding
from runai_tui.knowledge.diagnose.joblogs import JobLogs
from runai_tui.knowledge.diagnose.nccl_net import TRANSPORT_IB, TRANSPORT_SOCKET
from runai_tui.knowledge.findings import Finding
from runai_tui.knowledge.records.stragglers import stragglers_in_lines

DATA_STARVED_RATIO = 1 / 3  # data wait above this share of step time
STALL_FACTOR = 20  # "stalled": no record for this many usual record intervals...
STALL_MIN_SECONDS = 600.0  # ...and at least this long (an evaluation pauses records too)


def tcp_fallback(job: JobLogs) -> Iterator[Finding]:
    """A pod on sockets although IB was asked for. A job-level judgement: NCCL_IB_* settings
    are printed by rank 0 only, so IB asked for anywhere applies to every pod that uses
    sockets; a pod that initialised IB or failed to register memory for it wanted it too."""
    for pod in job.pods:
        net = pod.transport
        wanted = job.ib_wanted or TRANSPORT_IB in pod.net_init or "memlock" in pod.counts
        if wanted and net is not None and net.transport == TRANSPORT_SOCKET:
            yield make_finding("tcp-fallback", pod.pod, net.line, net.text)


def data_starved(job: JobLogs) -> Iterator[Finding]:
    """Data wait above DATA_STARVED_RATIO of the step time over a pod's newest records."""
    for pod in job.pods:
        rec = pod.records()
        if rec.step_sum > 0 and rec.data_sum / rec.step_sum > DATA_STARVED_RATIO:
            assert rec.worst is not None
            yield make_finding("data-starved", pod.pod, rec.worst[1], rec.worst[2])


def straggler(job: JobLogs) -> Iterator[Finding]:
    """A rank slower than the others, or waiting for its data (the rule: knowledge/records/stragglers.py)."""
    for pod in job.pods:
        for found in stragglers_in_lines(pod.record_lines()):
            finding = make_finding("straggler", pod.pod, found.line, found.evidence)
            finding.fix = found.fix  # where to look, for this rank's figures
            yield finding


def stalled(job: JobLogs) -> Iterator[Finding]:
    """A Running job whose trainer has not finished and printed no record for far longer
    than usual (STALL_FACTOR intervals, at least STALL_MIN_SECONDS)."""
    if not job.running:
        return
    now = time.time() if job.now is None else job.now
    for pod in job.pods:
        rec = pod.records()
        usual = rec.usual_interval()
        if rec.finished or not usual or rec.last_time is None:
            continue
        silent = now - rec.last_time
        if silent > max(STALL_FACTOR * usual, STALL_MIN_SECONDS):
            assert rec.last_record is not None
            finding = make_finding("stalled", pod.pod, *rec.last_record)
            finding.message += (
                f" (no record for {duration(silent)}; usually one every {duration(usual)})"
            )
            yield finding


def duration(seconds: float) -> str:
    """`42 s`, `17 min`, `3.5 h`."""
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
