"""The detached per-job supervisor: schedules GPUs, starts the pods, watches them, stops them.

One supervisor process runs one start of a job (submit or resume) and exits when the job is
Completed, Failed or Stopped. It is the only writer of status.json while it lives (others write
only after it is gone; every write holds the job's lock). Run as
``python -m runai_local.supervisor JOBDIR``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

from runai_local import state
from runai_local.config import ConfigError, LocalConfig, load_config
from runai_local.jobspec import DEFAULT_PRIORITY, pod_environment, priority_rank
from runai_local.state import (
    NODE_NAME,
    JobPaths,
    JobSpec,
    JobStatus,
    PodSpec,
    PodStatus,
    add_event,
    locked,
    read_status,
    write_json_atomic,
)
from runai_local.throttle import Throttle

POLL_SECONDS = 0.1
# CrashLoopBackOff: the kubelet waits 10 s, doubling to 5 min; the local cluster is quicker.
RESTART_BACKOFF_SECONDS = 1.0
RESTART_BACKOFF_MAX_SECONDS = 30.0
# The waiting reasons a preemption can cure: slots (GPUs, pods) that other jobs hold.
_CAPACITY = (
    "0/1 nodes are available: 1 Insufficient nvidia.com/gpu",
    "0/1 nodes are available: 1 Too many pods",
)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]  # (host, port) for AF_INET
        return port


def _exit_description(code: int) -> tuple[int, str]:
    """Popen returncode -> (container-style exit code, message)."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return 128 - code, f"killed by {name}"
    return code, "exited with code 0" if code == 0 else f"exited with code {code}"


class Supervisor:
    def __init__(self, jobdir: Path) -> None:
        self.jobdir = jobdir
        self.paths = JobPaths(jobdir)
        self.spec = state.read_spec(self.paths.spec)
        self.grace = float(self.spec.get("graceSeconds", 5.0))
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.stop_requested = False
        self.port = 0
        self.restarts = 0  # restarts of any pod of this start, against the backoff limit
        self.pod_restarts: dict[str, int] = {}
        self.restart_at: dict[str, float] = {}  # pods in back-off: when they start again
        self.preempted_by = ""  # the job that last took this one's slots
        self.preempted_dir = ""  # and its job directory
        self.preempted_note = ""  # what its message says while it waits for them again
        self.log_sizes: dict[str, int] = {}
        # A slow node's pods (slow_nodes in local.yaml) run for their CPU share only.
        shares = {p["name"]: p["cpuShare"] for p in self.spec["pods"] if p.get("cpuShare")}
        self.throttle = Throttle(self.jobdir, shares)

    # -- status --------------------------------------------------------------------------------
    def update(self, change: Callable[[JobStatus], None]) -> JobStatus:
        with locked(self.paths.lock):
            status = read_status(self.paths.status)
            change(status)
            write_json_atomic(self.paths.status, status)
            return status

    def _pod(self, status: JobStatus, name: str) -> PodStatus:
        return next(p for p in status["pods"] if p["name"] == name)

    def _should_stop(self) -> bool:
        return self.stop_requested or self.paths.deleting.exists()

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stop_requested = True

    # -- phases --------------------------------------------------------------------------------
    def run(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        me, ticks = os.getpid(), state.proc_start_ticks(os.getpid())

        def begin(st: JobStatus) -> None:
            st["supervisor"] = {"pid": me, "startTicks": ticks}
            st["phase"] = "Pending"
            st["message"] = ""

        self.update(begin)
        fresh = True
        while True:
            if not self._schedule():
                self._finish_stopped()
                return
            self._start_pods(keep_previous=not fresh)
            self.throttle.start()
            if not self._watch():
                return
            self._preempted()  # back to waiting for slots; the pods start again after
            fresh = False

    def _schedule(self) -> bool:
        """Wait until the job's PVC directories exist and this machine has the GPUs and pod
        slots it asks for; False if stopped meanwhile. While it waits, each new reason is one
        Unschedulable event, worded as the Kubernetes scheduler words it."""
        need = int(self.spec["resources"]["gpu"]["total"])
        pods = len(self.spec["pods"])
        said = ""
        while not self._should_stop():
            try:
                config = load_config()
            except ConfigError:
                config = LocalConfig()
            with locked(state.state_root() / "scheduler.lock"):
                used, pods_used = _in_use(exclude=self.jobdir)
                short = need - (config.gpus - used)
                text = self._unschedulable(config, short, pods + pods_used)
                if text and text.startswith(_CAPACITY):
                    text += self._preempt_for(config, short, pods + pods_used)
                text = text or self._yield_to_preemptor()
                if not text:

                    def scheduled(st: JobStatus) -> None:
                        st["phase"] = "Initializing"
                        st["allocatedGPUs"] = need
                        st["message"] = ""
                        self.preempted_note = ""
                        add_event(
                            st, "Normal", "Scheduled", f"assigned to node local ({need} GPUs)"
                        )

                    self.update(scheduled)
                    return True
            if text != said:
                said = text

                def unschedulable(st: JobStatus, text: str = text) -> None:
                    # A preempted job keeps saying so while it waits
                    st["message"] = (
                        f"{self.preempted_note}; {text}" if self.preempted_note else text
                    )
                    add_event(st, "Warning", "Unschedulable", text)

                self.update(unschedulable)
            self._sleep(1.0)
        return False

    def _unschedulable(self, config: LocalConfig, short: int, pods_wanted: int) -> str:
        """Why the job cannot start now ("" if it can): `short` GPUs missing, `pods_wanted` pods
        running if it started."""
        for mount in self.spec.get("mounts") or []:
            if not Path(mount["local"]).is_dir():
                return (
                    f"0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
                    f"PVC {mount['claim']}: its directory {mount['local']} is missing "
                    f"(pvcs in local.yaml); the workload starts once it exists."
                )
        excluded = (self.spec.get("flags") or {}).get("exclude-node") or []
        unplaced = [p for p in self.spec["pods"] if p.get("node", NODE_NAME) == ""]
        if unplaced or NODE_NAME in excluded and "node" not in self.spec["pods"][0]:
            nodes = config.node_names
            return (
                f"0/{len(nodes)} nodes are available: {len(nodes)} node(s) didn't match Pod's "
                f"node affinity/selector. --exclude-node {' '.join(excluded)} excludes every "
                f"node of the local cluster ({', '.join(nodes)}); the workload never starts here."
            )
        need = int(self.spec["resources"]["gpu"]["total"])
        if short > 0:
            return (
                f"0/1 nodes are available: 1 Insufficient nvidia.com/gpu. The workload "
                f"requests {need} GPUs; this machine has {config.gpus} ({max(need - short, 0)} free). "
                f"Set RUNAI_LOCAL_GPUS to emulate more."
            )
        if config.max_pods and pods_wanted > config.max_pods:
            pods = len(self.spec["pods"])
            return (
                f"0/1 nodes are available: 1 Too many pods. The workload needs {pods} pods; "
                f"this machine runs at most {config.max_pods} (max_pods in local.yaml), "
                f"{max(config.max_pods - pods_wanted + pods, 0)} free; it starts when "
                f"others end."
            )
        return ""

    def _preempt_for(self, config: LocalConfig, short: int, pods_wanted: int) -> str:
        """Ask lower-priority, preemptible running jobs to give up their slots when that frees
        enough (as the Run:ai scheduler preempts); what was asked, for the waiting message."""
        mine = priority_rank(self.spec)
        victims: list[tuple[Path, JobSpec, JobStatus]] = []
        for jobdir, spec, st in state.running_jobs(exclude=self.jobdir):
            if spec.get("preemptible", True) and priority_rank(spec) < mine:
                victims.append((jobdir, spec, st))
        victims.sort(key=lambda v: (priority_rank(v[1]), v[1].get("createdAt", "")))
        chosen, pods_over = [], pods_wanted - config.max_pods if config.max_pods else 0
        for jobdir, spec, st in victims:
            if short <= 0 and pods_over <= 0:
                break
            chosen.append((jobdir, spec))
            short -= int(st.get("allocatedGPUs") or 0)
            pods_over -= len(st.get("pods") or [])
        if not chosen or short > 0 or pods_over > 0:
            return ""
        names = []
        for jobdir, spec in chosen:
            request = JobPaths(jobdir).preempt_request
            names.append(f"{spec['name']} ({spec.get('priority') or DEFAULT_PRIORITY})")
            if request.exists():
                continue
            by = {"by": self.spec["name"], "priority": self.spec.get("priority")}
            by["dir"] = str(self.jobdir)  # its project may be another
            write_json_atomic(request, by)

            def preempting(st: JobStatus, victim: str = names[-1]) -> None:
                add_event(st, "Normal", "Reserving", f"preempting workload {victim} for its slots")

            self.update(preempting)
        return f" Preempting lower-priority workload(s) {', '.join(names)}."

    def _yield_to_preemptor(self) -> str:
        """A job preempted by one that has not started yet waits for it: the slots are its."""
        by = self.preempted_by
        if not by:
            return ""
        try:
            st = read_status(JobPaths(Path(self.preempted_dir or self.jobdir.parent / by)).status)
        except state.StateError:
            return ""
        if st.get("phase") in ("Creating", "Pending"):
            return f"preempted by workload {by}; it starts first, then this one when slots free up"
        return ""

    def _preempted(self) -> None:
        """A higher-priority job asked for this job's slots: its pods get TERM and the grace
        period (the trainer saves a checkpoint), then the job waits Pending, as on Run:ai."""
        try:
            request = state.read_json(self.paths.preempt_request)
        except state.StateError:
            request = {}
        by, priority = str(request.get("by") or "?"), str(request.get("priority") or "?")
        self.preempted_by, self.preempted_dir = by, str(request.get("dir") or "")
        self.throttle.stop()
        self._stop_pods(f"preempted by workload {by}", "Preempted")
        shares = {p["name"]: p["cpuShare"] for p in self.spec["pods"] if p.get("cpuShare")}
        self.throttle = Throttle(self.jobdir, shares)  # a fresh one for the next start
        for pod in self.spec["pods"]:  # the preempted container is the previous one now
            self._rotate_log(pod["name"])

        why = self.preempted_note = (
            f"preempted by higher-priority workload {by} (priority {priority})"
        )

        def waiting(st: JobStatus) -> None:
            st.update({"phase": "Pending", "allocatedGPUs": 0, "masterPort": None})
            st["message"] = f"{why}; it starts again when slots free up"
            st["preemptions"] = int(st.get("preemptions") or 0) + 1
            for entry in st["pods"]:
                entry.update({"phase": "Pending", "pid": None, "message": why})
            add_event(st, "Warning", "Preempted", f"workload {why}; waiting for slots")

        self.update(waiting)
        with contextlib.suppress(FileNotFoundError):
            self.paths.preempt_request.unlink()

    def _rotate_log(self, name: str) -> None:
        """The pod's current log becomes its previous one (`logs --previous`)."""
        for current, previous in (
            (self.paths.pod_log(name), self.paths.pod_log(name, previous=True)),
            (self.paths.pod_log_times(name), self.paths.pod_log_times(name, previous=True)),
        ):
            with contextlib.suppress(FileNotFoundError):
                os.replace(current, previous)

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not self._should_stop():
            time.sleep(POLL_SECONDS)

    def _launch(self, pod: PodSpec) -> subprocess.Popen[bytes] | str:
        """Start POD's container, its output going to a fresh log; the process or why not."""
        env = pod_environment(self.spec, pod, self.port, self.jobdir)
        workdir = Path(self.spec["workingDir"])
        log_path = self.paths.pod_log(pod["name"])
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_sizes[pod["name"]] = -1
        try:
            workdir.mkdir(parents=True, exist_ok=True)  # as a container runtime does
            argv = list(pod["argv"])
            if self.spec.get("shmSize"):  # the pod's own small /dev/shm (shm.py)
                argv = [sys.executable, "-m", "runai_local.shm", self.spec["shmSize"], "--", *argv]  # fmt: skip
            with open(log_path, "wb") as log:
                return subprocess.Popen(
                    argv,
                    cwd=workdir,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # one process group per pod
                    close_fds=True,
                )
        except OSError as exc:
            error = (
                f'failed to start container: exec: "{pod["argv"][0]}": '
                f"{exc.strerror or exc} (working dir {workdir})"
            )
        with open(log_path, "ab") as log:
            log.write((error + "\n").encode())
        return error

    def _start_pods(self, keep_previous: bool = False) -> None:
        self.port = _free_port()
        self.update(lambda st: st.update({"masterPort": self.port}))
        for pod in self.spec["pods"]:
            if self._should_stop():
                return
            # A new start (submit or resume) makes new pods: no previous container yet. After
            # a preemption the preempted container stays the previous one.
            stale = [self.paths.pod_log_times(pod["name"])]
            if not keep_previous:
                stale += [
                    self.paths.pod_log(pod["name"], previous=True),
                    self.paths.pod_log_times(pod["name"], previous=True),
                ]
            for path in stale:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            if not self._start_pod(pod):
                return

        def running(st: JobStatus) -> None:
            st["phase"] = "Running"

        self.update(running)

    def _start_pod(self, pod: PodSpec) -> bool:
        """Start one pod (again, after a restart); False when it could not start (job failed)."""
        proc = self._launch(pod)
        if isinstance(proc, str):

            def failed(st: JobStatus, name: str = pod["name"], error: str = proc) -> None:
                entry = self._pod(st, name)
                entry.update({"phase": "Failed", "exitCode": 128, "message": error})
                entry["finishedAt"] = state.now_rfc3339()
                add_event(st, "Warning", "StartError", f"pod {name}: {error}")

            self.update(failed)
            self._fail(f"pod {pod['name']} could not start")
            return False
        self.procs[pod["name"]] = proc

        def started(st: JobStatus, name: str = pod["name"], proc=proc) -> None:
            entry = self._pod(st, name)
            restarts = entry.get("restartCount") or 0
            state.close_run(entry, None, "Unknown")  # a run left open: its end was not seen
            when = state.now_precise()
            entry.update(
                {
                    "phase": "Running",
                    "pid": proc.pid,
                    "startTicks": state.proc_start_ticks(proc.pid),
                    "startedAt": when[:-5] + "Z",  # this run's start, as Kubernetes shows it
                    "message": "",
                }
            )
            state.open_run(entry, when)
            entry.pop("finishedAt", None)  # a run again: its end is to come
            again = f" (restart {restarts})" if restarts else ""
            add_event(st, "Normal", "Started", f"started pod {name} (pid {proc.pid}){again}")

        self.update(started)
        return True

    # -- restarts ------------------------------------------------------------------------------
    def _restarts_left(self, pod: PodSpec, exit_code: int) -> bool:
        """Kubernetes' policies, and Kubeflow's ExitCode: 1-127 permanent, 128-255 retryable."""
        policy = pod.get("restartPolicy") or "Never"
        wanted = (
            policy == "Always"
            or (policy == "OnFailure" and exit_code != 0)
            or (policy == "ExitCode" and exit_code >= 128)
        )
        return wanted and self.restarts < int(self.spec.get("backoffLimit", 0))

    def _schedule_restart(self, name: str, exit_code: int, text: str) -> None:
        """Keep the ended container's log as the previous one, and start the pod again after a
        back-off that doubles with every restart of this pod (as the kubelet's CrashLoopBackOff)."""
        self.restarts += 1
        for current, previous in (
            (self.paths.pod_log(name), self.paths.pod_log(name, previous=True)),
            (self.paths.pod_log_times(name), self.paths.pod_log_times(name, previous=True)),
        ):
            with contextlib.suppress(FileNotFoundError):
                os.replace(current, previous)
        count = self.pod_restarts.get(name, 0) + 1
        self.pod_restarts[name] = count
        delay = min(RESTART_BACKOFF_SECONDS * 2 ** (count - 1), RESTART_BACKOFF_MAX_SECONDS)
        self.restart_at[name] = time.monotonic() + delay
        limit = int(self.spec.get("backoffLimit", 0))

        def backoff(st: JobStatus) -> None:
            entry = self._pod(st, name)
            state.close_run(entry, exit_code, "Restarted")
            entry.update(
                {
                    "phase": "Running",
                    "pid": None,
                    "exitCode": exit_code,
                    "restartCount": count,
                    "message": f"CrashLoopBackOff: container {text}; restarting in {delay:g} s",
                    "lastFinishedAt": state.now_rfc3339(),
                }
            )
            add_event(
                st,
                "Warning",
                "BackOff",
                f"pod {name} {text}; restarting it in {delay:g} s "
                f"(restart {self.restarts} of the backoff limit {limit})",
            )

        self.update(backoff)

    def _due_restarts(self) -> bool:
        """Start the pods whose back-off is over; False when one could not start."""
        now = time.monotonic()
        for name, when in list(self.restart_at.items()):
            if when > now:
                continue
            del self.restart_at[name]
            pod = next(p for p in self.spec["pods"] if p["name"] == name)
            if not self._start_pod(pod):
                return False
        return True

    def _record_log_growth(self, names: Iterable[str]) -> None:
        """Note when each pod's log grew (for `logs --since`), to within a poll."""
        for name in names:
            try:
                size = self.paths.pod_log(name).stat().st_size
            except FileNotFoundError:
                continue
            if size == self.log_sizes.get(name):
                continue
            self.log_sizes[name] = size
            with open(self.paths.pod_log_times(name), "a", encoding="ascii") as times:
                times.write(f"{time.time():.3f} {size}\n")

    def _watch(self) -> bool:
        """Follow the pods until the job ends (False) or is preempted (True)."""
        if self._finished:
            return False
        while True:
            if self._should_stop():
                self._finish_stopped()
                return False
            if self.paths.preempt_request.exists():
                return True
            self._record_log_growth(self.procs)
            for name, proc in list(self.procs.items()):
                code = proc.poll()
                if code is None:
                    continue
                del self.procs[name]
                exit_code, text = _exit_description(code)
                # A pod ends with its main process, as a container does: KILL what it left.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                state.kill_job_processes(self.jobdir, 0.0, pod=name)
                self._record_log_growth([name])  # one last look at its log
                pod = next(p for p in self.spec["pods"] if p["name"] == name)
                if self._restarts_left(pod, exit_code):
                    self._schedule_restart(name, exit_code, text)
                    continue

                def ended(st: JobStatus, name=name, exit_code=exit_code, text=text) -> None:
                    entry = self._pod(st, name)
                    state.close_run(entry, exit_code, "Completed" if exit_code == 0 else "Error")
                    entry.update(
                        {
                            "phase": "Succeeded" if exit_code == 0 else "Failed",
                            "exitCode": exit_code,
                            "message": text,
                            "finishedAt": state.now_rfc3339(),
                        }
                    )
                    if exit_code != 0:
                        add_event(st, "Warning", "PodFailed", f"pod {name} {text}")

                self.update(ended)
                if exit_code != 0:
                    self._fail(f"pod {name} {text}")
                    return False
            if not self._due_restarts():
                return False
            if not self.procs and not self.restart_at:
                self._complete()
                return False
            time.sleep(POLL_SECONDS)

    _finished = False

    def _stop_pods(self, reason: str, why: str = "Stopped") -> None:
        """TERM every running pod's group, KILL after the grace period, then sweep the job."""
        self.throttle.stop()  # a stopped process would hold its TERM until the KILL
        for proc in self.procs.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline and any(p.poll() is None for p in self.procs.values()):
            time.sleep(POLL_SECONDS)
        for proc in self.procs.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        stopped = dict(self.procs)
        self.procs.clear()
        backing_off = set(self.restart_at)
        self.restart_at.clear()
        state.kill_job_processes(self.jobdir, 0.0)

        def mark(st: JobStatus) -> None:
            for entry in st["pods"]:
                if entry["name"] in stopped:
                    code, _ = _exit_description(stopped[entry["name"]].returncode)
                    state.close_run(entry, code, why)
                    entry.update(
                        {
                            "phase": "Failed",
                            "exitCode": code,
                            "message": reason,
                            "finishedAt": state.now_rfc3339(),
                        }
                    )
                elif entry["name"] in backing_off:
                    entry.update(
                        {"phase": "Failed", "message": reason, "finishedAt": state.now_rfc3339()}
                    )
                elif entry.get("phase") == "Pending":
                    entry["message"] = reason

        self.update(mark)

    def _fail(self, why: str) -> None:
        self._finished = True
        self._stop_pods(f"stopped: {why}")

        def failed(st: JobStatus) -> None:
            st["phase"] = "Failed"
            st["message"] = why
            st["allocatedGPUs"] = 0
            add_event(st, "Warning", "Failed", f"workload failed: {why}")

        self.update(failed)

    def _complete(self) -> None:
        self._finished = True
        self.throttle.stop()
        state.kill_job_processes(self.jobdir, 0.0)

        def completed(st: JobStatus) -> None:
            st["phase"] = "Completed"
            st["message"] = "every pod exited with code 0"
            st["allocatedGPUs"] = 0
            add_event(st, "Normal", "Completed", "workload completed: every pod exited with code 0")

        self.update(completed)

    def _finish_stopped(self) -> None:
        self._finished = True
        suspending = self.paths.suspend_request.exists()
        deleting = self.paths.deleting.exists()
        if deleting:
            why = "deleted"
        elif suspending:
            why = "suspended"
        else:
            why = "supervisor was terminated"
        self._stop_pods(f"stopped: workload {why}")

        def stopped(st: JobStatus) -> None:
            st["allocatedGPUs"] = 0
            if deleting:
                st["phase"] = "Deleting"
            elif suspending:
                st["phase"] = "Stopped"
                st["message"] = "suspended by the user"
                add_event(st, "Normal", "Suspended", "workload suspended; resume to start it again")
            else:
                st["phase"] = "Failed"
                st["message"] = why
                add_event(st, "Warning", "Failed", f"workload failed: {why}")

        self.update(stopped)
        with contextlib.suppress(FileNotFoundError):
            self.paths.suspend_request.unlink()


def _in_use(exclude: Path) -> tuple[int, int]:
    """GPUs and pods held by other jobs whose supervisor is alive and past scheduling."""
    gpus = pods = 0
    for jobdir in state.iter_job_dirs():
        if jobdir == exclude:
            continue
        try:
            st = read_status(JobPaths(jobdir).status)
        except state.StateError:
            continue
        sup = st.get("supervisor")
        if (
            st.get("phase") in ("Initializing", "Running")
            and sup
            and state.process_alive(sup.get("pid"), sup.get("startTicks"))
        ):
            gpus += int(st.get("allocatedGPUs") or 0)
            pods += len(st.get("pods") or [])
    return gpus, pods


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m runai_local.supervisor JOBDIR", file=sys.stderr)
        return 2
    jobdir = Path(args[0])
    try:
        sup = Supervisor(jobdir)
        sup.run()
    except Exception:
        # Leave a trace in supervisor.log and make the job fail visibly, never hang in Running.
        traceback.print_exc()
        with contextlib.suppress(Exception):
            state.kill_job_processes(jobdir, 1.0)
            with locked(JobPaths(jobdir).lock):
                st = read_status(JobPaths(jobdir).status)
                st["phase"] = "Failed"
                st["message"] = "supervisor crashed; see supervisor.log"
                add_event(st, "Warning", "SupervisorCrashed", st["message"])
                write_json_atomic(JobPaths(jobdir).status, st)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
