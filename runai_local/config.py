"""Settings of the local cluster: GPU count, PVC directories, stop grace period.

Read from ``$XDG_CONFIG_HOME/runai-tui/local.yaml`` (optional) and then environment variables,
which win::

    gpus: 0                       # RUNAI_LOCAL_GPUS
    pvc_root: ~/pvcs              # RUNAI_LOCAL_PVC_ROOT   (default $XDG_DATA_HOME/runai-tui/local/pvc)
    pvcs: {project-001: /srv/data}  # one claim -> one directory (default <pvc_root>/<claim>)
    grace_seconds: 5              # RUNAI_LOCAL_GRACE_SECONDS (TERM -> KILL on stop/delete)
    project: local                # RUNAI_LOCAL_PROJECT (project of a submit without -p)
    max_pods: 0                   # RUNAI_LOCAL_MAX_PODS: pods running at once (0: no limit);
                                  # jobs beyond it wait Pending, with the reason as an event
    nodes: 1                      # RUNAI_LOCAL_NODES: nodes this machine stands for (pods go
                                  # round robin over local-0, local-1…; one node is `local`)
    slow_nodes: {local-1: 0.3}    # RUNAI_LOCAL_SLOW_NODES="local-1=0.3": the CPU share the
                                  # pods of a throttled node get (a straggler's node)
    shm_size: 64Mi                # RUNAI_LOCAL_SHM_SIZE: a pod without --large-shm gets its own
                                  # /dev/shm of this size, as a container does (default: unset,
                                  # the machine's /dev/shm; see shm.py)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from runai_local.errors import LocalError
from runai_tui.util import paths
from runai_tui.util.duration import DurationError, read_seconds


class ConfigError(LocalError):
    """The config file or an override is invalid (one line naming file, field and value)."""


@dataclass(frozen=True)
class LocalConfig:
    gpus: int = 0
    pvc_root: Path = field(default_factory=paths.local_pvc_root)
    pvcs: dict[str, Path] = field(default_factory=dict)
    grace_seconds: float = 5.0
    project: str = "local"
    max_pods: int = 0  # 0: no limit
    shm_size: str = ""  # a tmpfs size (`64m`) for pods without --large-shm; "": the machine's
    nodes: int = 1  # nodes the machine stands for
    slow_nodes: dict[str, float] = field(default_factory=dict)  # node -> CPU share (0 to 1)

    @property
    def node_names(self) -> list[str]:
        """`local` for one node, else `local-0`, `local-1`, …"""
        return ["local"] if self.nodes <= 1 else [f"local-{i}" for i in range(self.nodes)]


def _slow_nodes(source: str, value: object) -> dict[str, float]:
    """{node: share} from a mapping or `NODE=SHARE,NODE=SHARE`; a share is above 0, below 1."""
    if isinstance(value, str):
        pairs = [item.partition("=")[::2] for item in value.split(",") if item.strip()]
        value = {k.strip(): v.strip() for k, v in pairs}
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: slow_nodes must map node names to CPU shares")
    out = {}
    for node, share in value.items():
        try:
            number = float(share)
        except (TypeError, ValueError):
            number = -1.0
        if not 0 < number < 1:
            raise ConfigError(
                f"{source}: slow_nodes {node}={share!r}: give a CPU share above 0 and below 1"
            )
        out[str(node)] = number
    return out


def _shm_size(source: str, value: object) -> str:
    """`64Mi` (or `64M`, `1Gi`, a byte count) as a tmpfs size option (`64m`); "" when unset."""
    text = str(value or "").strip()
    if not text:
        return ""
    m = re.fullmatch(r"(\d+)([KMG]i?)?", text)
    if m is None or int(m.group(1)) == 0:
        raise ConfigError(f"{source}: shm_size={text!r} is not a size; write e.g. 64Mi or 1Gi")
    return m.group(1) + (m.group(2) or "")[:1].lower()


def config_path() -> Path:
    return paths.local_config_file()


def _number(source: str, name: str, value: object, kind: type) -> Any:
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"{source}: {name}={value!r} is not {'an integer' if kind is int else 'a number'}; "
            f"set a number >= 0"
        ) from None
    if number < 0:
        raise ConfigError(f"{source}: {name}={value!r} is negative; set a number >= 0")
    return number


def _seconds(source: str, name: str, value: object) -> float:
    """A duration in seconds (`5`, `30s`, `1m30s`): never nan, inf or negative."""
    try:
        return read_seconds(value)
    except DurationError as exc:
        raise ConfigError(
            f"{source}: {name}={value!r} is not a duration ({exc}); set seconds >= 0, e.g. 30"
        ) from None


def load_config() -> LocalConfig:
    raw: dict[str, object] = {}
    path = config_path()
    if path.is_file():
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: expected a mapping of settings")
        known = {"gpus", "pvc_root", "pvcs", "grace_seconds", "project", "max_pods", "shm_size"}
        known |= {"nodes", "slow_nodes"}
        unknown = set(loaded) - known
        if unknown:
            raise ConfigError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))}")
        raw = loaded
    src = str(path)
    gpus = _number(src, "gpus", raw.get("gpus", 0), int)
    grace = _seconds(src, "grace_seconds", raw.get("grace_seconds", 5.0))
    max_pods = _number(src, "max_pods", raw.get("max_pods", 0), int)
    env = os.environ
    if env.get("RUNAI_LOCAL_GPUS"):
        gpus = _number("environment", "RUNAI_LOCAL_GPUS", env["RUNAI_LOCAL_GPUS"], int)
    if env.get("RUNAI_LOCAL_GRACE_SECONDS"):
        grace = _seconds(
            "environment", "RUNAI_LOCAL_GRACE_SECONDS", env["RUNAI_LOCAL_GRACE_SECONDS"]
        )
    if env.get("RUNAI_LOCAL_MAX_PODS"):
        max_pods = _number("environment", "RUNAI_LOCAL_MAX_PODS", env["RUNAI_LOCAL_MAX_PODS"], int)
    pvc_root = Path(os.path.expanduser(str(raw.get("pvc_root") or paths.local_pvc_root())))
    if env.get("RUNAI_LOCAL_PVC_ROOT"):
        pvc_root = Path(os.path.expanduser(env["RUNAI_LOCAL_PVC_ROOT"]))
    pvcs_raw = raw.get("pvcs") or {}
    if not isinstance(pvcs_raw, dict):
        raise ConfigError(f"{src}: pvcs must map claim names to directories")
    pvcs = {str(k): Path(os.path.expanduser(str(v))) for k, v in pvcs_raw.items()}
    project = env.get("RUNAI_LOCAL_PROJECT") or str(raw.get("project") or "local")
    nodes = _number(src, "nodes", raw.get("nodes", 1), int)
    if env.get("RUNAI_LOCAL_NODES"):
        nodes = _number("environment", "RUNAI_LOCAL_NODES", env["RUNAI_LOCAL_NODES"], int)
    slow = _slow_nodes(src, raw.get("slow_nodes") or {})
    if env.get("RUNAI_LOCAL_SLOW_NODES"):
        slow = _slow_nodes("environment", env["RUNAI_LOCAL_SLOW_NODES"])
    shm_size = _shm_size(src, raw.get("shm_size"))
    if env.get("RUNAI_LOCAL_SHM_SIZE"):
        shm_size = _shm_size("environment", env["RUNAI_LOCAL_SHM_SIZE"])
    return LocalConfig(
        gpus=gpus,
        pvc_root=pvc_root,
        pvcs=pvcs,
        grace_seconds=grace,
        project=project,
        max_pods=max_pods,
        shm_size=shm_size,
        nodes=max(1, nodes),
        slow_nodes=slow,
    )
