"""Turn a parsed `submit` into the job spec the supervisor runs, and compute each pod's env.

Pods follow the Kubeflow PyTorchJob layout: ``NAME-master-0`` (rank 0) and ``NAME-worker-i``
(rank i+1). Their env mirrors what the operator and Run:ai inject (docs/runai-cli.md section 4), with
MASTER_ADDR 127.0.0.1 because every pod runs on this machine.
"""

from __future__ import annotations

import getpass
import os
import re
import secrets
import shlex
import sys
import uuid
from pathlib import Path

from runai_local import pvc
from runai_local.config import LocalConfig
from runai_local.errors import LocalError
from runai_local.flags import GLOBAL_FLAGS, Parsed, duration_seconds
from runai_local.state import (
    JOB_DIR_ENV,
    NODE_NAME,
    POD_ENV,
    JobSpec,
    MountSpec,
    PodSpec,
    Resources,
    now_rfc3339,
)
from runai_tui.util.quantity import memory_bytes

NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MAX_NAME = 50  # leaves room for "-worker-NNN" inside a 63-character pod name
DEFAULT_BACKOFF_LIMIT = 6  # a Kubernetes Job's default: restarts before the workload fails
# `--priority`, lowest first (runai 2.25's values, docs/runai-cli.md section 1.3; the profile
# field table's list, kept equal by tests/local/test_flags.py). A training without one is `low`:
# Run:ai gives trainings its lowest built-in class, `train`, preemptible (NVIDIA Run:ai docs,
# "Workload Priority and Preemption"). A higher priority takes a lower, preemptible job's slots.
PRIORITIES = ("very-low", "low", "medium-low", "medium", "medium-high", "high", "very-high")
DEFAULT_PRIORITY = "low"

# Flags the local cluster acts on. Every other flag given is recorded and described as having
# no effect here.
HONOURED = {
    "backoff-limit",
    "command",
    "environment-variable",
    "exclude-node",
    "existing-pvc",
    "gpu-devices-request",
    "master-args",
    "master-command",
    "master-environment-variable",
    "master-gpu-devices-request",
    "name-prefix",
    "no-master",
    "preemptibility",
    "priority",
    "project",
    "master-restart-policy",
    "restart-policy",
    "termination-grace-period",
    "working-dir",
    "workers",
}

# Variables passed from the submitter's environment into pods: what a container image would
# provide (a PATH, a HOME, a locale), not the caller's whole shell.
_BASE_ENV_KEYS = ("HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM", "SHELL")


_GLOBAL_NAMES = {flag.name for flag in GLOBAL_FLAGS}


class SpecError(LocalError, ValueError):
    """A submit that cannot run locally (bad value or missing command): one line with the fix."""


def _pairs(flag: str, values: list[str], what: str = "NAME=VALUE") -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        key, eq, val = value.partition("=")
        if not eq or not key:
            raise SpecError(f'invalid argument "{value}" for "--{flag}" flag: expected {what}')
        out[key] = val
    return out


def base_env() -> dict[str, str]:
    env = {k: os.environ[k] for k in _BASE_ENV_KEYS if k in os.environ}
    env.update({k: v for k, v in os.environ.items() if k.startswith("LC_")})
    # The venv's python3/torchrun must win, as the image's would in a container.
    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep) if p != venv_bin]
    env["PATH"] = os.pathsep.join([venv_bin, *path])
    if os.environ.get("VIRTUAL_ENV"):
        env["VIRTUAL_ENV"] = os.environ["VIRTUAL_ENV"]
    return env


def _notes(parsed: Parsed, config: LocalConfig) -> list[str]:
    notes = []
    user = getpass.getuser()
    for name in dict.fromkeys(parsed.seen):
        if name in HONOURED or name in _GLOBAL_NAMES:
            continue
        if name == "large-shm" and config.shm_size:
            continue  # honoured: the pods keep the machine's /dev/shm instead of shm_size
        value = parsed.values[name]
        if name in ("run-as-uid", "run-as-gid"):
            notes.append(
                f"--{name} {value} has no effect on the local cluster: pods run as {user} "
                f"(uid {os.getuid()}, gid {os.getgid()})"
            )
        elif name == "image":
            notes.append(
                f"--image {value} has no effect on the local cluster: commands run on this "
                f"machine with {sys.executable}"
            )
        elif name.startswith(("cpu-", "master-cpu-")):
            notes.append(f"--{name} has no effect on the local cluster (recorded, not enforced)")
        else:
            notes.append(f"--{name} has no effect on the local cluster")
    return notes


def build_spec(
    parsed: Parsed, config: LocalConfig, argv: list[str], cwd: Path
) -> tuple[JobSpec, list[pvc.Mount]]:
    """Validate a parsed submit and return (spec, mounts). Raises SpecError/PvcError."""
    v = parsed.values
    name = _workload_name(parsed)
    project = v["project"] or config.project
    if not NAME_RE.match(project):
        raise SpecError(f'invalid project "{project}": use a lowercase DNS-1123 name')
    workers, worker_gpus, master_gpus = _pod_counts(parsed)
    mounts = _mounts(parsed, config)
    env = _pairs("environment-variable", v["environment-variable"])
    master_env = _pairs("master-environment-variable", v["master-environment-variable"])
    annotations = _pairs("annotation", v["annotation"])
    labels = _pairs("label", v["label"])
    extended = _pairs("extended-resource", v["extended-resource"], "resource_name=quantity")
    rest = parsed.rest or []
    worker_argv, master_argv = _pod_commands(parsed, rest)
    working_dir_requested = v["working-dir"] or ""
    working_dir = _working_dir(working_dir_requested, mounts, cwd)
    grace = _grace_seconds(parsed, config)
    worker_policy, master_policy, backoff_limit = _restart_policies(parsed)

    world = workers + (0 if v["no-master"] else 1)
    pods = _pods(
        parsed, config, name, mounts, workers,
        worker=(worker_gpus, worker_policy, worker_argv, env),
        master=(master_gpus, master_policy, master_argv, {**env, **master_env}),
    )  # fmt: skip
    spec: JobSpec = {
        "name": name,
        "project": project,
        "id": str(uuid.uuid4()),
        "type": "Training",
        "framework": "PyTorch",
        "createdAt": now_rfc3339(),
        "submitArgv": argv,
        "flags": {k: v[k] for k in dict.fromkeys(parsed.seen)},
        "rest": rest,
        "noMaster": bool(v["no-master"]),
        "worldSize": world,
        "image": v["image"] or "",
        "workingDir": working_dir,
        "workingDirRequested": working_dir_requested,
        "mounts": _mount_records(mounts),
        "annotations": annotations,
        "labels": labels,
        "resources": _resources(parsed, workers, world, worker_gpus, master_gpus, pods, extended),
        "graceSeconds": grace,
        "backoffLimit": backoff_limit,
        "priority": _priority(parsed),
        "preemptible": v["preemptibility"] != "non-preemptible",  # a training's default
        "baseEnv": base_env(),
        "pods": pods,
        "notes": _notes(parsed, config),
        # A pod without --large-shm gets a /dev/shm of this size (shm.py); "": the machine's.
        "shmSize": "" if v["large-shm"] else config.shm_size,
    }
    _add_machine_notes(spec, pods, config)
    return spec, mounts


def _mounts(parsed: Parsed, config: LocalConfig) -> list[pvc.Mount]:
    """The --existing-pvc mounts, each at its own path."""
    mounts = [pvc.parse_existing_pvc(value, config) for value in parsed.values["existing-pvc"]]
    claims = [m.path for m in mounts]
    if len(set(claims)) != len(claims):
        raise SpecError("two --existing-pvc values mount at the same path; give each its own path")
    return mounts


def _mount_records(mounts: list[pvc.Mount]) -> list[MountSpec]:
    return [
        {"claim": m.claim, "path": m.path, "local": str(m.local), "readonly": m.readonly}
        for m in mounts
    ]


def _grace_seconds(parsed: Parsed, config: LocalConfig) -> float:
    """--termination-grace-period, or the local cluster's default."""
    grace = config.grace_seconds
    if parsed.values["termination-grace-period"]:
        grace = duration_seconds(parsed.values["termination-grace-period"])
    return grace


def _workload_name(parsed: Parsed) -> str:
    """The positional name, or --name-prefix (default pytorch) with a random suffix."""
    if len(parsed.positionals) > 1:
        raise SpecError(f"accepts at most 1 arg(s), received {len(parsed.positionals)}")
    if parsed.positionals:
        name = parsed.positionals[0]
    else:
        name = f"{parsed.values['name-prefix'] or 'pytorch'}-{secrets.token_hex(6)}"
    if not NAME_RE.match(name) or len(name) > MAX_NAME:
        raise SpecError(
            f'invalid workload name "{name}": use lowercase letters, digits and "-", start and '
            f"end with a letter or digit, at most {MAX_NAME} characters"
        )
    return name


def _pod_counts(parsed: Parsed) -> tuple[int, int, int]:
    """(workers, GPUs per worker, the master's GPUs)."""
    v = parsed.values
    workers = v["workers"] if v["workers"] is not None else 1
    if workers < 0 or (workers == 0 and v["no-master"]):
        raise SpecError(f'invalid argument "{workers}" for "--workers" flag: need at least 1 pod')
    worker_gpus = v["gpu-devices-request"] or 0
    master_gpus = v["master-gpu-devices-request"]
    if master_gpus is None:
        master_gpus = worker_gpus  # as masterSpecSameAsWorker
    return workers, worker_gpus, master_gpus


def _pod_commands(parsed: Parsed, rest: list[str]) -> tuple[list[str], list[str]]:
    """(the workers' argv, the master's argv) from what follows '--' and the master's flags."""
    v = parsed.values
    command, args = (rest, []) if v["command"] else ([], rest)
    worker_argv = command + args
    try:
        master_cmd = shlex.split(v["master-command"]) if v["master-command"] else command
        master_args = shlex.split(v["master-args"]) if v["master-args"] is not None else args
    except ValueError as exc:
        raise SpecError(f"cannot split --master-command/--master-args: {exc}") from None
    master_argv = master_cmd + master_args
    if not worker_argv or (not v["no-master"] and not master_argv):
        raise SpecError(
            "no command to run: the local cluster has no image entrypoint; give one after '--', "
            "e.g. --command -- python3 train.py"
        )
    return worker_argv, master_argv


def _working_dir(requested: str, mounts: list[pvc.Mount], cwd: Path) -> str:
    """--working-dir with mount paths rewritten to their local folders; the submit's cwd when
    not given."""
    working_dir = pvc.rewrite(requested, mounts) if requested else str(cwd)
    if not working_dir.startswith("/"):
        raise SpecError(f'invalid --working-dir "{requested}": use an absolute path')
    return working_dir


def _priority(parsed: Parsed) -> str:
    """--priority, one of PRIORITIES (default: DEFAULT_PRIORITY)."""
    value = parsed.values["priority"] or DEFAULT_PRIORITY
    if value not in PRIORITIES:
        raise SpecError(
            f'invalid argument "{value}" for "--priority" flag: use one of {", ".join(PRIORITIES)}'
        )
    return str(value)


def priority_rank(spec: JobSpec) -> int:
    """SPEC's place in PRIORITIES (higher wins); a spec of before priorities counts as default."""
    name = spec.get("priority") or DEFAULT_PRIORITY
    return PRIORITIES.index(name) if name in PRIORITIES else PRIORITIES.index(DEFAULT_PRIORITY)


def _restart_policies(parsed: Parsed) -> tuple[str, str, int]:
    """(the workers' restart policy, the master's, the backoff limit)."""
    v = parsed.values
    # Kubeflow: --restart-policy is the workers', --master-restart-policy the master's (it copies
    # the workers' when not given, as masterSpecSameAsWorker). Default here: Never.
    worker_policy = v["restart-policy"] or "Never"
    master_policy = v["master-restart-policy"] or worker_policy
    backoff_limit = v["backoff-limit"] if v["backoff-limit"] is not None else DEFAULT_BACKOFF_LIMIT
    if backoff_limit < 0:
        raise SpecError(
            f'invalid argument "{backoff_limit}" for "--backoff-limit" flag: must be 0 or more'
        )
    return worker_policy, master_policy, backoff_limit


def _pods(
    parsed: Parsed,
    config: LocalConfig,
    name: str,
    mounts: list[pvc.Mount],
    workers: int,
    worker: tuple[int, str, list[str], dict[str, str]],
    master: tuple[int, str, list[str], dict[str, str]],
) -> list[PodSpec]:
    """The master (unless --no-master) and the workers, each (gpus, restart policy, argv, env),
    placed on nodes."""
    no_master = parsed.values["no-master"]
    pods: list[PodSpec] = []
    if not no_master:
        pods.append(_pod(name, "master", 0, *master, mounts))
    for i in range(workers):
        pods.append(_pod(name, "worker", i + (0 if no_master else 1), *worker, mounts, index=i))
    _place(pods, parsed, config)
    return pods


def _pod(
    name: str,
    role: str,
    rank: int,
    gpus: int,
    policy: str,
    argv: list[str],
    env: dict[str, str],
    mounts: list[pvc.Mount],
    index: int = 0,
) -> PodSpec:
    """One pod of the job, its paths under mounts rewritten to their local folders."""
    return {
        "name": f"{name}-{role}-{index}",
        "role": role,
        "rank": rank,
        "gpus": gpus,
        "restartPolicy": policy,
        "argv": pvc.rewrite_all(argv, mounts),
        "env": {k: pvc.rewrite(x, mounts) for k, x in env.items()},
    }


def _place(pods: list[PodSpec], parsed: Parsed, config: LocalConfig) -> None:
    """Placement: round robin over the nodes --exclude-node leaves (none: the job waits)."""
    excluded = set(parsed.values["exclude-node"] or [])
    allowed = [n for n in config.node_names if n not in excluded]
    for i, pod in enumerate(pods):
        pod["node"] = allowed[i % len(allowed)] if allowed else ""
        if pod["node"] in config.slow_nodes:  # a throttled node: the supervisor duty-cycles
            pod["cpuShare"] = config.slow_nodes[pod["node"]]


def _resources(
    parsed: Parsed,
    workers: int,
    world: int,
    worker_gpus: int,
    master_gpus: int,
    pods: list[PodSpec],
    extended: dict[str, str],
) -> Resources:
    v = parsed.values
    return {
        "workers": workers,
        "pods": world,
        "gpu": {
            "perWorker": worker_gpus,
            "master": 0 if v["no-master"] else master_gpus,
            "total": sum(p["gpus"] for p in pods),
        },
        "cpu": {"request": v["cpu-core-request"], "limit": v["cpu-core-limit"]},
        "memory": {"request": v["cpu-memory-request"], "limit": v["cpu-memory-limit"]},
        "extendedResources": extended,
        "largeShm": v["large-shm"],
    }


def _add_machine_notes(spec: JobSpec, pods: list[PodSpec], config: LocalConfig) -> None:
    """Notes on what the local machine does unlike a cluster: slow nodes, a small /dev/shm."""
    for node in sorted({p["node"] for p in pods if "cpuShare" in p}):
        share = config.slow_nodes[node]
        spec["notes"].append(
            f"node {node} is slow: its pods get {share:.0%} of the CPU (slow_nodes in local.yaml)"
        )
    if spec["shmSize"]:
        spec["notes"].append(
            f"/dev/shm is {spec['shmSize']} in each pod (shm_size in local.yaml), as in a "
            "container without --large-shm"
        )


def pod_environment(spec: JobSpec, pod: PodSpec, master_port: int, jobdir: Path) -> dict[str, str]:
    """The full environment of POD: base, Run:ai/operator variables, then the job's own env."""
    env = dict(spec.get("baseEnv") or {})
    if not spec.get("noMaster"):
        rank = str(pod["rank"])
        world = str(spec["worldSize"])
        env.update(
            {
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(master_port),
                "PET_MASTER_ADDR": "127.0.0.1",
                "PET_MASTER_PORT": str(master_port),
                "WORLD_SIZE": world,
                "RANK": rank,
                "PET_NNODES": world,
                "PET_NODE_RANK": rank,
            }
        )
    env.update(
        {
            "PYTHONUNBUFFERED": "1",
            "RUNAI_JOB_NAME": spec["name"],
            "RUNAI_PROJECT": spec["project"],
            "RUNAI_JOB_UUID": spec["id"],
            "RUNAI_NUM_OF_GPUS": str(pod["gpus"]),
            "NODE_NAME": pod.get("node") or NODE_NAME,
            "POD_NAME": pod["name"],
        }
    )
    if not pod["gpus"]:
        # As in a Kubernetes pod that requests no GPU, whose container runtime then mounts no GPU
        # and no nvidia-smi (NVIDIA_VISIBLE_DEVICES=void); the job's own env may say otherwise.
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["NVIDIA_VISIBLE_DEVICES"] = "void"
    env.update(pod.get("env") or {})
    env[JOB_DIR_ENV] = str(jobdir)
    env[POD_ENV] = pod["name"]
    return env


def exec_environment(
    spec: JobSpec, pod: PodSpec, master_port: int, jobdir: Path, pids: list[int]
) -> dict[str, str]:
    """What `exec` runs with: the pod's environment, and what the resource probe reads there.

    A pod here is processes, not a cgroup: probes read PIDS (the pod's processes, found by its
    marker: torchrun starts its workers in new sessions, so the pod's group misses them) in
    /proc, against the memory limit read as Kubernetes reads it (`8996` is 8996 bytes, `512m`
    rounds up to 1 byte), reported against, not enforced, here."""
    env = pod_environment(spec, pod, master_port, jobdir)
    env["RUNAI_LOCAL_POD_PIDS"] = " ".join(str(pid) for pid in sorted(pids))
    limit = memory_bytes((spec.get("resources") or {}).get("memory", {}).get("limit"))
    if limit:
        env["RUNAI_LOCAL_MEMORY_LIMIT"] = str(limit)
    return env
