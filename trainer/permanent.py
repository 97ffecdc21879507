"""Faults no restart cures end the job at their first occurrence, not after every restart.

Bad input (a ConfigError: exit 2), a network interface the pod does not have, a dataset path
that does not exist: the same start fails the same way every time. Under torchrun a failed rank
makes the agent restart the whole worker group (--max-restarts times), and past that the pod's
restart policy starts the pod again (the backoff limit): each restart pays torchrun's start, the
rendezvous and the imports, on every pod, to hit the same error.

So the trainer names such a fault in the file the entry script gives it
(TRAIN_PERMANENT_FAULT_FILE, scripts/train-retinanet-ddp.sh) and stops its torchrun agent (its
parent) before the agent notices the failed rank: the agent stops the group instead of
restarting it, and the script exits 2, which Kubeflow's ExitCode restart policy (and the local
cluster's) takes as permanent. Without that file (a plain process, another launcher) it only
exits 2.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Mapping
from pathlib import Path

from trainer.errors import ConfigError

FAULT_FILE_ENV = "TRAIN_PERMANENT_FAULT_FILE"
AGENT_GRACE_SECONDS = 30.0  # how long a rank waits for the agent it stopped to stop it in turn


def interfaces() -> list[str]:
    """The network interfaces this pod has."""
    return [name for _, name in socket.if_nameindex()]


def _nccl_missing(value: str, have: list[str]) -> list[str]:
    """NCCL_SOCKET_IFNAME's wanted names that match none of `have`: a comma list of prefixes,
    `=NAME` an exact name, `^...` names to exclude (never missing)."""
    if value.startswith("^"):
        return []
    exact = value.startswith("=")
    names = [n for n in value.lstrip("=").split(",") if n]
    found = [n for n in names if any(h == n if exact else h.startswith(n) for h in have)]
    return [] if found else names


def check_interfaces(env: Mapping[str, str], uses_nccl: bool) -> None:
    """GLOO_SOCKET_IFNAME (always) and NCCL_SOCKET_IFNAME (`uses_nccl`) must name interfaces the
    pod has: otherwise the process group can never start (ConfigError, exit 2)."""
    have = interfaces()
    shown = ", ".join(have) or "none"
    gloo = env.get("GLOO_SOCKET_IFNAME", "")
    missing = [n for n in gloo.split(",") if n and n not in have]
    variable = "GLOO_SOCKET_IFNAME"
    if not missing and uses_nccl and env.get("NCCL_SOCKET_IFNAME"):
        missing = _nccl_missing(env["NCCL_SOCKET_IFNAME"], have)
        variable = "NCCL_SOCKET_IFNAME"
    if missing:
        raise ConfigError(
            f"{variable}={env[variable]}: Unable to find address for: {missing[0]} (this pod's "
            f"interfaces: {shown}); set it to one of them or unset it"
        )


def _agent_pid() -> int | None:
    """torchrun's agent, when it is this process's parent (it launched the trainer)."""
    if not os.environ.get("TORCHELASTIC_RUN_ID"):
        return None
    parent = os.getppid()
    try:
        argv = Path(f"/proc/{parent}/cmdline").read_bytes()
    except OSError:
        return None
    return parent if b"torchrun" in argv or b"torch.distributed.run" in argv else None


def give_up(message: str) -> None:
    """A fault no restart cures: name it for the entry script, and stop torchrun's agent before
    it restarts the worker group (it stops this process in turn; after AGENT_GRACE_SECONDS the
    caller exits by itself). Without the entry script's file nothing is stopped."""
    path = os.environ.get(FAULT_FILE_ENV)
    if not path:
        return
    with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as out:
        out.write(message.replace("\n", " ") + "\n")
    agent = _agent_pid()
    if agent is None:
        return
    # The stop the agent sends back ends this process (the trainer's own stop handler would
    # wait for a checkpoint that will never come).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(agent, signal.SIGTERM)
    deadline = time.monotonic() + AGENT_GRACE_SECONDS
    while time.monotonic() < deadline and os.getppid() == agent:
        time.sleep(0.1)
