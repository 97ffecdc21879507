"""The preflight probe and its checklist: the real script run by a real POSIX sh with a pod's
environment, and the checklist rules for what this machine cannot show (IB, GPUs)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from runai_tui.knowledge.probes.preflight import (
    COMMAND,
    FAIL,
    MARK,
    PASS,
    SKIP,
    checklist,
    render_text,
    status,
)
from runai_tui.knowledge.probes.probe_facts import parse_facts


def probe(env: dict[str, str]) -> str:
    """Run the probe as exec would: `sh -c SCRIPT`, no TTY, stdin closed, the pod's env."""
    sh = shutil.which("dash") or shutil.which("sh")
    assert sh
    # The image's python first, as in a PyTorch container (here: the venv's, which has torch).
    path = f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"
    base = {"PATH": path, "HOME": os.environ.get("HOME", "/")}
    out = subprocess.run(
        [sh, *COMMAND[1:]],
        env={**base, **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def statuses(output: str) -> dict[str, tuple[str, str]]:
    return {i.code: (status(i), i.message) for i in checklist("p", output).items}


def test_probe_in_a_real_shell_with_ib_asked_for_on_a_machine_without_it() -> None:
    out = probe(
        {
            "NCCL_IB_HCA": "mlx5",
            "NCCL_SOCKET_IFNAME": "=nosuchif0,lo",
            "RUNAI_NUM_OF_GPUS": "1",
            "MASTER_ADDR": "no-such-host.invalid",
            "MASTER_PORT": "29500",
            "NVIDIA_VISIBLE_DEVICES": "void",  # a pod given no GPU, whatever this machine has
        }
    )
    assert all(line.startswith("@@pf ") for line in out.splitlines())
    got = statuses(out)
    # No RDMA device here: IB was asked for, so memlock is judged and rdma fails.
    assert got["rdma"] == (FAIL, "NCCL_IB_HCA=mlx5 but /sys/class/infiniband has no device")
    assert got["memlock"][0] == (PASS if "unlimited" in got["memlock"][1] else FAIL)
    assert got["gpus"][0] == FAIL and "1 requested" in got["gpus"][1]
    assert got["socket-ifname"][0] == PASS  # `lo` exists; `=nosuchif0` alone would not
    assert got["master"][0] == FAIL and "no-such-host.invalid does not resolve" in got["master"][1]
    assert got["python"][0] == PASS and got["torch"] == (PASS, f"torch {torch_version()}")
    assert "NCCL_IB_HCA=mlx5" in got["nccl-env"][1]
    assert "probe" not in got  # the end marker was printed


def torch_version() -> str:
    from importlib.metadata import version

    return version("torch")


def test_probe_with_ib_off_skips_what_cannot_apply() -> None:
    got = statuses(probe({"NCCL_IB_DISABLE": "1", "RUNAI_NUM_OF_GPUS": "0"}))
    assert got["memlock"][0] == got["rdma"][0] == got["gpus"][0] == SKIP
    assert "NCCL_IB_DISABLE=1" in got["rdma"][1]
    assert got["socket-ifname"] == (SKIP, "NCCL_SOCKET_IFNAME is not set: NCCL picks one")
    assert got["master"][0] == SKIP


def facts(**values: str) -> str:
    lines = [f"@@pf {k} {v}" for k, v in values.items() if k != "env"]
    lines += [f"@@pf env {kv}" for kv in values.get("env", "").split()]
    return "\n".join(["motd noise", *lines, "@@pf end ok"])


RDMA_POD = {
    "memlock": "unlimited",
    "shm_kb": str(64 * 1024 * 1024),
    "gpus_visible": "8 nvidia-smi",
    "gpus_requested": "8",
    "cuda_visible_devices": "(unset)",
    "rdma": "mlx5_2 mlx5_3",
    "netifs": "eth0 lo net1",
    "env": "NCCL_IB_HCA=mlx5 NCCL_SOCKET_IFNAME=net1 NCCL_IB_GID_INDEX=3",
    "master_addr": "job-master-0",
    "master_port": "29500",
    "python": "3.12.3",
    "torch": "2.14.1",
    "master": "open 10.0.0.1",
    "smi": "|GPU 00000000:07:00.0",  # nvidia-smi -q: one GPU, nothing wrong (test_gpu_health.py)
    "kernel_log": "ok",
}


def test_a_healthy_rdma_pod_passes_every_check() -> None:
    got = statuses(facts(**RDMA_POD))
    assert {k: s for k, (s, _) in got.items()} == dict.fromkeys(got, PASS)
    assert got["shm"][1] == "/dev/shm is 64.0 GiB"
    assert got["gpus"][1] == "8 GPU(s) visible (nvidia-smi), 8 requested"


@pytest.mark.parametrize(
    "change, check, reason",
    [
        ({"memlock": "64"}, "memlock", "ulimit -l is 64 KiB with IB on"),
        ({"shm_kb": "65536"}, "shm", "/dev/shm is 64 MiB: DataLoader workers will hit bus errors"),
        ({"shm_kb": "missing"}, "shm", "/dev/shm does not exist"),
        ({"gpus_visible": "4 nvidia-smi"}, "gpus", "4 GPU(s) visible (nvidia-smi), 8 requested"),
        ({"cuda_visible_devices": "0"}, "gpus", "1 GPU(s) visible"),
        ({"rdma": ""}, "rdma", "NCCL_IB_HCA=mlx5 but /sys/class/infiniband has no device"),
        ({"rdma": "bnxt_re0"}, "rdma", "NCCL_IB_HCA=mlx5 matches none of the RDMA devices"),
        ({"netifs": "eth0 lo"}, "socket-ifname", "NCCL_SOCKET_IFNAME=net1 names no interface"),
        ({"master": "closed 10.0.0.1 [Errno 111] Connection refused"}, "master", "does not answer"),
        ({"master": "unresolved [Errno -2] Name or service not known"}, "master", "not resolve"),
        ({"torch": "none"}, "torch", "torch is not installed"),
    ],
)
def test_each_broken_fact_fails_its_check_with_a_fix(change, check, reason) -> None:
    result = checklist("p", facts(**{**RDMA_POD, **change}))
    failed = [i for i in result.items if status(i) == FAIL]
    assert [i.code for i in failed] == [check]
    assert reason in failed[0].message and failed[0].fix
    assert result.failed


def test_a_cut_probe_output_fails_and_nothing_passes_by_default() -> None:
    got = statuses("@@pf memlock unlimited\n")
    assert got["probe"][0] == FAIL
    assert got["python"][0] == FAIL and got["shm"][0] == FAIL
    assert parse_facts("@@pf env A=1\n@@pf env B=2\nnoise", MARK) == {"env": ["A=1", "B=2"]}


def test_text_output_keeps_pod_values_inert() -> None:
    from runai_tui.knowledge.probes.preflight import Preflight

    hostile = facts(**{**RDMA_POD, "env": "NCCL_X=\x1b[2J[red]x[/]"})
    text = render_text(Preflight([checklist("pod\x1b[1m", hostile)]))
    assert "\x1b" not in text and "NCCL_X=^[[2J[red]x[/]" in text and "pod^[[1m" in text


def test_failed_checks_carry_remedies_against_the_submitted_profile() -> None:
    from runai_tui.knowledge.probes.preflight import Preflight, item_dict, render_text
    from runai_tui.knowledge.remedies import attach
    from runai_tui.profiles import ProfileStore, apply_overrides

    profile = apply_overrides(ProfileStore().load("retinanet-rdma"), ["large_shm=false"])
    result = checklist("p", facts(**{**RDMA_POD, "netifs": "eth0 lo", "shm_kb": "65536"}))
    failed = [i for i in result.items if status(i) == FAIL]
    attach(failed, profile)
    remedies = {i.code: item_dict(i)["remedy"] for i in failed}
    assert {code: remedy["set"] for code, remedy in remedies.items()} == {
        "shm": ["large_shm=true"],
        "socket-ifname": ["env.NCCL_SOCKET_IFNAME=eth0"],
    }
    item = item_dict(failed[0])
    assert item == {"status": "fail", **failed[0].to_dict()}  # the one shape, and its status
    text = render_text(Preflight([result]))
    assert (
        "remedy: --set env.NCCL_SOCKET_IFNAME=eth0  (NCCL_SOCKET_IFNAME names eth0, an "
        "interface seen in the pod (eth0 lo))" in text
    )
