"""What the client knows about jobs, as plain data: Job, Pod, Event and their Phase."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone


class Phase(str, enum.Enum):
    """Run:ai v2 workload phases (REST `Phase` enum plus `Suspending`)."""

    CREATING = "Creating"
    INITIALIZING = "Initializing"
    RESUMING = "Resuming"
    PENDING = "Pending"
    DELETING = "Deleting"
    RUNNING = "Running"
    UPDATING = "Updating"
    STOPPED = "Stopped"
    STOPPING = "Stopping"
    SUSPENDING = "Suspending"
    DEGRADED = "Degraded"
    FAILED = "Failed"
    COMPLETED = "Completed"
    TERMINATING = "Terminating"
    UNKNOWN = "Unknown"

    @property
    def is_terminal(self) -> bool:
        return self in (Phase.COMPLETED, Phase.FAILED)

    @property
    def is_active(self) -> bool:
        """Pods may be running: exec and logs --follow make sense."""
        return self in (Phase.RUNNING, Phase.DEGRADED, Phase.INITIALIZING, Phase.RESUMING)

    @property
    def can_suspend(self) -> bool:
        """A running or waiting job can be suspended (docs/runai-cli.md §2.7)."""
        return self in _SUSPENDABLE

    @property
    def can_resume(self) -> bool:
        """Only a suspended (Stopped) job can be resumed."""
        return self is Phase.STOPPED

    def allows(self, verb: str) -> bool:
        """Whether `verb` makes sense on a job in this phase: suspend a live job, resume a
        stopped one; every other verb applies in any phase."""
        if verb == "suspend":
            return self.can_suspend
        if verb == "resume":
            return self.can_resume
        return True


_SUSPENDABLE = frozenset(
    {
        Phase.CREATING,
        Phase.INITIALIZING,
        Phase.PENDING,
        Phase.RUNNING,
        Phase.DEGRADED,
        Phase.RESUMING,
        Phase.UPDATING,
    }
)
# Why a verb was refused, for messages: the phases `Phase.allows` accepts, in words.
VERB_PHASES = {
    "suspend": "suspend applies to running or waiting jobs ("
    + ", ".join(sorted(p.value for p in _SUSPENDABLE))
    + ")",
    "resume": "resume applies to suspended (Stopped) jobs",
}


# CLI v1 and Kubernetes pod phases that differ from the v2 names.
_ALIASES = {
    "succeeded": Phase.COMPLETED,
    "success": Phase.COMPLETED,
    "complete": Phase.COMPLETED,
    "timedout": Phase.FAILED,
    "error": Phase.FAILED,
    "crashloopbackoff": Phase.FAILED,
    "preempted": Phase.PENDING,
    "containercreating": Phase.INITIALIZING,
    "deleted": Phase.DELETING,
    "suspended": Phase.STOPPED,
}


# Framework names in the list -> `runai training` subcommand (docs/runai-cli.md §1.1).
FAMILIES = {
    "pytorch": "pytorch",
    "tensorflow": "tensorflow",
    "tf": "tensorflow",
    "mpi": "mpi",
    "xgboost": "xgboost",
    "jax": "jax",
}


def normalize_phase(value: object) -> Phase:
    """Map any status string the CLI may print (v1, v2, pod phases, any case) to a v2 Phase."""
    if isinstance(value, Phase):
        return value
    text = str(value or "").strip().replace(" ", "").replace("_", "").replace("-", "")
    low = text.lower()
    for phase in Phase:
        if phase.value.lower() == low:
            return phase
    return _ALIASES.get(low, Phase.UNKNOWN)


@dataclass
class Pod:
    name: str
    phase: Phase = Phase.UNKNOWN
    node: str = ""
    gpus: float = 0.0
    role: str = ""  # "master" or "worker", when known
    message: str = ""


@dataclass
class Event:
    time: str
    type: str
    reason: str
    message: str


@dataclass
class Job:
    name: str
    phase: Phase = Phase.UNKNOWN
    project: str = ""
    type: str = ""  # e.g. "Training", framework "PyTorch"
    running_pods: int | None = None
    requested_pods: int | None = None
    gpus: float | None = None
    created: datetime | None = None
    raw: Mapping[str, object] = field(default_factory=dict, repr=False)
    framework: str = ""  # "PyTorch", "TensorFlow", "MPI", "XGBoost", "JAX"; "" when not said

    @property
    def status(self) -> str:
        return self.phase.value

    @property
    def preemptions(self) -> int:
        """Times the scheduler took this job's slots, where the list says so (the local
        cluster's `preemptions`); 0 otherwise."""
        count = self.raw.get("preemptions")
        return count if isinstance(count, int) and not isinstance(count, bool) else 0

    @property
    def status_shown(self) -> str:
        """The status, and `(preempted Nx)` for a job that was: `Pending (preempted 1x)`."""
        n = self.preemptions
        return f"{self.phase.value} (preempted {n}x)" if n else self.phase.value

    @property
    def family(self) -> str:
        """The `runai training FAMILY` subcommand that manages this job: the framework's, else
        `standard` for a training job without one, else `pytorch` (runai-tui's own jobs)."""
        word = FAMILIES.get(self.framework.strip().lower().replace(" ", ""))
        if word:
            return word
        if not self.framework and self.type.strip().lower() in ("training", "train"):
            return "standard"
        return "pytorch"

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "status": self.phase.value,
            "project": self.project,
            "type": self.type,
            "framework": self.framework,
            "running_pods": self.running_pods,
            "requested_pods": self.requested_pods,
            "gpus": self.gpus,
            "created": self.created.isoformat() if self.created else None,
        }


@dataclass
class JobDetail:
    """The result of describe: the job, its pods and events, and the raw document."""

    job: Job
    pods: list[Pod] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    resources: dict[str, object] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. the local cluster's "no effect here"
    raw: Mapping[str, object] = field(default_factory=dict, repr=False)

    def resource_rows(self) -> list[tuple[str, str]]:
        """The requested resources as `gpu.perWorker: 1` rows, leaving out what is unset."""
        return _flatten(self.resources)

    def to_dict(self) -> dict[str, object]:
        return {
            **self.job.to_dict(),
            "pods": [
                {"name": p.name, "status": p.phase.value, "node": p.node, "role": p.role}
                for p in self.pods
            ],
            "events": [e.__dict__ for e in self.events],
            "resources": self.resources,
            "notes": self.notes,
        }


def _flatten(data: object, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(data, dict):
        rows: list[tuple[str, str]] = []
        for key, value in data.items():
            rows.extend(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return rows
    if data is None or data == "" or data == [] or data == {}:
        return []
    if isinstance(data, list):
        return [(prefix, ", ".join(str(item) for item in data))]
    if isinstance(data, bool):
        return [(prefix, "yes" if data else "no")]
    return [(prefix, str(data))]


def master_pod(pods: list[Pod]) -> Pod | None:
    """The pod whose log carries the trainer's records (rank 0): the master, else the first."""
    for pod in pods:
        if pod.role == "master" or pod.name.endswith("-master-0"):
            return pod
    return pods[0] if pods else None


# How a job's figures read in a list (the CLI's `list` table and the TUI's jobs table).

_AGE_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def age_seconds(created: datetime, now: datetime) -> int:
    """Whole seconds from `created` to `now`, never negative (a naive `created` is UTC)."""
    if created.tzinfo is None:
        created = created.replace(tzinfo=timezone.utc)
    return max(0, int((now - created).total_seconds()))


def format_age(created: datetime | None, now: datetime) -> str:
    """k9s-style age: 42s, 7m, 3h, 5d."""
    if created is None:
        return "-"
    seconds = age_seconds(created, now)
    for unit, size in _AGE_UNITS:
        if seconds >= size or size == 1:
            return f"{seconds // size}{unit}"
    raise AssertionError("unreachable: the last unit is one second")


def format_pods(job: Job) -> str:
    running = "-" if job.running_pods is None else str(job.running_pods)
    requested = "-" if job.requested_pods is None else str(job.requested_pods)
    return f"{running}/{requested}"


def format_gpus(job: Job) -> str:
    if job.gpus is None:
        return "-"
    return f"{job.gpus:g}"
