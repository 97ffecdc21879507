"""GLOO_SOCKET_IFNAME as the installed torch reads it, against nccl_env.gloo_interfaces: one
real gloo process group (world size 1) per value; it starts exactly when every interface the
reading names exists in /sys/class/net (exact names, no prefix, nothing trimmed) and none is
empty, and a value of one character is ignored (the host name's address)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from runai_tui.knowledge import nccl_env

REPO = Path(__file__).resolve().parents[2]
# Run in one child: init, destroy, next value (FileStore rendezvous: no port is opened).
CHILD = r"""
import json, os, sys, tempfile
import torch.distributed as dist
out = {}
for value in json.loads(sys.argv[1]):
    os.environ["GLOO_SOCKET_IFNAME"] = value
    store = tempfile.mktemp()
    try:
        dist.init_process_group("gloo", init_method="file://" + store, rank=0, world_size=1)
        dist.destroy_process_group()
        out[value] = True
    except Exception:
        out[value] = False
print(json.dumps(out))
"""


def test_gloo_reads_its_interface_list_as_nccl_env_says() -> None:
    have = set(os.listdir("/sys/class/net"))
    assert "lo" in have
    lo = "lo"
    values = [lo, lo[0], "x", f"{lo},", f"{lo},{lo}", f"{lo},,{lo}", f" {lo}", f"^{lo}",
              f"={lo}", f"{lo}0", ","]  # fmt: skip
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OMP_NUM_THREADS": "1"}
    res = subprocess.run([sys.executable, "-c", CHILD, json.dumps(values)], cwd=REPO,
                         capture_output=True, text=True, env=env, timeout=240)  # fmt: skip
    assert res.returncode == 0, res.stderr
    started = json.loads(res.stdout.strip().splitlines()[-1])
    for value in values:
        names = nccl_env.gloo_interfaces(value)
        expected = all(n in have for n in names)  # "" is never an interface
        assert started[value] is expected, (value, names)
    assert started["x"] and not started[f"{lo}0"]  # one character ignored; no prefix match
