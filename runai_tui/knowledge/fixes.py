"""Fix texts that more than one of lint, diagnose and preflight give: each is written here once,
and a caller adds only what is its own (`; check with ...`)."""

from __future__ import annotations

MEMLOCK = (
    'set memlock unlimited on the nodes (CRI-O default_ulimits "memlock=-1:-1") and give '
    "the pod IPC_LOCK (capabilities: [IPC_LOCK])"
)
SHM = "profile large_shm: true (--large-shm), or fewer DataLoader --workers"
