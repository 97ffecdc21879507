"""diagnose_job and preflight_job through RunaiClient against the fake `runai` (real
subprocesses, argv recorded): what they ask the CLI, and the no-TTY exec with its timeout."""

from __future__ import annotations

import json

import pytest

from runai_tui.knowledge.probes.preflight import COMMAND, SCRIPT, status
from runai_tui.shapes.errors import ErrorKind, RunaiError
from runai_tui.workflows.diagnose_job import diagnose_job
from runai_tui.workflows.preflight import preflight_job
from tests.fakes import rule

DESCRIBE = json.dumps(
    {
        "name": "job-a",
        "phase": "Running",
        "pods": [
            {"name": "job-a-master-0", "phase": "Running", "role": "master"},
            {"name": "job-a-worker-0", "phase": "Running", "role": "worker"},
            {"name": "job-a-worker-1", "phase": "Pending", "role": "worker"},
        ],
    }
)
IB = "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_2:1/RoCE ; OOB net1:10.0.0.2<0>"
MEMLOCK = "h:1:2 [0] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_reg_mr failed with error x"


async def test_diagnose_job_reads_every_pods_whole_log(make_fake, client_for) -> None:
    fake = make_fake(
        [
            rule("describe", "job-a", stdout=DESCRIBE),
            rule("logs", "--pod", "job-a-master-0", lines=["starting", IB]),
            rule("logs", "--pod", "job-a-worker-0", lines=[IB, MEMLOCK]),
            rule("logs", "--pod", "job-a-worker-1", stderr="pod has not started yet\n", exit=1),
        ]
    )
    report = await diagnose_job(client_for(fake, project="p"), "job-a")
    log_calls = sorted(c for c in fake.calls() if "logs" in c)
    assert log_calls == [
        ["training", "pytorch", "logs", "job-a", "-p", "p", "--pod", f"job-a-{pod}"]
        for pod in ("master-0", "worker-0", "worker-1")
    ]  # whole logs, no --follow, no --tail
    assert [(p.pod, p.transport, p.device) for p in report.pods] == [
        ("job-a-master-0", "IB", "mlx5_2:1/RoCE"),
        ("job-a-worker-0", "IB", "mlx5_2:1/RoCE"),
        ("job-a-worker-1", "unknown", ""),
    ]
    assert [(f.code, f.pod, f.line) for f in report.findings] == [
        ("memlock", "job-a-worker-0", 2),
        ("pending", "job-a-worker-1", 0),  # it waits, and its events say no reason
        ("log-unavailable", "job-a-worker-1", 0),
    ]
    assert report.exit_code == 1

    tail = await diagnose_job(client_for(fake), "job-a", pod="job-a-worker-0", tail=50)
    assert [p.pod for p in tail.pods] == ["job-a-worker-0"]
    assert fake.calls()[-1][-4:] == ["--pod", "job-a-worker-0", "--tail", "50"]
    with pytest.raises(RunaiError) as info:
        await diagnose_job(client_for(fake), "job-a", pod="job-a-worker-9")
    assert info.value.kind is ErrorKind.NOT_FOUND and "job-a-master-0" in info.value.hint


async def test_preflight_runs_the_probe_without_a_tty_in_running_pods(
    make_fake, client_for
) -> None:
    probe = "@@pf memlock unlimited\n@@pf shm_kb 33554432\n@@pf python 3.12.1\n@@pf end ok\n"
    fake = make_fake(
        [
            rule("describe", "job-a", stdout=DESCRIBE),
            rule("exec", "--pod", "job-a-master-0", stdout="motd\n" + probe),
            rule("exec", "--pod", "job-a-worker-0", stderr="Error: container not found\n", exit=1),
        ]
    )
    report = await preflight_job(client_for(fake), "job-a")
    execs = sorted(c for c in fake.calls() if "exec" in c)
    assert execs == [
        ["training", "pytorch", "exec", "job-a", "--pod", f"job-a-{pod}", "--", "sh", "-c", SCRIPT]
        for pod in ("master-0", "worker-0")
    ]  # never --tty/--stdin; the Pending pod is not asked
    by_pod = {p.pod: {i.code: status(i) for i in p.items} for p in report.pods}
    assert by_pod["job-a-master-0"]["shm"] == "pass"
    assert by_pod["job-a-master-0"]["python"] == "pass"
    assert by_pod["job-a-worker-0"] == {"probe": "fail"}
    assert by_pod["job-a-worker-1"] == {"pod": "skip"}
    assert report.exit_code == 1


async def test_exec_output_is_time_bounded(make_fake, client_for) -> None:
    fake = make_fake([rule("exec", sleep=60, spawn_child=True)])
    with pytest.raises(RunaiError) as info:
        await client_for(fake).aexec_output("job-a", "job-a-master-0", COMMAND, timeout=1.0)
    # A TIMEOUT, not the fake's output after its own 60 s sleep: the call was cut at its bound.
    assert info.value.kind is ErrorKind.TIMEOUT
