"""The retry catalogue: every diagnose code says what a retry can do, `pod-lost` is read from
describe's events as the local cluster and Kubernetes word them, and the decision the watcher
follows (run again, apply remedies, stop with the reason)."""

from __future__ import annotations

from runai_tui.knowledge.diagnose import CODES, combine, make_finding
from runai_tui.knowledge.diagnose.codes import NEVER, REMEDY, RUN_AGAIN
from runai_tui.knowledge.diagnose.retry import decide, retry_of
from runai_tui.knowledge.findings import Remedy
from runai_tui.shapes.models import Event, Job, JobDetail, Phase, Pod


def test_every_code_states_what_a_retry_can_do() -> None:
    assert {c.retry for c in CODES.values()} == {RUN_AGAIN, REMEDY, NEVER}
    assert retry_of("pod-lost") == RUN_AGAIN
    assert retry_of("nccl-timeout") == RUN_AGAIN
    assert retry_of("socket-ifname") == REMEDY
    assert retry_of("trainer-error") == NEVER
    assert retry_of("a-code-of-a-newer-runai-tui") == NEVER


def failed(events: list[tuple[str, str]], pods: list[tuple[str, str]], phase: Phase) -> JobDetail:
    return JobDetail(
        Job("kt", phase),
        pods=[Pod(name, Phase.FAILED, message=message) for name, message in pods],
        events=[Event("2026-11-28T12:46:43Z", "Warning", r, m) for r, m in events],
    )


def lost(detail: JobDetail) -> list[tuple[str, str]]:
    report = combine([], running=detail.job.phase.is_active, detail=detail)
    return [(f.pod, f.evidence) for f in report.findings if f.code == "pod-lost"]


def test_a_pod_killed_from_outside_is_lost_its_peers_stopped_after_it_are_not() -> None:
    # As the local cluster's supervisor says it (the worker SIGKILLed, the master stopped).
    detail = failed(
        [
            ("PodFailed", "pod kt-worker-0 killed by SIGKILL"),
            ("Failed", "workload failed: pod kt-worker-0 killed by SIGKILL"),
        ],
        [
            ("kt-master-0", "stopped: pod kt-worker-0 killed by SIGKILL"),
            ("kt-worker-0", "killed by SIGKILL"),
        ],  # fmt: skip
        Phase.FAILED,
    )
    assert lost(detail) == [("kt-worker-0", "PodFailed: pod kt-worker-0 killed by SIGKILL")]
    # Kubernetes' words: an eviction, a node that went away; an OOM kill is the pod's own limit.
    evicted = failed([("Evicted", "The node was low on resource: ephemeral-storage.")], [],
                     Phase.FAILED)  # fmt: skip
    assert lost(evicted) == [("kt", "Evicted: The node was low on resource: ephemeral-storage.")]
    node = failed([], [("kt-worker-0", "NodeLost: node gpu-7 which was running the pod is "
                                       "unresponsive")], Phase.FAILED)  # fmt: skip
    assert [pod for pod, _ in lost(node)] == ["kt-worker-0"]
    oom = failed([], [("kt-worker-0", "OOMKilled: killed by SIGKILL")], Phase.FAILED)
    assert lost(oom) == []
    # A job restarted in place, still running, is not a failure to retry.
    assert lost(failed([("PodFailed", "pod kt-worker-0 killed by SIGKILL")], [],
                       Phase.RUNNING)) == []  # fmt: skip


def finding(code: str, remedy: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    f = make_finding(code, "kt-master-0", 1, CODES[code].example)
    f.remedy = Remedy(remedy, "why") if remedy else None
    return f


def test_the_decision_runs_again_applies_remedies_or_stops_with_the_reason() -> None:
    info = finding("exit-barrier")
    verdict = decide([finding("pod-lost"), finding("flight-recorder-unreadable"), info], False)
    assert (verdict.action, verdict.codes) == ("run again", ("pod-lost",))
    # An NCCL timeout runs again only with no configuration finding beside it.
    assert decide([finding("nccl-timeout")], False).action == "run again"
    ifname = finding("socket-ifname", ("env.GLOO_SOCKET_IFNAME=lo",))
    both = [finding("nccl-timeout"), ifname]
    stop = decide(both, apply_remedies=False)
    assert stop.action == "stop"
    assert stop.reason == (
        "remedies not applied without --apply-remedies "
        "(socket-ifname: --set env.GLOO_SOCKET_IFNAME=lo)"
    )
    fix = decide(both, apply_remedies=True)
    assert (fix.action, [f.code for f in fix.remedies]) == ("remedy", ["socket-ifname"])
    assert fix.to_dict()["remedies"] == [["env.GLOO_SOCKET_IFNAME=lo"]]
    bare = decide([finding("cuda-oom")], apply_remedies=True)
    assert bare.action == "stop" and bare.reason.startswith("cuda-oom needs a remedy and none")
    never = decide([finding("pod-lost"), finding("trainer-error")], apply_remedies=True)
    assert never.action == "stop" and never.reason.startswith("trainer-error (no retry helps")
    # With no error, the warnings decide; with nothing at all, a person must look.
    assert decide([finding("process-failed")], True).action == "stop"
    assert decide([info], True).reason.startswith("diagnose names no cause")
