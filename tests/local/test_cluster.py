"""The local cluster with real processes: pods, env, statuses, logs, exec, delete, faults."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from runai_local import state
from tests.local.conftest import (
    RUNAI_LOCAL,
    describe,
    gate_command,
    pid_alive,
    run_local,
    wait_phase,
    wait_until,
)

pytestmark = pytest.mark.slow  # jobs on the local cluster: real process groups

SUBMIT = ["training", "pytorch", "submit"]


def submit(name: str, *flags: str, command: list[str], env: dict | None = None) -> None:
    res = run_local(*SUBMIT, name, *flags, "--command", "--", *command, env=env)
    assert res.code == 0, res.err
    assert res.out.startswith(f"Creating pytorch training {name}...")


def logs(name: str, *flags: str) -> str:
    res = run_local("training", "pytorch", "logs", name, *flags)
    assert res.code == 0, res.err
    return res.out


def test_two_workers_give_three_pods_with_the_ddp_env(tmp_path: Path) -> None:
    env_cmd = (
        "echo RANK=$RANK WORLD_SIZE=$WORLD_SIZE MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT"
        " PET_NNODES=$PET_NNODES PET_NODE_RANK=$PET_NODE_RANK"
        " PET_MASTER=$PET_MASTER_ADDR:$PET_MASTER_PORT JOB=$RUNAI_JOB_NAME"
        " PROJECT=$RUNAI_PROJECT GPUS=$RUNAI_NUM_OF_GPUS OWN=$OWN OUT=$OUT PWD=$(pwd)"
        ' ARG="$0"; command -v python3'
    )
    submit(
        "ddp",
        "--workers",
        "2",
        "-p",
        "team-a",
        "-e",
        "OWN=mine",
        "-e",
        "OUT=/data/runs",
        "--existing-pvc",
        "claimname=claim-a,path=/data",
        "--working-dir",
        "/data/work",
        command=["sh", "-c", env_cmd, "/data/arg"],
    )
    doc = wait_phase("ddp", "Completed", "Failed")
    assert doc["phase"] == "Completed", doc
    assert [p["name"] for p in doc["pods"]] == ["ddp-master-0", "ddp-worker-0", "ddp-worker-1"]
    assert [p["role"] for p in doc["pods"]] == ["master", "worker", "worker"]
    assert doc["requestedPods"] == 3 and doc["projectName"] == "team-a"

    pvc_dir = Path(os.environ["XDG_DATA_HOME"]) / "runai-tui/local/pvc/claim-a"
    port = doc["masterPort"]
    venv_python = Path(sys.executable).parent / "python3"
    for rank, pod in enumerate(doc["pods"]):
        text = logs("ddp", "--pod", pod["name"], "-p", "team-a")
        fields = dict(part.split("=", 1) for part in text.split("\n")[0].split())
        assert fields == {
            "RANK": str(rank),
            "WORLD_SIZE": "3",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "PET_NNODES": "3",
            "PET_NODE_RANK": str(rank),
            "PET_MASTER": f"127.0.0.1:{port}",
            "JOB": "ddp",
            "PROJECT": "team-a",
            "GPUS": "0",
            "OWN": "mine",
            "OUT": f"{pvc_dir}/runs",  # mount path rewritten in env values
            "PWD": f"{pvc_dir}/work",  # ... in the working dir (created as a runtime does)
            "ARG": f"{pvc_dir}/arg",  # ... and in the command
        }
        assert text.split("\n")[1] == str(venv_python)  # the venv's python3 comes first
    # Without --pod: the first pod (the master), as the real CLI.
    assert logs("ddp", "-p", "team-a").startswith("RANK=0 ")


def test_statuses_running_then_completed_and_list_across_processes(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    submit("st", "--workers", "1", command=gate_command(gate, "echo up"))
    doc = wait_phase("st", "Running")
    assert doc["runningPods"] == 2
    assert all(p["phase"] == "Running" and pid_alive(p["pid"]) for p in doc["pods"])
    listed = json.loads(run_local("training", "list", "--json").out)
    assert listed["next"] == ""
    (job,) = listed["workloads"]
    assert {k: job[k] for k in ("name", "phase", "type", "framework", "runningPods")} == {
        "name": "st",
        "phase": "Running",
        "type": "Training",
        "framework": "PyTorch",
        "runningPods": 2,
    }
    gate.touch()
    doc = wait_phase("st", "Completed", "Failed")
    assert doc["phase"] == "Completed"
    assert [p["phase"] for p in doc["pods"]] == ["Succeeded", "Succeeded"]
    assert [e["reason"] for e in doc["events"]][-1] == "Completed"
    table = run_local("training", "list").out
    assert "st" in table and "Completed" in table and "0/2" in table


def test_a_job_that_exits_at_once_completes() -> None:
    submit("quick", "--workers", "1", command=["true"])
    assert wait_phase("quick", "Completed", "Failed")["phase"] == "Completed"


def test_a_failed_pod_fails_the_job_and_stops_the_others(tmp_path: Path) -> None:
    crash = 'if [ "$RANK" = 1 ]; then while [ ! -e "$GATE" ]; do sleep 0.05; done; echo boom; exit 3; fi; sleep 300'
    gate = tmp_path / "gate"
    submit("crash", "--workers", "2", "-e", f"GATE={gate}", command=["sh", "-c", crash])
    running = wait_phase("crash", "Running")
    pids = [p["pid"] for p in running["pods"]]
    gate.touch()
    doc = wait_phase("crash", "Failed", "Completed")
    assert doc["phase"] == "Failed"
    assert "crash-worker-0 exited with code 3" in doc["message"]
    by_name = {p["name"]: p for p in doc["pods"]}
    assert by_name["crash-worker-0"]["exitCode"] == 3
    assert by_name["crash-master-0"]["phase"] == "Failed"
    assert "stopped: pod crash-worker-0" in by_name["crash-master-0"]["message"]
    assert not [pid for pid in pids if pid_alive(pid)]
    assert logs("crash", "--pod", "crash-worker-0").strip() == "boom"


def test_delete_stops_every_process_of_the_job(tmp_path: Path) -> None:
    # Each pod leaves a background child and a grandchild in its own session (escapes the group).
    body = f'sleep 300 & echo $! >> {tmp_path}/pids; setsid sh -c "echo \\$\\$ >> {tmp_path}/pids; sleep 300" & echo $$ >> {tmp_path}/pids; wait'
    submit("del", "--workers", "1", command=["sh", "-c", body])
    wait_phase("del", "Running")
    pid_file = tmp_path / "pids"
    wait_until(lambda: pid_file.exists() and len(pid_file.read_text().split()) >= 6, "6 pids")
    pids = [int(x) for x in (tmp_path / "pids").read_text().split()]
    assert all(pid_alive(pid) for pid in pids)
    jobdir = Path(describe("del")["stateDir"])
    res = run_local("training", "pytorch", "delete", "del")
    assert res.code == 0 and "del" in res.out
    assert [pid for pid in pids if pid_alive(pid)] == []
    assert state.processes_of_job(jobdir) == []
    assert not jobdir.exists()
    res = run_local("training", "pytorch", "describe", "del")
    assert res.code == 1 and "workload 'del' could not be found" in res.err


def test_delete_right_after_submit_leaves_nothing(tmp_path: Path) -> None:
    submit("mid", "--workers", "3", command=["sleep", "300"])
    jobdir = state.job_dir("local", "mid")
    res = run_local("training", "pytorch", "delete", "mid")
    assert res.code == 0, res.err
    assert state.processes_of_job(jobdir) == [] and not jobdir.exists()


def test_killed_supervisor_shows_failed_with_a_reason_and_stops_pods(tmp_path: Path) -> None:
    submit("orphan", "--workers", "1", command=["sleep", "300"])
    doc = wait_phase("orphan", "Running")
    pod_pids = [p["pid"] for p in doc["pods"]]
    status = json.loads((Path(doc["stateDir"]) / "status.json").read_text())
    sup = status["supervisor"]["pid"]
    # Detached: its own session (a closed terminal or a killed TUI does not reach it), and each
    # pod is its own process group.
    assert os.getsid(sup) == sup != os.getsid(0)
    assert all(os.getpgid(pid) == pid for pid in pod_pids)
    os.kill(sup, signal.SIGKILL)
    wait_until(lambda: not pid_alive(status["supervisor"]["pid"]), "supervisor to die")
    doc = describe("orphan")
    assert doc["phase"] == "Failed"
    assert f"supervisor (pid {status['supervisor']['pid']}) is gone" in doc["message"]
    assert doc["events"][-1]["reason"] == "SupervisorLost"
    assert [pid for pid in pod_pids if pid_alive(pid)] == []


def test_a_vanished_pod_process_fails_the_job() -> None:
    submit("vanish", "--workers", "1", command=["sleep", "300"])
    doc = wait_phase("vanish", "Running")
    os.kill(doc["pods"][1]["pid"], signal.SIGKILL)
    doc = wait_phase("vanish", "Failed", "Completed")
    assert doc["phase"] == "Failed" and "killed by SIGKILL" in doc["message"]


def test_logs_tail_and_follow_until_the_pod_ends(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    submit("lg", "--workers", "1", command=gate_command(gate, "echo one; echo two; echo three"))
    wait_phase("lg", "Running")
    wait_until(lambda: logs("lg").count("\n") == 3, "three lines")
    assert logs("lg", "--tail", "2") == "two\nthree\n"
    assert logs("lg", "--pod", "lg-worker-0", "-t", "1") == "three\n"
    follow = subprocess.Popen(
        [*RUNAI_LOCAL, "training", "pytorch", "logs", "lg", "--follow", "--tail", "1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert follow.stdout.readline() == "three\n"  # the tail, then it keeps following
    assert follow.poll() is None
    gate.touch()  # the pods end: follow ends by itself
    rest, _ = follow.communicate(timeout=60)
    assert follow.returncode == 0 and rest == ""
    res = run_local("training", "pytorch", "logs", "lg", "--pod", "lg-worker-7")
    assert res.code == 1 and "pod 'lg-worker-7' could not be found" in res.err


def test_exec_runs_in_the_pod_env_and_working_dir(tmp_path: Path) -> None:
    submit("ex", "--workers", "1", "-e", "MINE=42", "--working-dir", str(tmp_path / "wd"),
           command=["sleep", "300"])  # fmt: skip
    wait_phase("ex", "Running")
    res = run_local(
        "training", "pytorch", "exec", "ex", "--pod", "ex-worker-0", "--",
        "sh", "-c", "echo $RANK $MINE $MASTER_ADDR $(pwd)",
    )  # fmt: skip
    assert res.code == 0, res.err
    assert res.out == f"1 42 127.0.0.1 {tmp_path / 'wd'}\n"
    # Attached to a real terminal (-i -t), the default pod is the master.
    child = pexpect.spawn(
        RUNAI_LOCAL[0], [*RUNAI_LOCAL[1:], "training", "pytorch", "exec", "ex", "-it", "--", "sh"],
        encoding="utf-8", timeout=30,
    )  # fmt: skip
    child.sendline("echo rank=$RANK tty=$(tty | cut -c1-8)")
    child.expect("rank=0 tty=/dev/pts")
    child.sendline("exit")
    child.expect(pexpect.EOF)
    res = run_local("training", "pytorch", "exec", "ex", "--", "no-such-command-xyz")
    assert res.code == 127 and 'exec: "no-such-command-xyz"' in res.err


def test_a_pod_without_gpus_sees_none_unless_the_job_says_otherwise() -> None:
    """As in a Kubernetes pod that requests no GPU: a CPU job on a machine with a GPU (two gloo
    ranks that would otherwise both take it) runs on the CPU; the job's own env still wins."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "0", "RUNAI_LOCAL_GPUS": "1"}
    show = ["sh", "-c", 'echo "[${CUDA_VISIBLE_DEVICES-unset}]"; sleep 300']
    void = ["sh", "-c", 'echo "$NVIDIA_VISIBLE_DEVICES"; sleep 300']
    submit("dev", command=void, env=env)
    submit("cpu", "--workers", "1", command=show, env=env)
    submit("mine", "-e", "CUDA_VISIBLE_DEVICES=3", command=show, env=env)
    wait_until(lambda: logs("cpu") and logs("cpu", "--pod", "cpu-worker-0"), "both pods' lines")
    assert logs("cpu") == logs("cpu", "--pod", "cpu-worker-0") == "[]\n"
    wait_until(lambda: logs("mine") and logs("dev"), "the lines")
    assert logs("mine") == "[3]\n" and logs("dev") == "void\n"


def test_gpus_beyond_the_machine_stay_pending_until_free(tmp_path: Path) -> None:
    env = {**os.environ, "RUNAI_LOCAL_GPUS": "1"}
    gate = tmp_path / "gate"
    gpu = ["--workers", "1", "-g", "1", "--master-gpu-devices-request", "0"]
    submit("first", *gpu, command=gate_command(gate), env=env)
    doc = wait_phase("first", "Running")
    assert doc["allocatedGPUs"] == 1
    assert [p["gpus"] for p in doc["pods"]] == [0, 1]
    submit("second", *gpu, command=["true"], env=env)
    submit("huge", "--workers", "2", "-g", "1", command=["true"], env=env)
    for name, wanted in (("second", "requests 1 GPUs"), ("huge", "requests 3 GPUs")):
        doc = wait_until(
            lambda n=name: (d := describe(n))["events"][-1]["reason"] == "Unschedulable" and d,
            f"{name} unschedulable",
        )
        assert doc["phase"] == "Pending" and wanted in doc["message"]
    gate.touch()  # first completes and frees its GPU: second is scheduled, huge never fits
    assert wait_phase("second", "Completed", "Failed")["phase"] == "Completed"
    assert describe("huge")["phase"] == "Pending"
    assert run_local("training", "pytorch", "delete", "huge").code == 0


def test_suspend_stops_the_pods_and_resume_starts_them_again() -> None:
    submit("sus", "--workers", "1", command=["sleep", "300"])
    pids = [p["pid"] for p in wait_phase("sus", "Running")["pods"]]
    res = run_local("training", "pytorch", "suspend", "sus")
    assert res.code == 0, res.err
    doc = describe("sus")
    assert doc["phase"] == "Stopped" and doc["runningPods"] == 0
    assert [pid for pid in pids if pid_alive(pid)] == []
    res = run_local("training", "pytorch", "exec", "sus", "--", "true")
    assert res.code == 1 and "exec needs a running pod" in res.err
    assert run_local("training", "pytorch", "resume", "sus").code == 0
    doc = wait_phase("sus", "Running")
    assert doc["events"][-1]["reason"] == "Started" and doc["runningPods"] == 2
    res = run_local("training", "pytorch", "resume", "sus")
    assert res.code == 1 and "only a Stopped workload resumes" in res.err


def test_submit_faults_are_one_line_errors(tmp_path: Path) -> None:
    submit("dup", command=["true"])
    cases = [
        (["dup", "--", "true"], "workload 'dup' already exists in project 'local'"),
        (["bad", "--existing-pvc", "claimname=x", "--", "true"], 'invalid --existing-pvc value "claimname=x"'),
        (["bad"], "no command to run"),
        (["Bad_Name", "--", "true"], 'invalid workload name "Bad_Name"'),
        (["bad", "-e", "NOEQUALS", "--", "true"], 'invalid argument "NOEQUALS" for "--environment-variable"'),
    ]  # fmt: skip
    for args, message in cases:
        res = run_local(*SUBMIT, *args)
        assert res.code == 1 and message in res.err, (args, res.err)
        assert res.err.count("\n") == 1 and "Traceback" not in res.err
    # A command that cannot run: accepted (as a cluster would), then the pod fails to start.
    res = run_local(*SUBMIT, "noexec", "--command", "--", str(tmp_path / "missing.sh"))
    assert res.code == 0 and "is not an executable file here" in res.err
    doc = wait_phase("noexec", "Failed", "Completed")
    assert doc["phase"] == "Failed" and doc["events"][-1]["reason"] == "Failed"
    assert any(e["reason"] == "StartError" for e in doc["events"])
    assert "missing.sh" in doc["pods"][0]["message"]


def test_unreadable_state_is_reported_and_the_job_can_still_be_deleted() -> None:
    submit("broken", command=["sleep", "300"])
    doc = wait_phase("broken", "Running")
    status_file = Path(doc["stateDir"]) / "status.json"
    status_file.write_text('{"phase": "Runn')  # truncated
    res = run_local("training", "list", "--json")
    assert res.code == 0 and "status.json is not valid JSON" in res.err
    (job,) = json.loads(res.out)["workloads"]
    assert job["phase"] == "Unknown" and "not valid JSON" in job["message"]
    status_file.write_text("[1, 2]")  # hand-edited into the wrong shape
    assert describe("broken")["phase"] == "Unknown"
    status_file.write_text('{"phase": "Running", "pods": "x"}')  # a field of the wrong type
    assert "field 'pods' is not a list" in describe("broken")["message"]
    spec_file = Path(doc["stateDir"]) / "spec.json"
    spec = json.loads(spec_file.read_text())
    spec["pods"][0]["argv"] = 5
    spec_file.write_text(json.dumps(spec))
    res = run_local("training", "pytorch", "logs", "broken")
    assert res.code == 1 and "field 'pods[0].argv'" in res.err and "Traceback" not in res.err
    pids = [p["pid"] for p in doc["pods"]]
    assert run_local("training", "pytorch", "delete", "broken").code == 0
    assert [pid for pid in pids if pid_alive(pid)] == []


def test_describe_notes_what_has_no_effect_locally() -> None:
    submit(
        "notes", "--large-shm", "--annotation", "k8s.v1.cni.cncf.io/networks=ssa",
        "--extended-resource", "openshift.io/mellanoxnics=1", "--run-as-uid", "2000",
        "-i", "nvcr.io/nvidia/pytorch:26.02-py3", command=["true"],
    )  # fmt: skip
    doc = describe("notes")
    assert "--large-shm has no effect on the local cluster" in doc["notes"]
    assert any(n.startswith("--annotation has no effect") for n in doc["notes"])
    assert any(n.startswith("--extended-resource has no effect") for n in doc["notes"])
    assert any(n.startswith("--run-as-uid 2000 has no effect") for n in doc["notes"])
    assert doc["resources"]["extendedResources"] == {"openshift.io/mellanoxnics": "1"}
    assert doc["spec"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "ssa"}
    table = run_local("training", "pytorch", "describe", "notes").out
    assert "Notes:" in table and "--large-shm has no effect" in table


def test_list_pages_and_projects() -> None:
    for name, project in (("pa", "p1"), ("pb", "p1"), ("pc", "p2")):
        submit(name, "-p", project, command=["true"])
    page = json.loads(run_local("training", "list", "--json", "--page-size", "2").out)
    assert [w["name"] for w in page["workloads"]] == ["pa", "pb"] and page["next"]
    page2 = json.loads(
        run_local(
            "training", "list", "--json", "--page-size", "2", "--next-token", page["next"]
        ).out
    )
    assert [w["name"] for w in page2["workloads"]] == ["pc"] and page2["next"] == ""
    only = json.loads(run_local("training", "pytorch", "list", "--json", "-p", "p2").out)
    assert [w["name"] for w in only["workloads"]] == ["pc"]


@pytest.mark.parametrize("verb", ["describe", "logs", "delete"])
def test_standard_training_verbs_find_no_pytorch_job(verb: str) -> None:
    submit("std", command=["true"])
    res = run_local("training", verb, "std")
    assert res.code == 1 and "could not be found" in res.err


def test_master_command_override_and_no_master() -> None:
    res = run_local(*SUBMIT, "mc", "--workers", "1", "--master-command", "echo 'master says'",
                    "--master-args", "hi there", "--command", "--", "echo", "worker")  # fmt: skip
    assert res.code == 0, res.err
    assert wait_phase("mc", "Completed", "Failed")["phase"] == "Completed"
    assert logs("mc") == "master says hi there\n"
    assert logs("mc", "--pod", "mc-worker-0") == "worker\n"
    show = "echo ${MASTER_ADDR:-none} ${RANK:-none} ${WORLD_SIZE:-none} $RUNAI_JOB_NAME"
    submit("nm", "--no-master", "--workers", "2", command=["sh", "-c", show])
    doc = wait_phase("nm", "Completed", "Failed")
    assert [p["name"] for p in doc["pods"]] == ["nm-worker-0", "nm-worker-1"]
    assert logs("nm") == "none none none nm\n"  # the operator sets no rendezvous env
