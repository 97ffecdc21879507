"""Remedies (knowledge/remedies.py): each finding's overrides, computed from its evidence and the
profile, validated through the field table; an invalid or empty remedy is never offered."""

from __future__ import annotations

from runai_tui.knowledge.diagnose import CODES, make_finding
from runai_tui.knowledge.findings import Finding, Remedy
from runai_tui.knowledge.remedies import (
    Context,
    attach,
    context_of,
    flow_list,
    overrides,
    propose,
)
from runai_tui.profiles import ProfileStore, apply_overrides
from runai_tui.shapes.models import Job, JobDetail, Pod

STORE = ProfileStore()
TCP = STORE.load("retinanet-tcp")
LOCAL = STORE.load("retinanet-local")


def remedy_of(
    code: str, profile=TCP, evidence: str = "", pod: str = "p", context=None
) -> Remedy | None:
    if code in CODES:
        finding = make_finding(code, pod, 1, evidence)
    else:  # a lint rule or a preflight check
        finding = Finding(code, "warning", "x", pod=pod, evidence=evidence)
    attach([finding], profile, context or Context())
    return finding.remedy


def test_shm_turns_large_shm_on_then_halves_the_loader_workers() -> None:
    off = apply_overrides(TCP, ["large_shm=false"])
    assert remedy_of("shm", off, "Bus error").sets == ("large_shm=true",)
    assert remedy_of("shm-loader-workers", off, "x").sets == ("large_shm=true",)
    on = apply_overrides(LOCAL, ["large_shm=true"])
    with_workers = apply_overrides(on, ['args=[--dataset, synthetic, --workers, "4"]'])
    remedy = remedy_of("shm", with_workers, "Bus error")
    assert remedy is not None and remedy.sets == ("trainer.workers=2",)
    assert remedy.why.startswith("4 → 2 DataLoader workers per process")
    assert apply_overrides(with_workers, remedy.sets).args == [
        "--dataset", "synthetic", "--workers", "2"
    ]  # fmt: skip
    assert remedy_of("shm", on, "Bus error") is None  # --workers 0 already: nothing to halve


def test_memlock_adds_ipc_lock_to_the_capabilities_and_keeps_the_node_part_as_text() -> None:
    profile = apply_overrides(TCP, ["capabilities=[SYS_NICE]"])
    finding = make_finding("memlock", "p", 1, "ibv_reg_mr failed")
    attach([finding], profile)
    assert finding.remedy is not None
    assert finding.remedy.sets == ("capabilities=[SYS_NICE, IPC_LOCK]",)
    assert "memlock" in finding.fix  # the nodes' ulimit is not a profile field
    rdma = STORE.load("retinanet-rdma")
    assert remedy_of("ib-ipc-lock", rdma, "x") is None  # it has IPC_LOCK


def test_tcp_fallback_on_a_profile_with_the_mellanox_nic_puts_nccl_back_on_ib() -> None:
    remedy = remedy_of("tcp-fallback", TCP, "NET/Socket : Using [0]net1")
    assert remedy is not None and remedy.sets == (
        "env.NCCL_IB_DISABLE=0",
        "env.NCCL_IB_HCA=mlx5",
        "env.NCCL_IB_GID_INDEX=3",
        "capabilities=[IPC_LOCK]",
    )
    assert remedy_of("tcp-fallback", LOCAL, "NET/Socket") is None  # no NIC asked: TCP meant


def test_a_wrong_socket_interface_gets_one_the_pod_has() -> None:
    gloo = "RuntimeError: [enforce fail at device.cc:84] ifa != nullptr. Unable to find address for: bad0"  # fmt: skip
    local = Context(interfaces=("eth0", "lo", "vm"), loopback_master=True, single_node=True)
    profile = apply_overrides(LOCAL, ["env.GLOO_SOCKET_IFNAME=bad0"])
    remedy = remedy_of("socket-ifname", profile, gloo, context=local)
    assert remedy is not None and remedy.sets == ("env.GLOO_SOCKET_IFNAME=lo",)
    # Preflight's evidence lists the pod's interfaces; the pod network's eth0 is picked.
    seen = Finding("socket-ifname", "error", "NCCL_SOCKET_IFNAME=net9 names no interface",
                   evidence="interfaces: lo eth0")  # fmt: skip
    attach([seen], TCP)
    assert seen.remedy is not None and seen.remedy.sets == ("env.NCCL_SOCKET_IFNAME=eth0",)
    assert remedy_of("socket-ifname", TCP, "no socket interface found") is None  # none known


def test_dataloader_killed_halves_the_workers_else_doubles_the_memory_limit() -> None:
    profile = apply_overrides(LOCAL, ['args=[--workers, "8"]'])
    assert remedy_of("dataloader-killed", profile, "x").sets == ("trainer.workers=4",)
    # The trainer's default (4 workers) when the profile passes none: the flag is added.
    bare = apply_overrides(LOCAL, ["args=[--dataset, synthetic]"])
    remedy = remedy_of("dataloader-killed", bare, "x")
    assert remedy is not None and remedy.sets == ("trainer.workers=2",)
    assert apply_overrides(bare, remedy.sets).args == ["--dataset", "synthetic", "--workers", "2"]
    no_trainer = apply_overrides(TCP, ["command=[python, train.py]", "memory.limit=8Gi"])
    assert remedy_of("dataloader-killed", no_trainer, "x").sets == ("memory.limit=16Gi",)


def test_cuda_oom_expandable_segments_then_half_the_batch_with_twice_the_accumulation() -> None:
    bare = apply_overrides(LOCAL, ["env.PYTORCH_ALLOC_CONF=backend:native"])
    assert remedy_of("cuda-oom", bare, "x").sets == (
        "env.PYTORCH_ALLOC_CONF=expandable_segments:True",
    )
    remedy = remedy_of("cuda-oom", LOCAL, "x")  # has expandable segments (from retinanet-tcp)
    assert remedy is not None and remedy.sets == ("trainer.grad-accum=2",)
    assert "global batch" in remedy.why and remedy.why.startswith("micro-batch 2 → 1 images")
    words = apply_overrides(LOCAL, remedy.sets).args
    assert words[words.index("--batch-size") + 1] == "2"  # the global batch stays
    assert words.count("--grad-accum") == 1 and words[words.index("--grad-accum") + 1] == "2"
    # An odd micro-batch does not halve: no remedy beyond the allocator's.
    odd = apply_overrides(LOCAL, ["trainer.batch-size=4", "trainer.grad-accum=4"])
    assert remedy_of("cuda-oom", odd, "x") is None


def detail(*pods: tuple[str, str]) -> JobDetail:
    return JobDetail(Job("j"), [Pod(name, node=node) for name, node in pods])


def test_straggler_and_hang_rank_exclude_the_node_of_that_rank() -> None:
    context = context_of(detail(("j-master-0", "n1"), ("j-worker-0", "n2"), ("j-worker-1", "n3")))
    straggler = make_finding("straggler", "j-master-0", 5, "rank 2: median step 2.2 s against")
    hang = make_finding("hang-rank", "j-worker-0", 0, "rank 1 group 0: entered 2")
    attach([straggler, hang], LOCAL, context)
    assert straggler.remedy is not None and straggler.remedy.sets == ("exclude_node=[n3]",)
    assert hang.remedy is not None and hang.remedy.sets == ("exclude_node=[n2]",)
    # One node only (the local cluster), or a node name the field table refuses: never offered.
    single = context_of(detail(("j-master-0", "local"), ("j-worker-0", "local")), local=True)
    assert remedy_of("hang-rank", LOCAL, "x", pod="j-worker-0", context=single) is None
    bad = context_of(detail(("j-master-0", "Bad_Node")))
    assert remedy_of("hang-rank", LOCAL, "x", pod="j-master-0", context=bad) is None
    assert propose(make_finding("hang-rank", "j-master-0", 0, "x"), LOCAL, bad) is not None


def test_pending_for_gpus_asks_for_fewer_workers_with_the_arithmetic() -> None:
    profile = apply_overrides(TCP, ["workers=4"])  # 1 + 4×1 GPUs
    said = "Unschedulable: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu. The workload requests 5 GPUs; this machine has 3 (3 free)."  # fmt: skip
    finding = Finding("pending", "warning", "not enough free GPUs", evidence=said)
    attach([finding], profile)
    assert finding.remedy is not None and finding.remedy.sets == ("workers=2",)
    assert "1 + 4×1 = 5 GPUs (3 free); 2 workers ask 1 + 2×1 = 3" in finding.remedy.why
    other = Finding("pending", "warning", "a PVC is not bound", evidence="x")
    attach([other], profile)
    assert other.remedy is None


def test_codes_without_a_remedy_keep_only_their_fix_and_overrides_are_listed_once() -> None:
    off = apply_overrides(TCP, ["large_shm=false"])
    found = [
        make_finding("nan-loss", "p", 1, "x"),
        make_finding("shm", "p", 2, "x"),
        make_finding("shm", "q", 3, "x"),
    ]
    assert attach(found, off) == 2
    assert found[0].remedy is None and found[0].fix
    assert [item for item, _ in overrides(found)] == ["large_shm=true"]


def test_flow_list_quotes_what_yaml_would_read_otherwise() -> None:
    assert flow_list(["IPC_LOCK", "--workers", "2", "true", "a b", "x:y"]) == (
        '[IPC_LOCK, --workers, "2", "true", "a b", "x:y"]'
    )
