"""The pod entry script's decisions for Run:ai-like environments (dry run), and its real exec."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # trains or runs the real model

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "train-retinanet-ddp.sh"


@pytest.fixture
def bin_dir(tmp_path):
    """A PATH with the basic tools and no torchrun or nvidia-smi unless a test adds them."""
    directory = tmp_path / "bin"
    directory.mkdir()
    for tool in ("bash", "awk", "grep", "dirname", "env", "cat"):
        found = shutil.which(tool, path="/usr/bin:/bin")
        assert found, f"{tool} is needed by the entry script"
        (directory / tool).symlink_to(found)
    return directory


def fake_tool(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/bash\n" + body + "\n")
    path.chmod(0o755)


def launch(bin_dir, env, args=(), script=SCRIPT, dry_run=True):
    full_env = {"PATH": str(bin_dir), **env}
    if dry_run:
        full_env["TRAIN_LAUNCH_DRY_RUN"] = "1"
    return subprocess.run(
        [str(bin_dir / "bash"), str(script), *args],
        env=full_env, capture_output=True, text=True, timeout=30,
    )  # fmt: skip


def final_argv(result) -> list[str]:
    assert result.returncode == 0, result.stderr
    line = next(
        x for x in result.stdout.splitlines() if x.startswith("train-retinanet-ddp: dry run:")
    )
    return shlex.split(line.split("dry run:", 1)[1])


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_no_environment_runs_standalone_on_cpu(bin_dir):
    argv = final_argv(launch(bin_dir, {}, ["--epochs", "1"]))
    assert argv[:3] == ["python3", "-m", "torch.distributed.run"]
    assert option(argv, "--nnodes") == "1" and option(argv, "--nproc-per-node") == "1"
    assert "--standalone" in argv and "--node-rank" not in argv
    assert argv[-4:] == ["-m", "trainer", "--epochs", "1"]


def test_runai_master_pod(bin_dir):
    env = {
        "PET_NNODES": "3", "PET_NODE_RANK": "0", "RANK": "0", "WORLD_SIZE": "3",
        "PET_RDZV_BACKEND": "c10d", "PET_RDZV_ENDPOINT": "stale:1",
        "MASTER_ADDR": "retinanet-master-0", "MASTER_PORT": "23456", "RUNAI_NUM_OF_GPUS": "1",
    }  # fmt: skip
    result = launch(bin_dir, env)
    argv = final_argv(result)
    assert option(argv, "--nnodes") == "3"
    assert option(argv, "--nproc-per-node") == "1"
    # c10d hosted by the master: a pod that restarts joins the next round (static never re-forms)
    assert option(argv, "--rdzv-backend") == "c10d"
    assert option(argv, "--rdzv-endpoint") == "retinanet-master-0:23456"
    assert option(argv, "--rdzv-conf") == "is_host=true,read_timeout=600"
    assert option(argv, "--local-addr") == "retinanet-master-0"  # sorts first: global rank 0
    assert option(argv, "--max-restarts") == "3"
    assert "WORLD_SIZE=3 is ignored" in result.stdout
    assert "nproc-per-node=1 (RUNAI_NUM_OF_GPUS=1: one process per GPU)" in result.stdout


def test_worker_pod_falls_back_to_pod_rank_and_ignores_process_world_size(bin_dir):
    env = {
        "PET_NNODES": "3", "RANK": "2", "WORLD_SIZE": "24",
        "MASTER_ADDR": "m", "MASTER_PORT": "1234", "RUNAI_NUM_OF_GPUS": "8",
    }  # fmt: skip
    result = launch(bin_dir, {**env, "POD_NAME": "retinanet-worker-1", "PET_MAX_RESTARTS": "5"})
    argv = final_argv(result)
    assert option(argv, "--rdzv-conf") == "is_host=false,read_timeout=600"
    assert option(argv, "--local-addr") == "retinanet-worker-1"
    assert option(argv, "--max-restarts") == "5"
    assert option(argv, "--nproc-per-node") == "8"
    assert "node-rank=2 (RANK (pod index))" in result.stdout


@pytest.mark.parametrize(("gpus", "expected"), [("0", "1"), ("0.5", "1"), ("2", "2")])
def test_runai_gpu_count(bin_dir, gpus, expected):
    argv = final_argv(launch(bin_dir, {"RUNAI_NUM_OF_GPUS": gpus}))
    assert option(argv, "--nproc-per-node") == expected


def test_visible_gpus_when_runai_count_is_absent(bin_dir):
    assert (
        option(final_argv(launch(bin_dir, {"CUDA_VISIBLE_DEVICES": "0,1,2"})), "--nproc-per-node")
        == "3"
    )
    assert (
        option(final_argv(launch(bin_dir, {"CUDA_VISIBLE_DEVICES": ""})), "--nproc-per-node") == "1"
    )
    fake_tool(bin_dir, "nvidia-smi", 'echo "GPU 0: H100 (UUID: a)"; echo "GPU 1: H100 (UUID: b)"')
    assert option(final_argv(launch(bin_dir, {})), "--nproc-per-node") == "2"


def test_local_cluster_two_nodes_one_cpu_process(bin_dir):
    env = {
        "PET_NNODES": "2", "PET_NODE_RANK": "1", "RANK": "1", "WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "40123", "RUNAI_NUM_OF_GPUS": "0",
    }  # fmt: skip
    argv = final_argv(launch(bin_dir, {**env, "POD_NAME": "j-worker-0", "RUNAI_JOB_UUID": "u1"}))
    assert argv[argv.index("--nnodes") : argv.index("-m", 3)] == [
        "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
        "--rdzv-endpoint", "127.0.0.1:40123", "--rdzv-id", "u1", "--rdzv-conf", "is_host=false,read_timeout=600",
        "--local-addr", "j-worker-0", "--max-restarts", "3",
    ]  # fmt: skip


def test_elastic_range_uses_c10d(bin_dir):
    env = {"PET_NNODES": "1:4", "PET_NODE_RANK": "0", "MASTER_ADDR": "m", "MASTER_PORT": "9"}
    argv = final_argv(launch(bin_dir, env))
    assert option(argv, "--rdzv-backend") == "c10d" and option(argv, "--rdzv-endpoint") == "m:9"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PET_NNODES": "2", "PET_NODE_RANK": "0"}, "needs MASTER_ADDR"),
        (
            {"PET_NNODES": "2", "PET_NODE_RANK": "2", "MASTER_ADDR": "m"},
            "node rank 2 (from PET_NODE_RANK) >= nnodes 2",
        ),
        ({"RUNAI_NUM_OF_GPUS": "lots"}, "RUNAI_NUM_OF_GPUS='lots': expected a number"),
        ({"PET_NNODES": "two"}, "PET_NNODES='two'"),
        ({"PET_MAX_RESTARTS": "-1"}, "PET_MAX_RESTARTS='-1'"),
    ],
)
def test_bad_environment_is_one_clear_line(bin_dir, env, message):
    result = launch(bin_dir, env)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_torchrun_on_path_is_preferred_and_really_execd(bin_dir, tmp_path):
    fake_tool(bin_dir, "torchrun", 'echo "PYTHONPATH=$PYTHONPATH"; printf "ARG=%s\\n" "$@"')
    result = launch(bin_dir, {}, ["--data-root", "/data/with space"], dry_run=False)
    assert result.returncode == 0, result.stderr
    args = [line[4:] for line in result.stdout.splitlines() if line.startswith("ARG=")]
    assert args[-4:] == ["-m", "trainer", "--data-root", "/data/with space"]
    assert f"PYTHONPATH={REPO}" in result.stdout


def test_pvc_layout_finds_the_trainer_next_door(bin_dir, tmp_path):
    root = tmp_path / "vision"
    (root / "shell").mkdir(parents=True)
    (root / "train" / "trainer").mkdir(parents=True)
    script = root / "shell" / SCRIPT.name
    shutil.copy(SCRIPT, script)
    fake_tool(bin_dir, "torchrun", 'echo "PYTHONPATH=$PYTHONPATH"')
    result = launch(bin_dir, {"PYTHONPATH": "/keep/me"}, script=script, dry_run=False)
    assert result.returncode == 0, result.stderr
    assert f"PYTHONPATH={os.path.realpath(root / 'train')}:/keep/me" in result.stdout


@pytest.mark.parametrize(
    ("body", "code", "said"),
    [
        # The trainer named a fault no restart cures: exit 2 (permanent under ExitCode).
        ('echo "trainer: error: --data-root /x: no such directory" >>"$TRAIN_PERMANENT_FAULT_FILE"'
         "; exit 1", 2, "permanent fault, not restarted (exit 2): trainer: error: --data-root"),
        # torchrun gave up with no such fault named: a new pod may pass (retryable, 128-255).
        ("exit 1", 200, "torchrun exited with code 1 and no permanent fault was named: exit 200"),
        ("exit 137", 137, ""),  # killed: as it is, retryable already
        ("exit 0", 0, ""),
    ],
)  # fmt: skip
def test_the_exit_code_says_whether_a_restart_can_cure_it(bin_dir, tmp_path, body, code, said):
    fake_tool(bin_dir, "torchrun", body)
    result = launch(bin_dir, {"TMPDIR": str(tmp_path)}, dry_run=False)
    assert result.returncode == code, result.stdout + result.stderr
    assert said in result.stdout
    (fault_file,) = tmp_path.glob("train-permanent-fault.*")  # no rm on this PATH: left
    assert bool(fault_file.read_text()) == (code == 2)  # the trainer's word, only when it spoke
