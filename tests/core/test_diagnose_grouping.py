"""One finding per fault (findings.one_per_fault): the same code and fix on several pods is one
finding naming them, with the first one's evidence, in diagnose (text and JSON), preflight, and
the remedies, computed once per fault."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from runai_tui.knowledge.diagnose import (
    PodDiagnoser,
    combine,
    diagnose_lines,
    make_finding,
    render_text,
)
from runai_tui.knowledge.findings import Finding, one_per_fault, pods_named
from runai_tui.knowledge.probes.preflight import Preflight, checklist
from runai_tui.knowledge.probes.preflight import render_text as preflight_text
from runai_tui.knowledge.remedies import attach, context_of
from runai_tui.profiles import ProfileStore, apply_overrides
from runai_tui.shapes.models import Job, JobDetail, Pod
from tests.core.test_preflight import RDMA_POD, facts

LOGS = Path(__file__).parent / "diagnose_logs"
SOCKET_IFNAME = (LOGS / "socket-ifname.log").read_text().splitlines()
LOCAL = ProfileStore().load("retinanet-local")


def test_two_pods_with_the_same_fault_are_one_finding_naming_both() -> None:
    report = diagnose_lines({"j-master-0": SOCKET_IFNAME, "j-worker-0": SOCKET_IFNAME})
    found = [f for f in report.findings if f.code == "socket-ifname"]
    assert len(found) == 1
    [fault] = found
    assert (fault.pod, fault.pods) == ("j-master-0", ("j-master-0", "j-worker-0"))
    assert fault.line == SOCKET_IFNAME.index(next(x for x in SOCKET_IFNAME if "bad0" in x)) + 1
    assert "Unable to find address for: bad0" in fault.evidence  # the first pod's line
    text = render_text(report)
    assert text.count("ERROR socket-ifname") == 1 and text.count("  fix:") == len(report.findings)
    assert "  pods:     j-master-0, j-worker-0\n" in text
    as_json = [f for f in report.to_dict()["findings"] if f["code"] == "socket-ifname"]
    assert [f["pods"] for f in as_json] == [["j-master-0", "j-worker-0"]]


def test_five_pods_are_named_three_then_and_2_more_and_json_keeps_all_five() -> None:
    pods = [f"j-worker-{i}" for i in range(5)]
    report = diagnose_lines({pod: SOCKET_IFNAME for pod in pods})
    [fault] = [f for f in report.findings if f.code == "socket-ifname"]
    assert pods_named(fault) == "j-worker-0, j-worker-1, j-worker-2 and 2 more"
    assert "  pods:     j-worker-0, j-worker-1, j-worker-2 and 2 more\n" in render_text(report)
    [as_json] = [f for f in report.to_dict()["findings"] if f["code"] == "socket-ifname"]
    assert as_json["pods"] == pods and as_json["pod"] == "j-worker-0"


def test_different_fixes_stay_separate_and_one_pod_keeps_each_line() -> None:
    a = Finding("x", "error", "m", "fix one", pod="a", line=3, evidence="e1")
    b = Finding("x", "error", "m", "fix two", pod="b", line=4, evidence="e2")
    c = Finding("x", "error", "m", "fix one", pod="c", line=7, evidence="e3")
    a2 = dataclasses.replace(a, line=9, evidence="e4")  # the same pod again: a line of its own
    job = Finding("y", "warning", "the job's", "f")  # about no pod: as it is
    grouped = one_per_fault([a, b, a2, c, job])
    assert [(f.code, f.fix, f.pod, f.pods, f.evidence) for f in grouped] == [
        ("x", "fix one", "a", ("a", "c"), "e1"),  # a2: counted in it
        ("x", "fix two", "b", (), "e2"),
        ("y", "f", "", (), ""),
    ]
    alone = one_per_fault([a, a2])  # one pod, twice: one finding that counts both
    assert [(f.pod, f.pods, f.line, f.seen) for f in alone] == [("a", (), 3, 2)]
    assert [f.all_pods for f in (a, job)] == [["a"], []]


def test_a_grouped_fault_gets_its_remedy_once_from_the_nodes_of_all_its_pods() -> None:
    detail = JobDetail(Job("j"), [Pod("j-master-0", node="n1"), Pod("j-worker-0", node="n2")])
    context = context_of(detail)
    hung = [make_finding("hang-rank", p, 0, "rank 0 group 0: entered 2") for p in ("j-master-0", "j-worker-0")]  # fmt: skip
    [fault] = one_per_fault(hung)
    assert attach([fault], LOCAL, context) == 1
    assert fault.remedy is not None and fault.remedy.sets == ("exclude_node=[n1, n2]",)
    assert fault.remedy.why == "j-master-0 ran on n1; j-worker-0 ran on n2: the new job's pods keep off them"  # fmt: skip


def test_preflight_gives_a_fault_on_every_pod_once_with_its_fix_and_remedy() -> None:
    bad = facts(**{**RDMA_POD, "netifs": "eth0 lo", "shm_kb": "65536"})
    report = Preflight([checklist("j-master-0", bad), checklist("j-worker-0", bad)])
    faults = report.faults()
    assert [(f.code, f.pods) for f in faults] == [
        ("shm", ("j-master-0", "j-worker-0")),
        ("socket-ifname", ("j-master-0", "j-worker-0")),
    ]
    attach(faults, apply_overrides(ProfileStore().load("retinanet-rdma"), ["large_shm=false"]))
    text = preflight_text(report)
    assert text.count("fix: check the Multus network annotation") == 1
    assert text.count("FAIL  socket-ifname") == 3  # each pod's line, then the fault once
    assert "FAIL  socket-ifname NCCL_SOCKET_IFNAME=" in text
    assert "FAIL  socket-ifname j-master-0, j-worker-0\n" in text
    doc = report.to_dict()
    assert [(f["code"], f["pods"]) for f in doc["faults"]] == [
        ("shm", ["j-master-0", "j-worker-0"]),
        ("socket-ifname", ["j-master-0", "j-worker-0"]),
    ]
    assert doc["faults"][0]["remedy"]["set"] == ["large_shm=true"]
    # Each pod's failed item shows its fault's remedy, the same one.
    for pod in doc["pods"]:
        remedies = {i["code"]: i["remedy"]["set"] for i in pod["items"] if i["status"] == "fail"}
        assert remedies == {
            "shm": ["large_shm=true"],
            "socket-ifname": ["env.NCCL_SOCKET_IFNAME=eth0"],
        }
        assert all(i["remedy"] is None for i in pod["items"] if i["status"] != "fail")


def test_a_fault_met_again_after_each_restart_is_one_finding_naming_its_pods_and_restarts() -> None:
    """A worker group restarted three times into the same bad interface on the worker, once on
    the master: one finding, both pods, every line counted, the pods' restarts said."""
    bad = next(x for x in SOCKET_IFNAME if "bad0" in x)
    worker = ["starting", bad, "restarting", bad, "restarting", bad, "restarting", bad]
    detail = JobDetail(Job("j"), [Pod("j-master-0"), Pod("j-worker-0")], raw={"pods": [
        {"name": "j-master-0", "restartCount": 0}, {"name": "j-worker-0", "restartCount": 3}]})  # fmt: skip
    diagnosers = [PodDiagnoser("j-master-0").feed_all([bad]), PodDiagnoser("j-worker-0").feed_all(worker)]  # fmt: skip
    report = combine(diagnosers, detail=detail)
    [fault] = [f for f in report.findings if f.code == "socket-ifname"]
    assert (fault.pod, fault.pods, fault.seen, fault.restarts) == (
        "j-master-0", ("j-master-0", "j-worker-0"), 5, 3)  # fmt: skip
    text = render_text(report)
    assert text.count("ERROR socket-ifname") == 1
    assert "  seen:     5 lines, on 2 pods, over 3 pod restarts\n" in text
    [as_json] = [f for f in report.to_dict()["findings"] if f["code"] == "socket-ifname"]
    assert (as_json["seen"], as_json["restarts"]) == (5, 3)
