"""The argv builder: the seed submission flag for flag, every field, and shell-safe display."""

from __future__ import annotations

import subprocess

import pytest

from runai_tui.profiles import Profile, ProfileStore
from runai_tui.runai.argv import display_argv
from runai_tui.runai.command import build_submit_argv

SEED_OPTIONS = [
    ("--image", "nvcr.io/nvidia/pytorch:26.02-py3"),
    ("--annotation", "k8s.v1.cni.cncf.io/networks=ssa"),
    ("--extended-resource", "openshift.io/mellanoxnics=1"),
    ("--large-shm", None),
    ("--workers", "2"),
    ("--gpu-devices-request", "1"),
    ("--cpu-memory-request", "3846"),
    ("--cpu-memory-limit", "8996"),
    ("--run-as-uid", "2000"),
    ("--run-as-gid", "2000"),
    ("--working-dir", "/data/scripts/vision/train"),
    ("-e", "PYTORCH_ALLOC_CONF=expandable_segments:True"),
    ("-e", "NCCL_DEBUG=INFO"),
    ("-e", "NCCL_IB_DISABLE=1"),
    ("-e", "NCCL_SOCKET_NTHREADS=2"),
    ("-e", "NCCL_NSOCKS_PERTHREAD=2"),
    ("-e", "NCCL_SOCKET_IFNAME=net1"),
    ("-e", "CUDA_VISIBLE_DEVICES=0"),
    ("--existing-pvc", "claimname=project-001,path=/data"),
]
# What the profile adds to the seed: the Flight Recorder on (docs/health.md, "When a job hangs").
FLIGHT_RECORDER = [("-e", "TORCH_FR_BUFFER_SIZE=2000"), ("-e", "TORCH_FR_DUMP_ON_TIMEOUT=1")]
# Where the profile departs from the seed on purpose: it recovers in place (the seed's Never and
# 0 left a Failed job waiting for a person; the profile's comment says why).
RECOVERY = [
    ("--restart-policy", "OnFailure"),
    ("--master-restart-policy", "OnFailure"),
    ("--backoff-limit", "3"),
]


def split_options(argv: list[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Pair each flag with its value (flags known to be boolean take none); return the tail."""
    boolean = {"--large-shm", "--host-ipc", "--host-network", "--no-master", "--master-no-pvcs"}
    options, i = [], 0
    while i < len(argv):
        if argv[i] == "--command":
            return options, argv[i:]
        if argv[i] in boolean:
            options.append((argv[i], None))
            i += 1
        else:
            options.append((argv[i], argv[i + 1]))
            i += 2
    return options, []


def test_retinanet_tcp_matches_the_seed_flag_for_flag() -> None:
    argv = build_submit_argv(ProfileStore().load("retinanet-tcp"))
    assert argv[:5] == ["runai", "training", "pytorch", "submit", "retinanet-tcp"]
    options, tail = split_options(argv[5:])
    assert sorted(options, key=str) == sorted(SEED_OPTIONS + FLIGHT_RECORDER + RECOVERY, key=str)
    assert tail == ["--command", "--", "/data/scripts/vision/shell/train-retinanet-ddp.sh"]


def test_every_field_becomes_its_flag() -> None:
    profile = Profile(
        name="p",
        job_name="j",
        project="team-a",
        image="img",
        image_pull_policy="Always",
        workers=3,
        gpus=2,
        master_gpus=1,
        cpu={"request": 0.5, "limit": 4},
        memory={"request": "1G", "limit": "2Gi"},
        run_as={"uid": 1, "gid": 2},
        working_dir="/w",
        env={"A": "1", "B": "x y"},
        pvcs=[{"claim": "c1", "path": "/a"}, {"claim": "c2", "path": "/b"}],
        annotations={"k": "v"},
        labels={"team": "vision"},
        extended_resources={"rdma/rdma": "1"},
        large_shm=True,
        capabilities=["IPC_LOCK", "SYS_NICE"],
        node_pools=["pool-a", "pool-b"],
        preemptibility="non-preemptible",
        restart_policy="OnFailure",
        master_restart_policy="Never",
        backoff_limit=0,
        clean_pod_policy="None",
        command=["python", "train.py"],
        args=["--lr", "0.1"],
    )
    argv = build_submit_argv(profile, name="override")
    assert argv[4] == "override"
    options, tail = split_options(argv[5:])
    assert options == [
        ("--project", "team-a"),
        ("--image", "img"),
        ("--image-pull-policy", "Always"),
        ("--annotation", "k=v"),
        ("--label", "team=vision"),
        ("--extended-resource", "rdma/rdma=1"),
        ("--large-shm", None),
        ("--workers", "3"),
        ("--gpu-devices-request", "2"),
        ("--master-gpu-devices-request", "1"),
        ("--cpu-core-request", "0.5"),
        ("--cpu-core-limit", "4"),
        ("--cpu-memory-request", "1G"),
        ("--cpu-memory-limit", "2Gi"),
        ("--run-as-uid", "1"),
        ("--run-as-gid", "2"),
        ("--working-dir", "/w"),
        ("-e", "A=1"),
        ("-e", "B=x y"),
        ("--existing-pvc", "claimname=c1,path=/a"),
        ("--existing-pvc", "claimname=c2,path=/b"),
        ("--capability", "IPC_LOCK"),
        ("--capability", "SYS_NICE"),
        ("--node-pools", "pool-a"),
        ("--node-pools", "pool-b"),
        ("--preemptibility", "non-preemptible"),
        ("--restart-policy", "OnFailure"),
        ("--master-restart-policy", "Never"),
        ("--backoff-limit", "0"),
        ("--clean-pod-policy", "None"),
        # master_gpus is a master setting: the master keeps the workers' NIC (no NCCL_* here).
        ("--master-extended-resource", "rdma/rdma=1"),
    ]
    assert tail == ["--command", "--", "python", "train.py", "--lr", "0.1"]


def test_the_new_submit_settings_become_their_flags() -> None:
    profile = Profile(
        name="p",
        priority="high",
        tolerations=["operator=Exists,key=nvidia.com/gpu,effect=NoSchedule"],
        node_type="dgx",
        required_topology_key="topology.kubernetes.io/rack",
        preferred_topology_key="kubernetes.io/hostname",
        termination_grace_period="120s",
        auto_delete_after="24h",
        host_ipc=True,
        host_network=True,
        supplemental_groups="1001,1002",
        env_secrets={"WANDB_API_KEY": "wandb,key=api-key"},
        no_master=True,
    )
    options, _tail = split_options(build_submit_argv(profile)[5:])
    assert options == [
        ("--priority", "high"),
        ("--toleration", "operator=Exists,key=nvidia.com/gpu,effect=NoSchedule"),
        ("--node-type", "dgx"),
        ("--required-pod-topology-key", "topology.kubernetes.io/rack"),
        ("--preferred-pod-topology-key", "kubernetes.io/hostname"),
        ("--termination-grace-period", "120s"),
        ("--auto-deletion-time-after-completion", "24h"),
        ("--host-ipc", None),
        ("--host-network", None),
        ("--supplemental-groups", "1001,1002"),
        ("--env-secret", "WANDB_API_KEY=wandb,key=api-key"),
        ("--no-master", None),
    ]


def test_master_settings_keep_the_workers_nic_and_nccl_environment() -> None:
    workers = {
        "extended_resources": {"openshift.io/mellanoxnics": "1", "rdma/rdma": "1"},
        "env": {"NCCL_IB_HCA": "mlx5", "NCCL_DEBUG": "INFO", "OTHER": "x"},
    }
    # No master setting: the master is built from the worker spec, nothing is repeated.
    plain = build_submit_argv(Profile(name="p", **workers))
    assert not [w for w in plain if w.startswith("--master")]
    # Any master setting: the NIC and NCCL_* go to the master too, unless it sets its own.
    profile = Profile(
        name="p",
        master_gpus=0,  # zero emits nothing: still built from the worker spec
        master_cpu={"request": 2},
        master_extended_resources={"rdma/rdma": "2"},
        master_env={"NCCL_DEBUG": "WARN"},
        **workers,
    )
    options, _tail = split_options(build_submit_argv(profile)[5:])
    master = [o for o in options if o[0].startswith("--master")]
    assert master == [
        ("--master-cpu-core-request", "2"),
        ("--master-extended-resource", "rdma/rdma=2"),
        ("--master-environment-variable", "NCCL_DEBUG=WARN"),
        ("--master-extended-resource", "openshift.io/mellanoxnics=1"),
        ("--master-environment-variable", "NCCL_IB_HCA=mlx5"),
    ]


def test_args_without_command_follow_a_bare_double_dash() -> None:
    argv = build_submit_argv(Profile(name="p", image="i", args=["-a", "b"]))
    assert argv[-3:] == ["--", "-a", "b"] and "--command" not in argv


HOSTILE = [
    "plain",
    "two words",
    "it's",
    'say "hi"',
    "$(rm -rf /)",
    "`id`",
    "a\nb",
    "tab\there",
    "back\\slash",
    "",
    "ünïcode ✓",
    "*glob?",
    "~user",
    "x;y|z&",
]


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_display_round_trips_through_a_real_shell(shell: str) -> None:
    argv = ["runai", "training", "pytorch", "submit", "j", "-e", *[f"V={w}" for w in HOSTILE]]
    line = display_argv(argv)
    assert "\n" not in line  # the dry run prints one line
    if shell == "sh" and "$'" in line:
        # $'...' is POSIX.1-2024; dash before 0.5.12 lacks it. Check the plain-quoted words only.
        argv = [w for w in argv if not any(ord(c) < 32 for c in w)]
        line = display_argv(argv)
    out = subprocess.run(
        [shell, "-c", f"printf '%s\\0' {line}"], capture_output=True, check=True
    ).stdout
    assert out.decode().split("\0")[:-1] == argv


def test_hostile_values_reach_argv_unchanged() -> None:
    profile = Profile(name="p", image="i", env={"X": HOSTILE[4]}, command=[HOSTILE[5], HOSTILE[6]])
    argv = build_submit_argv(profile)
    assert "X=$(rm -rf /)" in argv and argv[-2:] == ["`id`", "a\nb"]


def test_zero_gpus_leave_the_flags_out() -> None:
    # The CLI types GPU counts as positiveInt; a CPU-only pod is said by omitting the flags.
    argv = build_submit_argv(Profile(name="p", image="i", gpus=0, master_gpus=0))
    assert "--gpu-devices-request" not in argv and "--master-gpu-devices-request" not in argv
