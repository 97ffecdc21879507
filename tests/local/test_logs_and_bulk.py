"""`runai-tui logs` across pods and restarts, and `delete`/`suspend`/`resume` on many jobs, on real
local-cluster jobs (each `runai-tui` call is a new process, as a user runs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runai_local import state
from tests.local.conftest import describe, gate_command, run_local, wait_phase, wait_until
from tests.local.test_through_runai_tui import RUNAI_TUI, tui

pytestmark = pytest.mark.slow  # jobs on the local cluster: real process groups

FAIL_ONCE = (
    'echo "start $POD_NAME rank $RANK"; '
    'if [ ! -e "$MARKS/$POD_NAME" ]; then touch "$MARKS/$POD_NAME"; echo "failing once"; exit 3; fi; '
    "echo ok"
)


def submit(name: str, *flags: str, command: list[str], env: dict[str, str] | None = None) -> None:
    res = run_local(
        "training", "pytorch", "submit", name, *flags, "--command", "--", *command, env=env
    )
    assert res.code == 0, res.err


def test_previous_holds_the_container_before_the_restart(tmp_path: Path) -> None:
    submit(
        "crashy",
        "--workers", "1",
        "--restart-policy", "OnFailure",
        "--backoff-limit", "4",
        "-e", f"MARKS={tmp_path}",
        command=["sh", "-c", FAIL_ONCE],
    )  # fmt: skip
    wait_phase("crashy", "Completed")
    pods = describe("crashy")["pods"]
    assert [p["restartCount"] for p in pods] == [1, 1]
    assert tui("logs", "crashy").stdout == "start crashy-master-0 rank 0\nok\n"
    res = tui("logs", "crashy", "--previous")
    assert res.returncode == 0 and res.stdout == "start crashy-master-0 rank 0\nfailing once\n"
    res = tui("logs", "crashy", "--rank", "1", "--previous")
    assert res.stdout == "start crashy-worker-0 rank 1\nfailing once\n"
    res = tui("logs", "crashy", "--all-pods", "--previous", "--tail", "1")
    assert res.stdout == "[crashy-master-0] failing once\n[crashy-worker-0] failing once\n"
    # Bad input: one line and an exit code each.
    for args, code, words in [
        (["--rank", "2"], 2, "rank 2 is out of range"),
        (["--since", "soon"], 2, "--since 'soon' is not a duration"),
        (["--rank", "1", "--pod", "crashy-worker-0"], 2, "not allowed with"),
    ]:
        res = tui("logs", "crashy", *args)
        errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
        assert res.returncode == code and len(errors) == 1 and words in errors[0], res.stderr
    res = tui("logs", "no-such-job", "--rank", "0")
    assert res.returncode == 1 and "could not be found" in res.stderr


def test_a_pod_that_never_restarted_has_no_previous_container() -> None:
    submit("steady", "--workers", "0", command=["echo", "once"])
    wait_phase("steady", "Completed")
    res = tui("logs", "steady", "--previous")
    assert res.returncode == 1 and "previous terminated container" in res.stderr


def test_since_leaves_out_older_lines(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    submit(
        "timed",
        "--workers", "0",
        command=["sh", "-c", f'echo early; while [ ! -e "{gate}" ]; do sleep 0.05; done; echo late; sleep 60'],
    )  # fmt: skip
    wait_until(lambda: tui("logs", "timed").stdout == "early\n", "the early line")
    # The early line ages out of a five-second window; the late line written after it is in
    # that window alone (however slowly the command starts, up to five seconds); an hour's
    # window holds both, in order.
    wait_until(lambda: tui("logs", "timed", "--since", "5s").stdout == "", "the early line to age")
    gate.touch()
    wait_until(lambda: tui("logs", "timed").stdout == "early\nlate\n", "the late line")
    assert tui("logs", "timed", "--since", "5s").stdout == "late\n"
    assert tui("logs", "timed", "--since", "1h").stdout == "early\nlate\n"


def _follow(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    return subprocess.Popen(
        [*RUNAI_TUI, "logs", *args, "-f"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_follow_waits_for_a_pending_pod_then_streams(tmp_path: Path) -> None:
    one_gpu = {**os.environ, "RUNAI_LOCAL_GPUS": "1"}
    gate = tmp_path / "gate"
    submit("hog", "--workers", "0", "-g", "1", command=gate_command(gate), env=one_gpu)
    wait_phase("hog", "Running")
    submit("queued", "--workers", "0", "-g", "1", command=["echo", "finally"], env=one_gpu)
    wait_phase("queued", "Pending")
    proc = _follow("queued")
    try:
        assert proc.stderr is not None
        said = proc.stderr.readline()
        assert "queued" in said and "Pending" in said and "waiting for it to start" in said
        gate.touch()  # the GPU frees up: the queued job starts, prints and ends
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out == "finally\n" and "waiting" not in err  # said once only


def test_all_pods_follow_merges_lines_as_they_arrive(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    submit(
        "duo",
        "--workers", "1",
        command=["sh", "-c", f'echo "hi from $RANK"; while [ ! -e "{gate}" ]; do sleep 0.05; done; echo "bye $RANK"'],
    )  # fmt: skip
    wait_phase("duo", "Running")
    proc = _follow("duo", "--all-pods")
    try:
        assert proc.stdout is not None
        # Both pods speak while both still run: the streams are read together.
        first = {proc.stdout.readline(), proc.stdout.readline()}
        assert first == {"[duo-master-0] hi from 0\n", "[duo-worker-0] hi from 1\n"}
        gate.touch()
        rest, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert sorted(rest.splitlines()) == ["[duo-master-0] bye 0", "[duo-worker-0] bye 1"]


def _phases() -> dict[str, str]:
    res = tui("list", "--json")
    assert res.returncode == 0, res.stderr
    return {job["name"]: job["status"] for job in json.loads(res.stdout)}


def test_delete_by_selector_reports_each_job_and_keeps_the_rest(tmp_path: Path) -> None:
    for name in ("sweep-a", "sweep-b"):
        submit(name, "--workers", "0", command=["true"])
    submit("sweep-live", "--workers", "0", command=gate_command(tmp_path / "gate"))
    submit("keep", "--workers", "0", command=["true"])
    for name in ("sweep-a", "sweep-b", "keep"):
        wait_phase(name, "Completed")
    res = tui("delete", "--selector", "sweep-*", "--status", "Completed", "--yes")
    assert res.returncode == 0, res.stderr
    assert sorted(_phases()) == ["keep", "sweep-live"]
    # Nothing older than a week: a note, exit 0, nothing touched.
    res = tui("delete", "--selector", "*", "--older-than", "7d", "--yes")
    assert res.returncode == 0 and "no job matches" in res.stderr
    assert sorted(_phases()) == ["keep", "sweep-live"]
    # An unknown name fails alone; the other is still deleted; exit 1.
    res = tui("delete", "ghost", "keep", "--yes")
    assert res.returncode == 1
    assert "ghost" in res.stderr and "failed: ghost" in res.stderr
    assert sorted(_phases()) == ["sweep-live"]
    res = tui("delete", "--older-than", "soon", "--yes")
    assert res.returncode == 2 and "not a duration" in res.stderr
    res = tui("delete", "a", "--selector", "b*", "--yes")
    assert res.returncode == 2 and "not both" in res.stderr


def test_suspend_and_resume_many_jobs(tmp_path: Path) -> None:
    for name in ("run-1", "run-2"):
        submit(name, "--workers", "0", command=gate_command(tmp_path / name))
    for name in ("run-1", "run-2"):
        wait_phase(name, "Running")
    res = tui("suspend", "run-1", "run-2")
    assert res.returncode == 0, res.stderr
    assert {name: describe(name)["phase"] for name in ("run-1", "run-2")} == {
        "run-1": "Stopped",
        "run-2": "Stopped",
    }
    res = tui("resume", "--selector", "run-*", "--status", "Stopped")
    assert res.returncode == 0, res.stderr
    for name in ("run-1", "run-2"):
        wait_phase(name, "Running")
    for jobdir in state.iter_job_dirs():
        state.kill_job_processes(jobdir, 1.0)


def test_restarts_stop_at_the_backoff_limit() -> None:
    submit(
        "doomed",
        "--workers", "0",
        "--restart-policy", "OnFailure",
        "--backoff-limit", "1",
        command=["sh", "-c", "echo attempt; exit 7"],
    )  # fmt: skip
    doc = wait_phase("doomed", "Failed")
    [pod] = doc["pods"]
    assert pod["restartCount"] == 1 and pod["exitCode"] == 7
    backoffs = [e for e in doc["events"] if e["reason"] == "BackOff"]
    assert len(backoffs) == 1 and "exited with code 7" in backoffs[0]["message"]
    assert tui("logs", "doomed", "--previous").stdout == "attempt\n"
    assert tui("logs", "doomed").stdout == "attempt\n"
