"""On-disk state of the local cluster: where it lives, atomic JSON files, locks, process checks.

Layout (all under ``$XDG_STATE_HOME/runai-tui/local/``)::

    jobs/<project>/<name>/spec.json     the submitted job, written once by submit (never changed)
    jobs/<project>/<name>/status.json   phase, pods, events; written under ``lock`` only
    jobs/<project>/<name>/lock          flock(2) guard for status.json read-modify-write
    jobs/<project>/<name>/deleting      marker: a delete is in progress, start nothing more
    jobs/<project>/<name>/supervisor.log
    jobs/<project>/<name>/logs/<pod>.log
    scheduler.lock                      serialises GPU allocation between supervisors
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypedDict, cast

from runai_local.errors import LocalError
from runai_tui.util import lock_holder, paths
from runai_tui.util.atomic import atomic_open
from runai_tui.util.duration import DurationError, read_seconds

# Every process of a job carries this variable (pods, exec'd commands, the supervisor), so a
# delete can find and stop the whole job even when its records are lost or a process escaped
# its process group.
JOB_DIR_ENV = "RUNAI_LOCAL_JOB_DIR"
POD_ENV = "RUNAI_LOCAL_POD"
NODE_NAME = "local"  # the local cluster's one node: every pod runs on it

ACTIVE_PHASES = {
    "Creating",
    "Pending",
    "Initializing",
    "Running",
    "Stopping",
    "Resuming",
    "Deleting",
}
TERMINAL_PHASES = {"Completed", "Failed"}


# ---- shapes of spec.json and status.json (keys as on disk; docs/contracts.md) ----------------
# Keys that older state files may lack are optional (total=False): those files still load.


class MountSpec(TypedDict):
    claim: str
    path: str
    local: str
    readonly: bool


class GpuResources(TypedDict):
    perWorker: int
    master: int
    total: int


class RequestLimit(TypedDict):
    request: str | None
    limit: str | None


class Resources(TypedDict, total=False):
    workers: int
    pods: int
    gpu: GpuResources
    cpu: RequestLimit
    memory: RequestLimit
    extendedResources: dict[str, str]
    largeShm: bool | None


class _PodSpecKeys(TypedDict):
    name: str
    role: str  # "master" | "worker"
    rank: int
    gpus: int
    restartPolicy: str
    argv: list[str]
    env: dict[str, str]


class PodSpec(_PodSpecKeys, total=False):
    node: str  # "" when --exclude-node leaves no node: the job waits
    cpuShare: float  # on a slow node: the share of the CPU its pods get


class JobSpec(TypedDict, total=False):
    """spec.json: the submitted job, written once. check_spec guarantees name, project, id,
    createdAt, workingDir, worldSize, graceSeconds, baseEnv, resources.gpu.total and pods; a
    view of an unreadable job carries an empty one."""

    name: str
    project: str
    id: str
    type: str
    framework: str
    createdAt: str
    submitArgv: list[str]
    flags: dict[str, Any]  # the flags given, each value as its flag's kind parses it
    rest: list[str]
    noMaster: bool
    worldSize: int
    image: str
    workingDir: str
    workingDirRequested: str
    mounts: list[MountSpec]
    annotations: dict[str, str]
    labels: dict[str, str]
    resources: Resources
    graceSeconds: float
    backoffLimit: int
    priority: str  # one of jobspec.PRIORITIES
    preemptible: bool
    baseEnv: dict[str, str]
    pods: list[PodSpec]
    notes: list[str]
    shmSize: str


class Event(TypedDict):
    createdAt: str
    type: str  # "Normal" | "Warning"
    reason: str
    message: str


class ProcessRecord(TypedDict):
    pid: int
    startTicks: int | None


class ContainerRun(TypedDict, total=False):
    """One run of a pod's container: from its start to its end (a restart, a preemption, a stop,
    the job's end start another or none). `finishedAt` is missing while it runs."""

    startedAt: str
    finishedAt: str
    exitCode: int | None
    reason: str  # why it ended: "Completed", "Error", "Restarted", "Preempted", "Stopped", ...


class PodStatus(TypedDict, total=False):
    name: str
    role: str
    rank: int
    gpus: int
    phase: str
    pid: int | None
    startTicks: int | None
    exitCode: int | None
    restartCount: int
    message: str
    startedAt: str
    finishedAt: str
    lastFinishedAt: str
    runs: list[ContainerRun]  # every run of its container, oldest first (a resume's too)


class JobStatus(TypedDict, total=False):
    """status.json: phase, pods, events; changed under the job's lock only."""

    phase: str
    message: str
    supervisor: ProcessRecord | None
    launchedAt: float
    allocatedGPUs: int
    masterPort: int | None
    pods: list[PodStatus]
    events: list[Event]
    createdAt: str
    preemptions: int  # times a higher-priority job took this one's slots


class StateError(LocalError):
    """A state file is missing, truncated or hand-edited: one line naming the file."""


def state_root() -> Path:
    return paths.local_state_dir()


def data_root() -> Path:
    return paths.local_data_dir()


def jobs_root() -> Path:
    return state_root() / "jobs"


def job_dir(project: str, name: str) -> Path:
    return jobs_root() / project / name


def now_rfc3339() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_precise() -> str:
    """RFC 3339 with milliseconds: a container run's start and end (GPU time sums them)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def open_run(pod: PodStatus, when: str) -> None:
    """Record the start of a new run of POD's container."""
    pod.setdefault("runs", []).append({"startedAt": when})


def close_run(pod: PodStatus, exit_code: int | None, reason: str) -> None:
    """Record the end of POD's running container run (none running: nothing)."""
    runs = pod.get("runs") or []
    if runs and "finishedAt" not in runs[-1]:
        runs[-1].update({"finishedAt": now_precise(), "exitCode": exit_code, "reason": reason})


def add_event(status: JobStatus, kind: str, reason: str, message: str) -> None:
    """Append an event (as `kubectl describe` lists them) to a job's status."""
    status.setdefault("events", []).append(
        {"createdAt": now_rfc3339(), "type": kind, "reason": reason, "message": message}
    )


def write_json_atomic(path: Path, data: object) -> None:
    """Write JSON to a temp file in the same directory, fsync, rename: readers never see half."""
    with atomic_open(path) as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
        fh.write("\n")


def read_json(path: Path) -> dict[str, object]:
    """Read a JSON object; a missing, truncated or non-object file raises StateError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise StateError(f"state file {path} is missing") from exc
    except OSError as exc:
        raise StateError(f"state file {path} cannot be read: {exc.strerror}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StateError(
            f"state file {path} is not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg}); "
            f"delete the workload to clean it up"
        ) from exc
    if not isinstance(data, dict):
        raise StateError(f"state file {path} holds {type(data).__name__}, expected an object")
    return data


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on PATH (created if needed); released if the holder dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with lock_holder.flocked(str(path)):
        yield


@dataclass(frozen=True)
class JobPaths:
    root: Path

    @property
    def spec(self) -> Path:
        return self.root / "spec.json"

    @property
    def status(self) -> Path:
        return self.root / "status.json"

    @property
    def lock(self) -> Path:
        return self.root / "lock"

    @property
    def deleting(self) -> Path:
        return self.root / "deleting"

    @property
    def suspend_request(self) -> Path:
        return self.root / "suspend-requested"

    @property
    def preempt_request(self) -> Path:
        """Written by a higher-priority job's supervisor: JSON {by, priority}; this job's
        supervisor stops its pods and waits for slots again."""
        return self.root / "preempt-requested"

    @property
    def supervisor_log(self) -> Path:
        return self.root / "supervisor.log"

    def pod_log(self, pod: str, previous: bool = False) -> Path:
        """The log of POD's current container, or (`previous`) of the one before its last
        restart."""
        return self.root / "logs" / f"{pod}{'.previous' if previous else ''}.log"

    def pod_log_times(self, pod: str, previous: bool = False) -> Path:
        """When the log grew: `EPOCH_SECONDS SIZE` lines, for `logs --since`."""
        return self.pod_log(pod, previous).with_suffix(".times")


def iter_job_dirs(project: str | None = None) -> Iterator[Path]:
    """Every job directory, oldest project/name order; skips stray files."""
    root = jobs_root()
    if not root.is_dir():
        return
    projects = [root / project] if project else sorted(p for p in root.iterdir() if p.is_dir())
    for proj in projects:
        if not proj.is_dir():
            continue
        for job in sorted(proj.iterdir()):
            if job.is_dir() and not job.name.startswith("."):
                yield job


# ---- processes -------------------------------------------------------------------------------


# The one reader of a process's start in /proc, and the pid check on it, are the lock helper's
# (runai_tui/util/lock_holder.py, the trainer's run lock's too): supervisor and pod records hold
# {"pid", "startTicks"}, and a reused pid does not count.
proc_start_ticks = lock_holder.start_ticks
process_alive = lock_holder.process_alive


def processes_of_job(jobdir: Path, pod: str | None = None) -> list[int]:
    """Pids whose environment marks them as part of JOBDIR (and POD, if given)."""
    want = f"{JOB_DIR_ENV}={jobdir}".encode()
    want_pod = f"{POD_ENV}={pod}".encode() if pod else None
    me = os.getpid()
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        matches = want in env and (want_pod is None or want_pod in env)
        if matches and proc_start_ticks(int(entry)) is not None:
            found.append(int(entry))
    return found


def signal_pids(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def kill_job_processes(jobdir: Path, grace: float, pod: str | None = None) -> list[int]:
    """TERM every process of the job (or pod), KILL what remains after GRACE s; return survivors."""
    pids = processes_of_job(jobdir, pod)
    if not pids:
        return []
    signal_pids(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        pids = [p for p in pids if proc_start_ticks(p) is not None]
        if not pids:
            return []
        time.sleep(0.05)
    signal_pids(processes_of_job(jobdir, pod), signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        left = processes_of_job(jobdir, pod)
        if not left:
            return []
        signal_pids(left, signal.SIGKILL)
        time.sleep(0.05)
    return processes_of_job(jobdir, pod)


# ---- shape checks (hand-edited files must be reported, not crash a reader) ------------------


def _expect(ok: bool, path: Path, field: str, expected: str) -> None:
    if not ok:
        raise StateError(
            f"state file {path}: field '{field}' is not {expected}; delete the workload"
        )


def _expect_list(value: object, path: Path, field: str, expected: str, nonempty: bool) -> list[Any]:
    _expect(isinstance(value, list) and (bool(value) or not nonempty), path, field, expected)
    return cast("list[Any]", value)


def _is_seconds(value: object) -> bool:
    """A number of seconds as a spec holds it: finite, 0 or more (never a string)."""
    if isinstance(value, str):
        return False
    try:
        read_seconds(value)
    except DurationError:
        return False
    return True


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_spec(spec: Mapping[str, object], path: Path) -> JobSpec:
    """SPEC as read from PATH, its shape checked (StateError naming the field otherwise)."""
    for key in ("name", "project", "id", "createdAt", "workingDir"):
        _expect(isinstance(spec.get(key), str), path, key, "a string")
    _expect(_is_int(spec.get("worldSize")), path, "worldSize", "an integer")
    _expect(_is_seconds(spec.get("graceSeconds")), path, "graceSeconds", "seconds, 0 or more")
    _expect(isinstance(spec.get("baseEnv"), dict), path, "baseEnv", "a mapping")
    resources = spec.get("resources")
    gpu = resources.get("gpu") if isinstance(resources, dict) else None
    _expect(
        isinstance(gpu, dict) and _is_int(gpu.get("total")),
        path,
        "resources.gpu.total",
        "an integer",
    )
    pods = _expect_list(spec.get("pods"), path, "pods", "a non-empty list", nonempty=True)
    for i, pod in enumerate(pods):
        where = f"pods[{i}]"
        _expect(isinstance(pod, dict), path, where, "a mapping")
        _expect(isinstance(pod.get("name"), str), path, f"{where}.name", "a string")
        _expect(_is_int(pod.get("rank")) and _is_int(pod.get("gpus")), path, where, "ranked")
        argv = pod.get("argv")
        _expect(
            isinstance(argv, list) and bool(argv) and all(isinstance(a, str) for a in argv),
            path,
            f"{where}.argv",
            "a non-empty list of strings",
        )
        env = pod.get("env")
        _expect(
            isinstance(env, dict) and all(isinstance(v, str) for v in env.values()),
            path,
            f"{where}.env",
            "a mapping of strings",
        )
    return cast(JobSpec, spec)


def check_status(status: Mapping[str, object], path: Path) -> JobStatus:
    """STATUS as read from PATH, its shape checked (StateError naming the field otherwise)."""
    _expect(isinstance(status.get("phase"), str), path, "phase", "a string")
    pods = _expect_list(status.get("pods"), path, "pods", "a list", nonempty=False)
    for i, pod in enumerate(pods):
        _expect(
            isinstance(pod, dict) and isinstance(pod.get("name"), str), path, f"pods[{i}]", "a pod"
        )
        pid = pod.get("pid")
        _expect(pid is None or _is_int(pid), path, f"pods[{i}].pid", "an integer")
    events = status.get("events", [])
    _expect(
        isinstance(events, list) and all(isinstance(e, dict) for e in events),
        path,
        "events",
        "a list of events",
    )
    sup = status.get("supervisor")
    _expect(
        sup is None or (isinstance(sup, dict) and _is_int(sup.get("pid"))),
        path,
        "supervisor",
        "a process",
    )
    port = status.get("masterPort")
    _expect(port is None or _is_int(port), path, "masterPort", "an integer")
    gpus = status.get("allocatedGPUs")
    _expect(gpus is None or _is_int(gpus), path, "allocatedGPUs", "an integer")
    return cast(JobStatus, status)


def read_spec(path: Path) -> JobSpec:
    """spec.json, its shape checked."""
    return check_spec(read_json(path), path)


def read_status(path: Path) -> JobStatus:
    """status.json, unchecked beyond being an object (writers that only update keys use it)."""
    return cast(JobStatus, read_json(path))


def running_jobs(exclude: Path) -> Iterator[tuple[Path, JobSpec, JobStatus]]:
    """Other jobs whose supervisor is alive and past scheduling: (dir, spec, status)."""
    for jobdir in iter_job_dirs():
        if jobdir == exclude:
            continue
        try:
            st = read_status(JobPaths(jobdir).status)
            spec = read_spec(JobPaths(jobdir).spec)
        except StateError:
            continue
        sup = st.get("supervisor")
        if (
            st.get("phase") in ("Initializing", "Running")
            and sup
            and process_alive(sup.get("pid"), sup.get("startTicks"))
        ):
            yield jobdir, spec, st
