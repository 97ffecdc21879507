"""A /dev/shm too small for the DataLoader's workers, diagnosed and fixed by a resubmit on the
local cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.local.resubmit_loop import loop, tiny, user_profile
from tests.local.test_through_runai_tui import tui


@pytest.mark.slow
def test_a_small_dev_shm_is_diagnosed_and_fixed_by_a_resubmit() -> None:
    probe = subprocess.run(
        [sys.executable, "-m", "runai_local.shm", "1m", "--", "true"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:  # a kernel without unprivileged user namespaces
        pytest.skip(f"no pod-own /dev/shm here: {probe.stderr.strip()}")
    # Pods without --large-shm get a /dev/shm of 64 KiB (a container's is 64 MiB): the trainer's
    # two DataLoader workers cannot pass a batch through it, and the trainer waits for it.
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "local.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("shm_size: 64Ki\n")
    # One pod: the fault is a DataLoader's, on any rank (no DDP needed to show it).
    one_pod = "large_shm: false\n        no_master: true"
    user_profile("shmbad", tiny("shmbad", ', --workers, "2"', extra=one_pod))
    try:
        loop("shmbad", "shm", "large_shm=true", hangs=True)
    finally:
        for name in ("shmbad", "shmbad-2"):
            tui("delete", name, "--yes")
        config.unlink()
