"""Operations on local workloads: find, reconcile with real process state, submit, stop, remove.

Every status.json change is a read-modify-write under the job's lock, so the CLI and the
supervisor never lose each other's updates.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runai_local import state
from runai_local.errors import LocalError
from runai_local.state import (
    JobPaths,
    JobSpec,
    JobStatus,
    StateError,
    locked,
    read_json,
    read_status,
    write_json_atomic,
)
from runai_tui.util.duration import DurationError, read_seconds

# How long a freshly submitted job may have no supervisor recorded before it counts as lost.
_START_SLACK_SECONDS = 15.0


class JobError(LocalError):
    """A failed operation on a workload (printed as one `Error:` line, exit 1)."""


@dataclass
class JobView:
    """What list/describe show: spec and status merged, after checking real processes."""

    jobdir: Path
    name: str
    project: str
    spec: JobSpec
    status: JobStatus
    problem: str = ""  # a state file that could not be read

    @property
    def phase(self) -> str:
        return str(self.status.get("phase") or "Unknown")

    def workload(self) -> dict[str, Any]:
        pods = self.status.get("pods") or []
        return {
            "name": self.name,
            "id": self.spec.get("id", ""),
            "type": "Training",
            "framework": "PyTorch",
            "phase": self.phase,
            "projectName": self.project,
            "runningPods": sum(1 for p in pods if p.get("phase") == "Running"),
            "requestedPods": len(self.spec.get("pods") or pods),
            "allocatedGPUs": int(self.status.get("allocatedGPUs") or 0),
            "priority": self.spec.get("priority") or "",
            "preemptible": bool(self.spec.get("preemptible", True)),
            "preemptions": int(self.status.get("preemptions") or 0),
            "createdAt": self.spec.get("createdAt") or self.status.get("createdAt") or "",
            "message": self.problem or str(self.status.get("message") or ""),
        }


def find(name: str, project: str | None) -> Path:
    """The job directory of NAME (in PROJECT, or the only project holding NAME)."""
    if project:
        jobdir = state.job_dir(project, name)
        if jobdir.is_dir():
            return jobdir
        raise JobError(f"workload '{name}' could not be found in project '{project}'")
    matches = [d for d in state.iter_job_dirs() if d.name == name]
    if not matches:
        raise JobError(f"workload '{name}' could not be found in any project")
    if len(matches) > 1:
        projects = ", ".join(d.parent.name for d in matches)
        raise JobError(f"workload '{name}' exists in projects {projects}; choose one with -p")
    return matches[0]


def load(jobdir: Path) -> JobView:
    """Read a job and reconcile it: a dead supervisor turns an active job into Failed."""
    paths = JobPaths(jobdir)
    name, project = jobdir.name, jobdir.parent.name
    try:
        spec = state.read_spec(paths.spec)
    except StateError as exc:
        return JobView(jobdir, name, project, {}, {"phase": "Unknown"}, problem=str(exc))
    try:
        with locked(paths.lock):
            status = state.check_status(read_json(paths.status), paths.status)
            lost = _supervisor_lost(status)
            if lost:
                _mark_lost(status, lost)
                write_json_atomic(paths.status, status)
    except StateError as exc:
        return JobView(jobdir, name, project, spec, {"phase": "Unknown"}, problem=str(exc))
    if lost:
        # Its pods are orphans now; a Failed job keeps no process running.
        state.kill_job_processes(jobdir, float(spec.get("graceSeconds", 5.0)))
    return JobView(jobdir, name, project, spec, status)


def _supervisor_lost(status: JobStatus) -> str:
    phase = status.get("phase")
    if phase not in state.ACTIVE_PHASES or phase == "Deleting":
        return ""
    sup = status.get("supervisor")
    if not sup:
        started = status.get("launchedAt") or 0.0
        if time.time() - float(started) < _START_SLACK_SECONDS:
            return ""
        return "the supervisor of this workload never started"
    if state.process_alive(sup.get("pid"), sup.get("startTicks")):
        return ""
    return f"the supervisor (pid {sup.get('pid')}) is gone; the pods were stopped"


def _mark_lost(status: JobStatus, why: str) -> None:
    for pod in status.get("pods") or []:
        if pod.get("phase") in ("Running", "Pending"):
            gone = pod.get("pid") and not state.process_alive(pod["pid"], pod.get("startTicks"))
            state.close_run(pod, None, "Lost")
            pod["phase"] = "Failed"
            pod["message"] = "process vanished" if gone else f"stopped: {why}"
    status["phase"] = "Failed"
    status["message"] = why
    status["allocatedGPUs"] = 0
    state.add_event(status, "Warning", "SupervisorLost", why)


def all_views(project: str | None) -> list[JobView]:
    return [load(d) for d in state.iter_job_dirs(project)]


# ---- submit / resume -------------------------------------------------------------------------


def initial_status(spec: JobSpec, reason: str, message: str) -> JobStatus:
    status: JobStatus = {
        "phase": "Creating",
        "message": "",
        "supervisor": None,
        "launchedAt": time.time(),
        "allocatedGPUs": 0,
        "masterPort": None,
        "pods": [
            {
                "name": p["name"],
                "role": p["role"],
                "rank": p["rank"],
                "gpus": p["gpus"],
                "phase": "Pending",
                "pid": None,
                "exitCode": None,
                "restartCount": 0,
                "message": "",
            }
            for p in spec["pods"]
        ],
        "events": [],
    }
    state.add_event(status, "Normal", reason, message)
    return status


def create(spec: JobSpec) -> Path:
    """Record a new job and start its supervisor. Refuses a name already used in the project."""
    jobdir = state.job_dir(spec["project"], spec["name"])
    with locked(state.state_root() / "submit.lock"):
        if jobdir.exists():
            raise JobError(
                f"workload '{spec['name']}' already exists in project '{spec['project']}'; "
                f"delete it first or choose another name"
            )
        jobdir.mkdir(parents=True)
        paths = JobPaths(jobdir)
        write_json_atomic(paths.spec, spec)
        write_json_atomic(
            paths.status,
            initial_status(spec, "Submitted", f"created pytorch training {spec['name']}"),
        )
    _start_supervisor(jobdir)
    return jobdir


def _spawn_supervisor(jobdir: Path) -> tuple[int, int | None]:
    """Start a detached supervisor for JOBDIR; returns (pid, start ticks)."""
    paths = JobPaths(jobdir)
    env = dict(os.environ)
    env[state.JOB_DIR_ENV] = str(jobdir)
    with open(paths.supervisor_log, "ab") as log:
        # New session + no inherited pipes: the supervisor outlives the submitter and never
        # holds the caller's stdout open (a client reading our output would hang otherwise).
        proc = subprocess.Popen(
            [sys.executable, "-m", "runai_local.supervisor", str(jobdir)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            cwd="/",
            env=env,
        )
    return proc.pid, state.proc_start_ticks(proc.pid)


def _start_supervisor(jobdir: Path) -> None:
    pid, ticks = _spawn_supervisor(jobdir)
    paths = JobPaths(jobdir)
    with locked(paths.lock):
        status = read_status(paths.status)
        if not status.get("supervisor"):  # it may already have recorded itself
            status["supervisor"] = {"pid": pid, "startTicks": ticks}
            write_json_atomic(paths.status, status)


def resume(view: JobView) -> None:
    if view.phase != "Stopped":
        raise JobError(f"workload '{view.name}' is {view.phase}; only a Stopped workload resumes")
    paths = JobPaths(view.jobdir)
    with locked(paths.lock):
        status = read_status(paths.status)
        fresh = initial_status(view.spec, "Resumed", "workload resumed")
        fresh["phase"] = "Resuming"
        fresh["events"] = (status.get("events") or []) + fresh["events"]
        # New pods, but the figures (report's GPU-hours) count the earlier pods' runs too.
        runs = {p.get("name"): p.get("runs") or [] for p in status.get("pods") or []}
        for pod in fresh["pods"]:
            if runs.get(pod["name"]):
                pod["runs"] = runs[pod["name"]]
        write_json_atomic(paths.status, fresh)
    _start_supervisor(view.jobdir)


# ---- suspend / delete ------------------------------------------------------------------------


def _wait_dead(pid: int | None, ticks: int | None, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while state.process_alive(pid, ticks):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _stop_supervisor(view: JobView, status: JobStatus) -> None:
    sup = status.get("supervisor")
    pid, ticks = (sup.get("pid"), sup.get("startTicks")) if sup else (None, None)
    if pid is not None and state.process_alive(pid, ticks):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
        # The supervisor gives pods the grace period, then KILLs; allow for that plus slack.
        _wait_dead(pid, ticks, float(view.spec.get("graceSeconds", 5.0)) + 10.0)


def suspend(view: JobView) -> None:
    if view.phase not in state.ACTIVE_PHASES or view.phase == "Deleting":
        raise JobError(f"workload '{view.name}' is {view.phase}; it cannot be suspended")
    paths = JobPaths(view.jobdir)
    paths.suspend_request.touch()
    with locked(paths.lock):
        status = read_status(paths.status)
        status["phase"] = "Stopping"
        write_json_atomic(paths.status, status)
    _stop_supervisor(view, status)
    state.kill_job_processes(view.jobdir, float(view.spec.get("graceSeconds", 5.0)))
    with locked(paths.lock):
        status = read_status(paths.status)
        if status.get("phase") != "Stopped":  # the supervisor died before recording it
            status["phase"] = "Stopped"
            status["allocatedGPUs"] = 0
            for pod in status.get("pods") or []:
                if pod.get("phase") in ("Running", "Pending"):
                    state.close_run(pod, None, "Stopped")
                    pod["phase"] = "Failed"
                    pod["message"] = "stopped: workload suspended"
            state.add_event(status, "Normal", "Suspended", "workload suspended")
            write_json_atomic(paths.status, status)
    with contextlib.suppress(FileNotFoundError):
        paths.suspend_request.unlink()


def delete(jobdir: Path) -> None:
    """Stop every process of the job (TERM, KILL after the grace period) and remove it."""
    paths = JobPaths(jobdir)
    paths.deleting.touch()  # a supervisor mid-start checks this before each pod
    grace = 5.0
    with contextlib.suppress(StateError, DurationError):  # a spec's junk: the default grace
        grace = read_seconds(read_json(paths.spec).get("graceSeconds", 5.0))
    status: JobStatus = {}
    with contextlib.suppress(StateError), locked(paths.lock):
        current = state.check_status(read_json(paths.status), paths.status)
        current["phase"] = "Deleting"
        write_json_atomic(paths.status, current)
        status = current
    view = JobView(jobdir, jobdir.name, jobdir.parent.name, {"graceSeconds": grace}, status)
    _stop_supervisor(view, status)
    survivors = state.kill_job_processes(jobdir, grace)
    if survivors:
        raise JobError(
            f"workload '{jobdir.name}': processes {survivors} did not stop; "
            f"kill them and delete again"
        )
    shutil.rmtree(jobdir)
