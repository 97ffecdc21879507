"""The network NCCL uses, as its log says it (NCCL_DEBUG=INFO): the transport a pod chose and
its devices, and the NCCL_IB_* settings that ask for InfiniBand/RoCE. A gloo (CPU) job's pods
say theirs through the trainer, which finds it as Gloo does (Gloo prints nothing):
`trainer: rank 0: Using network gloo/TCP on lo (...)`."""

from __future__ import annotations

import re
from dataclasses import dataclass

TRANSPORT_IB, TRANSPORT_SOCKET, TRANSPORT_UNKNOWN = "IB", "Socket", "unknown"
TRANSPORT_GLOO = "gloo/TCP"  # Gloo's TCP transport (the trainer's line; trainer/distributed.py)

# What NCCL prints about the network it uses (NCCL_DEBUG=INFO).
NET_INIT = re.compile(r"\bNET/(IB|Socket) : Using (.*?)(?:;|$)")
# The network NCCL settled on; plugins are named after their transport (`IBext_v8`).
NET_FINAL = re.compile(r"\bUsing network (\w+)|\bvia NET/(\w+)/\d")
# Devices as NCCL lists them: `[0]mlx5_2:1/RoCE`, a merged `[0]={[0] mlx5_2:1/RoCE, ...}`,
# and sockets as `[0]net1:10.0.0.2<0>` (the interface is the part before the address).
IB_DEVICE = re.compile(r"([A-Za-z][\w.-]*:\d+/(?:IB|RoCE))\b")
SOCKET_DEVICE = re.compile(r"\[\d+\]([A-Za-z][\w.@-]*):")
# The trainer's gloo line: the interface(s) after "on" (GLOO_SOCKET_IFNAME may list several).
GLOO_DEVICE = re.compile(r"\bUsing network gloo/TCP on ([^\s(]+)")
# NCCL_IB_HCA / NCCL_IB_DISABLE as NCCL echoes them, or as `K=V` (the trainer's settings line).
IB_SETTING = re.compile(r"\bNCCL_IB_(HCA|DISABLE)(?: set (?:by environment )?to |=)([^\s.,;]+)")


@dataclass
class NetChoice:
    """Where a transport decision came from: the transport, its devices, the line and its text."""

    transport: str
    device: str
    line: int
    text: str


def final_transport(line: str) -> str | None:
    """The transport a `Using network X` / `via NET/X/` line settles on, or None."""
    final = NET_FINAL.search(line)
    return transport_of(final.group(1) or final.group(2)) if final else None


def transport_of(network: str) -> str | None:
    """`IB`, `IBext_v8` (the IB plugin) -> IB; `Socket` -> Socket; `gloo` -> gloo/TCP;
    anything else -> None."""
    if network.startswith("IB"):
        return TRANSPORT_IB
    if network.startswith("Socket"):
        return TRANSPORT_SOCKET
    if network == "gloo":
        return TRANSPORT_GLOO
    return None


def final_device(line: str) -> str:
    """The device a final-transport line names itself (the trainer's gloo line), else ""."""
    found = GLOO_DEVICE.search(line)
    return found.group(1) if found else ""


def init_devices(transport: str, listed: str) -> str:
    """The devices a `NET/<transport> : Using ...` line lists, unique, in NCCL's order."""
    found = (IB_DEVICE if transport == TRANSPORT_IB else SOCKET_DEVICE).findall(listed)
    return ",".join(dict.fromkeys(found))
