"""Defensive parsing of runai output (pure functions, no subprocess)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from runai_tui.runai.parse import (
    classify_failure,
    extract_json,
    first_meaningful_line,
    parse_describe,
    parse_list_page,
    parse_submitted_name,
    parse_time,
    strip_notices,
)
from runai_tui.shapes.errors import ErrorKind, RunaiError
from runai_tui.shapes.models import Phase

NOTICE_BEFORE = "A new version (v2.25.3) is available. Updating now...\n"
NOTICE_AFTER = (
    "\nWarning: You are currently using version 2.22.1. A newer version 2.25.3 is available.\n"
)

# --- JSON extraction -------------------------------------------------------------------------


def test_json_found_between_update_notices() -> None:
    text = NOTICE_BEFORE + '{"workloads": [{"name": "a"}], "next": ""}' + NOTICE_AFTER
    assert extract_json(text) == {"workloads": [{"name": "a"}], "next": ""}


def test_json_skips_bracketed_notice_text() -> None:
    # "[2]" and "[notice]" decode badly or are not payloads; the real array follows.
    text = 'Warning [notice] see [2]\n[{"name": "a"}]\n'
    assert extract_json(text) == [{"name": "a"}]


def test_no_json_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        extract_json("Error: something broke")


def test_strip_notices_keeps_real_lines() -> None:
    assert strip_notices(NOTICE_BEFORE + "alice@example.com" + NOTICE_AFTER) == "alice@example.com"


# --- list ------------------------------------------------------------------------------------


def test_list_bare_list_with_v2_names() -> None:
    doc = [
        {
            "name": "train-a",
            "phase": "Running",
            "projectName": "team-a",
            "runningPods": 3,
            "requestedPods": 3,
            "allocatedGPUs": 3,
            "createdAt": "2026-03-01T10:00:00Z",
            "type": "Training",
            "framework": "PyTorch",
        }
    ]
    jobs, token = parse_list_page(json.dumps(doc))
    assert token == ""
    [job] = jobs
    assert (job.name, job.phase, job.project) == ("train-a", Phase.RUNNING, "team-a")
    assert (job.running_pods, job.requested_pods, job.gpus) == (3, 3, 3.0)
    assert job.created == datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
    assert job.type == "Training PyTorch"
    assert job.to_dict()["status"] == "Running"


@pytest.mark.parametrize("key", ["workloads", "items", "data", "trainings", "Workloads"])
def test_list_wrapped_under_any_known_key(key: str) -> None:
    text = json.dumps({key: [{"name": "a", "status": "Pending"}, {"name": "b"}]})
    jobs, _ = parse_list_page(text)
    assert [j.name for j in jobs] == ["a", "b"]
    assert [j.phase for j in jobs] == [Phase.PENDING, Phase.UNKNOWN]


def test_list_alternative_item_spellings() -> None:
    items = [
        {"workload": "w1", "Status": "running", "Project": "p1", "GPU Allocation": "0.50"},
        {"Name": "w2", "actualPhase": "Failed", "project": "p2", "gpuAllocation": 2},
        {"workloadName": "w3", "status": "Stopped", "projectName": "p3",
         "allocatedResources": {"gpu": 4}, "running_pods": "1", "requestedPods": "2",
         "creationTimestamp": "2026-01-02T03:04:05.123456789+02:00"},
        {"name": "w4", "Running/Requested Pods": "1/3", "submittedAt": 1767225600000},
    ]  # fmt: skip
    jobs, _ = parse_list_page(json.dumps({"items": items}))
    assert [(j.name, j.phase, j.project) for j in jobs] == [
        ("w1", Phase.RUNNING, "p1"),
        ("w2", Phase.FAILED, "p2"),
        ("w3", Phase.STOPPED, "p3"),
        ("w4", Phase.UNKNOWN, ""),
    ]
    assert [j.gpus for j in jobs] == [0.5, 2.0, 4.0, None]
    assert (jobs[2].running_pods, jobs[2].requested_pods) == (1, 2)
    assert (jobs[3].running_pods, jobs[3].requested_pods) == (1, 3)
    tz = timezone(timedelta(hours=2))
    assert jobs[2].created == datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=tz)
    assert jobs[3].created == datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("v1_status", "phase"),
    [
        ("Succeeded", Phase.COMPLETED),
        ("TimedOut", Phase.FAILED),
        ("Preempted", Phase.PENDING),
        ("Deleted", Phase.DELETING),
        ("ContainerCreating", Phase.INITIALIZING),
        ("Running", Phase.RUNNING),
        ("Invalid job", Phase.UNKNOWN),
    ],
)
def test_list_v1_statuses_normalised(v1_status: str, phase: Phase) -> None:
    jobs, _ = parse_list_page(json.dumps([{"name": "j", "status": v1_status}]))
    assert jobs[0].phase is phase


@pytest.mark.parametrize("key", ["next", "nextToken", "next_token"])
def test_list_next_token_spellings(key: str) -> None:
    _, token = parse_list_page(json.dumps({"workloads": [{"name": "a"}], key: "tok-2"}))
    assert token == "tok-2"


def test_list_with_notices_around() -> None:
    text = NOTICE_BEFORE + json.dumps({"workloads": [{"name": "a"}], "next": ""}) + NOTICE_AFTER
    jobs, token = parse_list_page(text)
    assert ([j.name for j in jobs], token) == (["a"], "")


@pytest.mark.parametrize("text", ["", "\n", "No workloads found\n", "[]", "{}", "null"])
def test_list_empty_answers(text: str) -> None:
    assert parse_list_page(text) == ([], "")


@pytest.mark.parametrize(
    "text",
    [
        "Workload  Type  Status\ntrain1  Training  Running",  # a table, not JSON
        '{"message": "hello", "code": 3}',  # an object without any list
        '[{"id": 1}, {"id": 2}]',  # items without names
    ],
)
def test_list_unknown_shapes_are_runai_errors(text: str) -> None:
    with pytest.raises(RunaiError) as info:
        parse_list_page(text)
    assert info.value.kind is ErrorKind.OTHER
    assert info.value.message.startswith("could not parse the workload list")
    assert "\n" not in info.value.message


def test_list_skips_nameless_items_among_good_ones() -> None:
    jobs, _ = parse_list_page(json.dumps([{"name": "a"}, {"id": 2}, "junk", {"name": ""}]))
    assert [j.name for j in jobs] == ["a"]


# --- describe --------------------------------------------------------------------------------

LOCAL_DESCRIBE = {
    "name": "retinanet-tcp",
    "id": "0b3c",
    "type": "Training",
    "framework": "PyTorch",
    "phase": "Running",
    "projectName": "local",
    "runningPods": 3,
    "requestedPods": 3,
    "allocatedGPUs": 0,
    "createdAt": "2026-11-22T01:00:00Z",
    "pods": [
        {"name": "retinanet-tcp-master-0", "phase": "Running", "role": "master",
         "nodeName": "local", "pid": 100, "exitCode": None, "message": ""},
        {"name": "retinanet-tcp-worker-0", "phase": "Succeeded", "role": "worker",
         "nodeName": "local", "pid": 101, "exitCode": 0, "message": "done"},
    ],
    "events": [
        {"createdAt": "2026-11-22T01:00:01Z", "type": "Normal", "reason": "Started",
         "message": "pod started"},
    ],
    "resources": {"workers": 2, "gpus": 1},
    "notes": ["--large-shm has no effect on the local cluster"],
    "spec": {"image": "x"},
}  # fmt: skip


def test_describe_local_cluster_shape() -> None:
    detail = parse_describe(json.dumps(LOCAL_DESCRIBE))
    assert (detail.job.name, detail.job.phase, detail.job.project) == (
        "retinanet-tcp",
        Phase.RUNNING,
        "local",
    )
    assert [(p.name, p.phase, p.role, p.node) for p in detail.pods] == [
        ("retinanet-tcp-master-0", Phase.RUNNING, "master", "local"),
        ("retinanet-tcp-worker-0", Phase.COMPLETED, "worker", "local"),
    ]
    assert detail.pods[1].message == "done"
    [event] = detail.events
    assert (event.time, event.type, event.reason, event.message) == (
        "2026-11-22T01:00:01Z",
        "Normal",
        "Started",
        "pod started",
    )
    assert detail.resources == {"workers": 2, "gpus": 1}
    assert detail.notes == ["--large-shm has no effect on the local cluster"]
    assert detail.to_dict()["pods"][0]["status"] == "Running"


def test_describe_rest_like_shape_with_notices() -> None:
    doc = {
        "general": {"workloadName": "ddp", "actualPhase": "Degraded", "Project": "team-b"},
        "podList": [
            {"podName": "ddp-master-0", "k8sPhase": "Running", "node": "gpu-1"},
            {"podName": "ddp-worker-0", "status": "Pending"},
            {"no_name": True},
        ],
        "events": {"items": [{"Time": "t1", "Type": "Warning", "Reason": "BackOff"}]},
        "allocatedResources": {"gpu": 2},
    }
    detail = parse_describe(NOTICE_BEFORE + json.dumps(doc) + NOTICE_AFTER)
    assert (detail.job.name, detail.job.phase, detail.job.project) == (
        "ddp",
        Phase.DEGRADED,
        "team-b",
    )
    assert detail.job.gpus == 2.0
    assert [(p.name, p.phase, p.role, p.node) for p in detail.pods] == [
        ("ddp-master-0", Phase.RUNNING, "master", "gpu-1"),
        ("ddp-worker-0", Phase.PENDING, "worker", ""),
    ]
    assert [(e.time, e.type, e.reason) for e in detail.events] == [("t1", "Warning", "BackOff")]


@pytest.mark.parametrize("text", ["not json at all", "[1, 2]", '{"pods": []}', '"just a string"'])
def test_describe_unknown_shapes_are_runai_errors(text: str) -> None:
    with pytest.raises(RunaiError) as info:
        parse_describe(text)
    assert info.value.kind is ErrorKind.OTHER
    assert "could not parse the workload description" in info.value.message


# --- times -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-01-02T03:04:05Z", datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)),
        ("2026-01-02T03:04:05.5Z", datetime(2026, 1, 2, 3, 4, 5, 500000, tzinfo=timezone.utc)),
        ("2026-01-02 03:04:05 UTC", datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)),
        ("2026-01-02T03:04:05-0130", datetime(2026, 1, 2, 4, 34, 5, tzinfo=timezone.utc)),
        (1767225600, datetime(2026, 1, 1, tzinfo=timezone.utc)),
        ("yesterday", None),
        ("2026-13-02T03:04:05Z", None),
        (None, None),
        (True, None),
    ],
)
def test_parse_time(value: object, expected: datetime | None) -> None:
    assert parse_time(value) == expected


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Error: not logged in, please log in",
        "You are currently not logged in to Run:AI",
        "Error: request failed with status 401",
        "Error: Unauthorized",
        "Error: token expired",
        "Error: No valid id-token found, please login",
        "Error: your session has expired",
        "error: You must be logged in to the server (Unauthorized)",
        "Error: oidc: token is expired",
        "Error: 401 Unauthorized",
        "Error: access token has expired, run 'runai login'",
    ],
)
def test_classify_not_logged_in(text: str) -> None:
    error = classify_failure(NOTICE_BEFORE + text, 1)
    assert error is not None and error.kind is ErrorKind.NOT_LOGGED_IN
    assert error.hint == "run: runai login"
    assert "\n" not in error.message


@pytest.mark.parametrize(
    "text",
    [
        "workload 'job-a' could not be found in project 'p'",
        "Error: could not locate desired workload",
        "Error: workload job-a not found",
        "Job job-a does not exist in project p. If the job exists in a different project, "
        "use -p <project-name>.",
    ],
)
def test_classify_not_found(text: str) -> None:
    error = classify_failure(text, 1, names=["job-a"])
    assert error is not None and error.kind is ErrorKind.NOT_FOUND
    assert error.message == text.strip().removeprefix("Error: ")  # ours says `error:` already
    assert "runai-tui list" in error.hint


@pytest.mark.parametrize(
    ("text", "names"),
    [
        # a submit whose PVC, project, node pool or image is missing: not a login problem
        ("Error: PVC project-001 not found", []),
        ('Error: persistentvolumeclaims "project-001" not found', []),
        ("Error: project team-b not found", []),
        ("Error: node pool 'pool-401' does not exist", []),
        ("Error: failed to pull image: manifest for img:401 not found", []),
        ("Error: x509: certificate has expired or is not yet valid", []),
        ("Error: image pull secret expired", []),
        ("Error: request failed: 503 Service Unavailable (retry 401 of 1000)", []),
        ("Error: the server could not find the requested resource (get nodes)", []),
        # a describe of an existing job whose pod is missing: the job itself exists
        ("Error: pod 'job-a-worker-7' could not be found in workload 'job-a'", ["job-a"]),
    ],
)
def test_classify_misleading_phrases_are_other(text: str, names: list[str]) -> None:
    error = classify_failure(text, 1, names=names, command="runai training pytorch submit")
    assert error is not None and error.kind is ErrorKind.OTHER, error
    assert "runai login" not in error.hint
    assert error.message.endswith(text.removeprefix("Error: "))
    assert "Error:" not in error.message


def test_classify_a_missing_pvc_on_submit_is_not_a_login_hint() -> None:
    # Seen on a real cluster: `runai training pytorch submit` failing on a missing PVC.
    out = NOTICE_BEFORE + "Error: PVC project-001 not found in project team-a\n"
    error = classify_failure(out, 1, command="runai training pytorch submit")
    assert error is not None and error.kind is ErrorKind.OTHER
    assert error.hint == "run the same command with runai directly to see its full output"


@pytest.mark.parametrize(
    "text",
    [
        "workload 'job-a' could not be found in any project (standard training; use 'training "
        "pytorch' for PyTorch workloads)",
        'Error: pytorchjobs.kubeflow.org "job-a" not found',
        "Error: workload not found",
    ],
)
def test_classify_not_found_other_real_phrases(text: str) -> None:
    error = classify_failure(text, 1, names=["job-a"])
    assert error is not None and error.kind is ErrorKind.NOT_FOUND


def test_classify_exit_zero_does_not_exist_when_checked() -> None:
    text = "Job x does not exist in project p. If the job exists in a different project, use -p."
    assert classify_failure(text, 0) is None  # only commands that ask for it check exit 0
    error = classify_failure(text, 0, names=["x"], check_when_ok=True)
    assert error is not None and error.kind is ErrorKind.NOT_FOUND


def test_classify_masks_workload_names() -> None:
    # A job whose name contains trigger words must not be mistaken for a login failure.
    text = "Error: admission webhook denied the request for expired-401"
    error = classify_failure(text, 1, names=["expired-401"], command="runai training pytorch")
    assert error is not None and error.kind is ErrorKind.OTHER
    assert error.message == (
        "runai training pytorch failed (exit 1): "
        "admission webhook denied the request for expired-401"
    )


def test_classify_other_uses_first_meaningful_line() -> None:
    error = classify_failure(NOTICE_BEFORE + "\n\nError: quota exceeded\nUsage: ...\n", 1)
    assert error is not None and error.kind is ErrorKind.OTHER
    assert error.message == "runai failed (exit 1): quota exceeded"


@pytest.mark.parametrize(
    ("said", "flag"),
    [
        ("Error: unknown flag: --foo\nUsage: ...\n", "--foo"),
        ("Error: unknown shorthand flag: 'x' in -x\n", "'x' in -x"),
    ],
)
def test_an_unknown_flag_is_one_line_naming_it(said: str, flag: str) -> None:
    error = classify_failure(NOTICE_BEFORE + said, 1, command="runai training pytorch submit")
    assert error is not None and error.kind is ErrorKind.OTHER
    assert error.message == (
        f"runai training pytorch submit does not know the flag {flag} (this runai CLI lacks it)"
    )
    assert classify_failure("", 2) is not None
    assert classify_failure("all good", 0, check_when_ok=True) is None


def test_first_meaningful_line_trims_long_lines() -> None:
    assert first_meaningful_line(NOTICE_BEFORE + "  \n  hello  \nworld") == "hello"
    assert len(first_meaningful_line("x" * 1000)) == 300


@pytest.mark.parametrize(
    ("output", "name"),
    [
        ("Creating pytorch training pytorch-06027b585626...\n", "pytorch-06027b585626"),
        ("Creating training train-x...\nTo track the workload's status, run ...", "train-x"),
        ("The job 'old-job' has been submitted successfully", "old-job"),
        ("something else", ""),
    ],
)
def test_submitted_name(output: str, name: str) -> None:
    assert parse_submitted_name(output) == name


@pytest.mark.parametrize(
    ("output", "version"),
    [
        ("Version: 2.18.94\nBuildDate: 2024-01-01\n", "2.18.94"),
        (NOTICE_BEFORE + "runai version v2.25.3-rc.1\n", "2.25.3-rc.1"),
        ("runai-local 0.1.0 (embedded local cluster)", "runai-local 0.1.0"),
        ("development build", "development build"),
    ],
)
def test_the_version_is_read_from_the_first_meaningful_line(output: str, version: str) -> None:
    # The one reader of `runai version` (installed.Capabilities.aversion): notices skipped.
    from runai_tui.runai.installed import first_line
    from runai_tui.shapes.cli_generations import classify

    assert classify(first_line(output)).version == version


def test_resource_rows_flatten_and_skip_unset() -> None:
    from runai_tui.shapes.models import Job, JobDetail

    detail = JobDetail(
        job=Job(name="j"),
        resources={
            "cpu": {"limit": None, "request": None},
            "gpu": {"master": 0, "perWorker": 1},
            "largeShm": True,
            "extendedResources": {},
            "nodePools": ["a", "b"],
        },
    )
    assert detail.resource_rows() == [
        ("gpu.master", "0"),
        ("gpu.perWorker", "1"),
        ("largeShm", "yes"),
        ("nodePools", "a, b"),
    ]
