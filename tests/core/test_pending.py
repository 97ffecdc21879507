"""Why a job waits: real scheduler, kubelet and Run:ai event wordings into named reasons, the
HEALTH line, and the `pending` finding diagnose adds."""

from __future__ import annotations

import json

import pytest

from runai_tui.knowledge.diagnose.pending import one_line, why_pending
from runai_tui.runai.parse import parse_describe
from runai_tui.shapes.models import Event, Job, JobDetail, Phase, Pod
from runai_tui.workflows.diagnose_job import diagnose_job
from tests.fakes import rule

# As `kubectl describe pod` / the Run:ai events list print them.
EVENTS = {
    "gpu": (
        "FailedScheduling",
        "0/12 nodes are available: 3 Insufficient nvidia.com/gpu, 9 node(s) had untolerated "
        "taint {node-role.kubernetes.io/control-plane: }. preemption: 0/12 nodes are available: "
        "12 No preemption victims found for incoming pod.",
    ),
    "memory": ("FailedScheduling", "0/4 nodes are available: 4 Insufficient memory."),
    "quota": (
        "Unschedulable",
        "Non-preemptible workload is over quota. Workload requested 8 GPUs, but project-a "
        "quota is 4 GPUs.",
    ),
    "pvc": (
        "FailedScheduling",
        "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
        "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.",
    ),
    "image": (
        "Failed",
        'Failed to pull image "nvcr.io/nvidia/pytorch:24.13-py3": rpc error: code = NotFound '
        "desc = failed to pull and unpack image: not found",
    ),
    "node-selector": (
        "FailedScheduling",
        "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.",
    ),
    "capacity": ("FailedScheduling", "0/1 nodes are available: 1 Too many pods."),
}


def pending(*events: tuple[str, str], pods: list[Pod] | None = None) -> JobDetail:
    return JobDetail(
        job=Job("j", Phase.PENDING),
        pods=pods or [Pod("j-master-0", Phase.PENDING)],
        events=[
            Event(f"2026-11-24T10:00:0{i}Z", "Warning", r, m) for i, (r, m) in enumerate(events)
        ],
    )


@pytest.mark.parametrize("kind", list(EVENTS))
def test_each_reason_is_named_from_its_real_event(kind: str) -> None:
    reasons = why_pending(pending(EVENTS[kind]))
    assert reasons[0].kind == kind
    assert EVENTS[kind][1] in reasons[0].evidence and reasons[0].fix


def test_newest_first_one_per_kind_and_the_one_line() -> None:
    detail = pending(EVENTS["gpu"], EVENTS["quota"], EVENTS["gpu"])
    assert [r.kind for r in why_pending(detail)] == ["gpu", "quota"]
    assert one_line(detail) == "pending: not enough free GPUs; over quota"


def test_image_pull_from_a_pods_waiting_reason() -> None:
    pods = [
        Pod("j-master-0", Phase.RUNNING),
        Pod("j-worker-0", Phase.PENDING, message="ErrImagePull"),
    ]
    detail = JobDetail(job=Job("j", Phase.INITIALIZING), pods=pods)
    [reason] = why_pending(detail)
    assert (reason.kind, reason.pod) == ("image", "j-worker-0")


def test_not_waiting_says_nothing_and_unknown_says_so() -> None:
    running = JobDetail(job=Job("j", Phase.RUNNING), pods=[Pod("p", Phase.RUNNING)])
    assert why_pending(running) == [] and one_line(running) == ""
    done = JobDetail(job=Job("j", Phase.FAILED), pods=[Pod("p", Phase.PENDING)])
    assert why_pending(done) == []
    fresh = pending(("Submitted", "created pytorch training j"))
    [reason] = why_pending(fresh)
    assert reason.kind == "unknown" and reason.evidence == "Submitted: created pytorch training j"
    assert reason.pod == "j-master-0" and one_line(fresh) == "pending: no reason given yet"


async def test_diagnose_adds_a_pending_finding(make_fake, client_for) -> None:
    doc = {
        "name": "j",
        "phase": "Pending",
        "pods": [{"name": "j-master-0", "phase": "Pending"}],
        "events": [
            {"createdAt": "2026-11-24T10:00:00Z", "type": "Warning", "reason": r, "message": m}
            for r, m in (EVENTS["memory"],)
        ],
    }
    assert why_pending(parse_describe(json.dumps(doc)))[0].kind == "memory"
    fake = make_fake(
        [
            rule("describe", "j", stdout=json.dumps(doc)),
            rule("logs", stderr="Error: pod j-master-0 is pending\n", exit=1),
        ]
    )
    report = await diagnose_job(client_for(fake), "j")
    [finding] = [f for f in report.findings if f.code == "pending"]
    assert finding.severity == "warning" and finding.message == "not enough free memory on any node"
    assert finding.evidence == "FailedScheduling: 0/4 nodes are available: 4 Insufficient memory."
    assert report.exit_code == 0  # a warning: the job is fine, it waits


async def test_diagnose_waiting_reads_describe_only(make_fake, client_for) -> None:
    from runai_tui.workflows.diagnose_job import diagnose_waiting

    doc = {
        "name": "j",
        "phase": "Pending",
        "pods": [{"name": "j-master-0", "phase": "Pending"}],
        "events": [{"createdAt": "2026-11-24T10:00:00Z", "type": "Warning",
                    "reason": EVENTS["pvc"][0], "message": EVENTS["pvc"][1]}],
    }  # fmt: skip
    fake = make_fake([rule("describe", "j", stdout=json.dumps(doc))])
    report = await diagnose_waiting(client_for(fake), "j")
    assert [(f.code, f.message) for f in report.findings] == [("pending", "a PVC is not bound")]
    calls = fake.calls()
    assert any("describe" in c for c in calls) and not any("logs" in c for c in calls)
