"""Profile checks (runai_tui/knowledge/lint/checks.py): every rule fires on what it is about and stays quiet
otherwise, on profiles loaded the real way (YAML, extends, --set overrides)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from runai_tui.knowledge.docs import (
    EXAMPLE_PROFILE,
    LINT_EXAMPLES,
    LINT_RULES,
    example_findings,
    example_profile,
    lint_examples_text,
    lint_rules_table,
)
from runai_tui.knowledge.findings import Finding
from runai_tui.knowledge.lint.registry import RULES, exit_code, finding_line, lint
from runai_tui.profiles import Profile, ProfileStore, apply_overrides

REPO = Path(__file__).resolve().parents[2]

# A GPU job over TCP with nothing to say about it: every test below changes one thing.
CLEAN = """\
job_name: clean
image: img:1
workers: 1
gpus: 1
master_gpus: 1
memory: {request: 4Gi, limit: 8Gi}
env:
  NCCL_IB_DISABLE: "1"
  NCCL_DEBUG: WARN
  TORCH_FR_BUFFER_SIZE: "2000"
  TORCH_FR_DUMP_ON_TIMEOUT: "1"
large_shm: true
restart_policy: OnFailure
backoff_limit: 3
command: [/data/scripts/vision/shell/train-retinanet-ddp.sh]
args: [--ddp-comm-hook, bf16]
"""


@pytest.fixture
def store(tmp_path: Path) -> ProfileStore:
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "clean.yaml").write_text(CLEAN)
    return ProfileStore([shipped, tmp_path / "user"])


def profile(store: ProfileStore, *sets: str, text: str | None = None, add: str = "") -> Profile:
    """CLEAN (or text), plus YAML lines `add` (mapping keys with dots cannot go through --set),
    then the --set overrides."""
    base = store.validate_text("p", (CLEAN if text is None else text) + add)
    return apply_overrides(base, list(sets)) if sets else base


MULTUS = "annotations: {k8s.v1.cni.cncf.io/networks: ssa}\n"
MLXRDMA = "extended_resources: {openshift.io/mlxrdma: 1}\n"


def codes(found: list[Finding]) -> list[str]:
    return [f.code for f in found]


def only(found: list[Finding], code: str) -> list[Finding]:
    """The findings whose code starts with code."""
    return [f for f in found if f.code.startswith(code)]


def test_the_clean_profile_has_no_findings(store: ProfileStore) -> None:
    assert lint(profile(store)) == []
    assert exit_code([]) == 0


def test_flight_recorder_off_for_a_multi_pod_job_without_the_dump_variables(
    store: ProfileStore,
) -> None:
    found = only(lint(profile(store, "env.TORCH_FR_DUMP_ON_TIMEOUT=null")), "flight-recorder-off")
    assert [(f.severity, f.field) for f in found] == [("info", "env")]
    assert "TORCH_FR_DUMP_ON_TIMEOUT=1" in found[0].fix
    assert only(lint(profile(store, "env.TORCH_FR_BUFFER_SIZE=0")), "flight-recorder-off")
    older_names = CLEAN.replace("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE").replace(
        "TORCH_FR_DUMP_ON_TIMEOUT", "TORCH_NCCL_DUMP_ON_TIMEOUT"
    )
    assert not only(lint(profile(store, text=older_names)), "flight-recorder-off")


def test_memory_unit(store: ProfileStore) -> None:
    found = only(lint(profile(store, "memory.request=3846", "memory.limit=512m")), "memory-unit")
    assert [(f.field, f.severity) for f in found] == [
        ("memory.request", "warning"),
        ("memory.limit", "warning"),
    ]
    assert "3846 bytes" in found[0].message and "--set memory.request=3846Mi" in found[0].fix
    assert found[1].message == (
        "memory.limit 512m is 0.512 bytes to Kubernetes (a lower-case m is milli): "
        "did you mean 512Mi?"
    )
    assert "--set memory.limit=512Mi" in found[1].fix
    assert not only(lint(profile(store, "memory.request=4G", "memory.limit=16Gi")), "memory-unit")
    # A bare number of a megabyte or more is plausibly bytes; an exponent form is a number too.
    big = profile(store, "memory.request=4294967296", "memory.limit=1e9")
    assert not only(lint(big), "memory-unit")
    small = only(lint(profile(store, "memory.request=1e3")), "memory-unit")
    assert [f.field for f in small] == ["memory.request"]


def test_memory_limit_below_request_compares_across_units(store: ProfileStore) -> None:
    # 1000M = 1.0e9 bytes < 1Gi = 1.07e9 bytes
    found = only(
        lint(profile(store, "memory.request=1Gi", "memory.limit=1000M")),
        "memory-limit-below-request",
    )
    assert len(found) == 1 and found[0].severity == "error" and found[0].field == "memory.limit"
    assert "--set memory.limit=1Gi" in found[0].fix
    assert not only(lint(profile(store, "memory.limit=4096Mi")), "memory-limit-below-request")
    # 512m (0.512 bytes) is below any request written in bytes
    below = only(
        lint(profile(store, "memory.request=1", "memory.limit=512m")),
        "memory-limit-below-request",
    )
    assert len(below) == 1


def test_cuda_visible_devices_is_an_error_with_more_than_one_gpu(store: ProfileStore) -> None:
    one = only(lint(profile(store, "env.CUDA_VISIBLE_DEVICES=0")), "cuda-visible-devices")
    assert [(f.severity, f.field) for f in one] == [("warning", "env.CUDA_VISIBLE_DEVICES")]
    assert "CUDA_VISIBLE_DEVICES: null" in one[0].fix
    two = only(lint(profile(store, "env.CUDA_VISIBLE_DEVICES=0", "gpus=2")), "cuda-visible-devices")
    assert [f.severity for f in two] == ["error"]
    master = only(
        lint(profile(store, "env.CUDA_VISIBLE_DEVICES=0,1", "master_gpus=2")),
        "cuda-visible-devices",
    )
    assert [f.severity for f in master] == ["error"]
    hidden = only(lint(profile(store, "env.CUDA_VISIBLE_DEVICES=")), "cuda-visible-devices")
    assert [f.severity for f in hidden] == ["error"]  # an empty value hides the one GPU
    assert not only(lint(profile(store, "gpus=4")), "cuda-visible-devices")


def test_socket_ifname_needs_a_secondary_network(store: ProfileStore) -> None:
    found = only(lint(profile(store, "env.NCCL_SOCKET_IFNAME=net1")), "socket-ifname-network")
    assert [(f.severity, f.field) for f in found] == [("warning", "env.NCCL_SOCKET_IFNAME")]
    assert "k8s.v1.cni.cncf.io/networks" in found[0].fix
    with_network = profile(store, "env.NCCL_SOCKET_IFNAME=net1", add=MULTUS)
    assert not only(lint(with_network), "socket-ifname-network")
    for pod_side in ("eth0", "^lo,docker", "=eth0"):
        found = lint(profile(store, f"env.NCCL_SOCKET_IFNAME={pod_side}"))
        assert not only(found, "socket-ifname-network"), pod_side


def test_ib_ipc_lock(store: ProfileStore) -> None:
    for ib_on in ("env.NCCL_IB_DISABLE=0", "env.NCCL_IB_HCA=mlx5"):
        sets = ("env.NCCL_IB_DISABLE=0", ib_on)
        found = only(lint(profile(store, *sets, add=MLXRDMA)), "ib-ipc-lock")
        assert [(f.severity, f.field) for f in found] == [("warning", "capabilities")]
        assert "IPC_LOCK" in found[0].fix and "memlock" in found[0].fix
        locked = profile(store, *sets, "capabilities=[IPC_LOCK]", add=MLXRDMA)
        assert lint(locked) == []
    # NCCL_IB_DISABLE unset counts as on (NCCL tries IB by default)
    unset = profile(store, text=CLEAN.replace('  NCCL_IB_DISABLE: "1"\n', ""), add=MLXRDMA)
    assert "ib-ipc-lock" in codes(lint(unset))
    assert not only(lint(profile(store)), "ib-ipc-lock")  # NCCL_IB_DISABLE=1
    cpu = profile(store, "env.NCCL_IB_DISABLE=0", "gpus=0", "master_gpus=0")
    assert not only(lint(cpu), "ib-ipc-lock")  # no GPU, no NCCL


def test_ib_without_rdma_resource(store: ProfileStore) -> None:
    nic = "extended_resources: {openshift.io/mellanoxnics: 1}\n"
    nic_only = profile(store, "env.NCCL_IB_DISABLE=0", add=nic)
    found = only(lint(nic_only), "ib-without-rdma-resource")
    assert [(f.severity, f.field) for f in found] == [("warning", "extended_resources")]
    assert "sockets" in found[0].message and "NCCL_IB_DISABLE=1" in found[0].fix
    for resource in ("openshift.io/mlxrdma", "rdma/hca_shared_devices_a"):
        ok = profile(store, "env.NCCL_IB_DISABLE=0", add=f"extended_resources: {{{resource}: 1}}\n")
        assert not only(lint(ok), "ib-without-rdma-resource"), resource
    assert not only(lint(profile(store)), "ib-without-rdma-resource")


def test_rdma_resource_unused(store: ProfileStore) -> None:
    found = only(lint(profile(store, add=MLXRDMA)), "rdma-resource-unused")
    assert [(f.severity, f.field) for f in found] == [
        ("warning", "extended_resources.openshift.io/mlxrdma")
    ]
    used = profile(store, "env.NCCL_IB_DISABLE=0", "capabilities=[IPC_LOCK]", add=MLXRDMA)
    assert lint(used) == []


def test_shm_loader_workers_counts_the_trainer_default(store: ProfileStore) -> None:
    found = only(lint(profile(store, "large_shm=false")), "shm-loader-workers")
    assert [(f.severity, f.field) for f in found] == [("warning", "large_shm")]
    assert "4 data-loader workers" in found[0].message and "default" in found[0].message
    explicit = profile(store, "large_shm=false", "args=[--workers=2]")
    assert "2 data-loader workers per process (--workers)" in lint(explicit)[0].message
    assert not only(lint(profile(store, "large_shm=false", "args=[--workers, '0']")), "shm")
    assert not only(lint(profile(store)), "shm-loader-workers")  # large_shm on
    other = profile(store, "large_shm=false", "command=[python, train.py]")
    assert not only(lint(other), "shm-loader-workers")  # not the trainer
    torchrun = profile(store, "large_shm=false", "command=[torchrun, -m, trainer]")
    assert only(lint(torchrun), "shm-loader-workers")


def test_sync_bn_single_pod(store: ProfileStore) -> None:
    one_pod = CLEAN.replace("workers: 1\n", "").replace(
        "args: [--ddp-comm-hook, bf16]", "args: [--sync-bn]"
    )
    found = only(lint(profile(store, text=one_pod)), "sync-bn-single-pod")
    assert [(f.severity, f.field) for f in found] == [("info", "args")]
    assert exit_code(found) == 0
    assert not only(lint(profile(store, "args=[--sync-bn]")), "sync-bn")  # 2 pods
    no_sync = profile(store, text=one_pod.replace("[--sync-bn]", "[--sync-bn, --no-sync-bn]"))
    assert not only(lint(no_sync), "sync-bn-single-pod")


def test_nccl_debug_info(store: ProfileStore) -> None:
    found = only(lint(profile(store, "env.NCCL_DEBUG=INFO")), "nccl-debug-info")
    assert [(f.severity, f.field) for f in found] == [("info", "env.NCCL_DEBUG")]
    assert "NCCL_DEBUG=WARN" in found[0].fix
    assert not only(lint(profile(store)), "nccl-debug-info")


def test_clean_pod_policy_logs(store: ProfileStore) -> None:
    for policy in ("All", "Running"):
        found = only(lint(profile(store, f"clean_pod_policy={policy}")), "clean-pod-policy-logs")
        assert [(f.severity, f.field) for f in found] == [("info", "clean_pod_policy")]
        assert "clean_pod_policy=None" in found[0].fix
    assert not only(lint(profile(store, "clean_pod_policy=None")), "clean-pod-policy-logs")


def test_secret_in_env_never_shows_the_value(store: ProfileStore) -> None:
    sets = ("env.HF_TOKEN=hf_abc123", "env.WANDB_API_KEY=k-42", "env.DB_PASSWORD=pw")
    found = only(lint(profile(store, *sets)), "secret-in-env")
    assert [f.field for f in found] == ["env.HF_TOKEN", "env.WANDB_API_KEY", "env.DB_PASSWORD"]
    assert all(f.severity == "warning" and "--env-secret" in f.fix for f in found)
    text = " ".join(f.message + f.fix for f in found)
    assert "hf_abc123" not in text and "k-42" not in text and "pw " not in text
    quiet = ("env.HF_TOKEN=", "env.API_KEY=$(KEY_FROM)", "env.SSH_KEY_PATH=/run/s/key")
    assert not only(lint(profile(store, *quiet)), "secret-in-env")


def test_trainer_args_the_trainer_would_refuse(store: ProfileStore) -> None:
    bad = only(lint(profile(store, "args=[--batch-size, two]")), "trainer-args")
    assert [f.severity for f in bad] == ["error"] and "'two'" in bad[0].message
    split = only(lint(profile(store, "args=[--batch-size, '3', --grad-accum, '2']")), "trainer")
    assert split and "multiple of --grad-accum" in split[0].message
    assert not only(lint(profile(store, "args=[--batch-size, '4', --grad-accum, '2']")), "trainer")


def test_findings_come_errors_first_and_exit_code_counts_warnings(store: ProfileStore) -> None:
    found = lint(profile(store, "env.NCCL_DEBUG=INFO", "memory.limit=1Gi", "memory.request=2Gi"))
    assert [f.severity for f in found] == ["error", "info"]
    assert exit_code(found) == 1
    assert exit_code([f for f in found if f.severity == "info"]) == 0


def test_the_shipped_seed_profile_is_flagged_as_expected() -> None:
    store = ProfileStore()
    tcp = lint(store.load("retinanet-tcp"))
    assert codes(tcp) == [
        "memory-unit",
        "memory-unit",
        "cuda-visible-devices",
        "tcp-uncompressed-gradients",
        "nccl-debug-info",
    ]
    # The fix lint names: a bf16 hook silences the rule.
    fixed = apply_overrides(store.load("retinanet-tcp"), ["args=[--ddp-comm-hook,bf16]"])
    assert "tcp-uncompressed-gradients" not in codes(lint(fixed))
    rdma = codes(lint(store.load("retinanet-rdma")))
    assert not [c for c in rdma if c.startswith(("ib-", "rdma-"))]


def test_the_docs_lint_tables_are_generated_from_the_rules() -> None:
    assert LINT_RULES.doc == LINT_EXAMPLES.doc == "docs/profiles.md"
    doc = (REPO / LINT_RULES.doc).read_text(encoding="utf-8")
    assert LINT_RULES.current(doc) == lint_rules_table(), LINT_RULES.stale
    assert LINT_EXAMPLES.current(doc) == lint_examples_text(), LINT_EXAMPLES.stale
    assert "run python -m runai_tui.knowledge.docs docs/profiles.md" in LINT_RULES.stale
    for code, spec in RULES.items():
        assert re.search(rf"^\| `{re.escape(code)}` \| {spec.severity}", doc, re.M), code


def test_the_example_profile_has_no_findings() -> None:
    assert lint(example_profile()) == []


@pytest.mark.parametrize("code", list(RULES))
def test_each_rules_example_triggers_exactly_that_rule(code: str) -> None:
    found = example_findings(RULES[code])
    assert codes(found) == [code]
    assert found[0].message.strip() and found[0].fix.strip()
    assert found[0].message in lint_examples_text() and found[0].fix in lint_examples_text()


def test_the_example_overrides_are_read_as_the_cli_reads_them(tmp_path: Path) -> None:
    """The docs' example, saved and linted through the CLI, prints the docs' line."""
    (tmp_path / "lint-example.yaml").write_text(EXAMPLE_PROFILE)
    spec = RULES["trainer-args"]
    argv = ["lint", "lint-example.yaml"]
    for item in spec.example:
        argv += ["--set", item]
    run = subprocess.run(
        [sys.executable, "-m", "runai_tui.cli", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    (finding,) = example_findings(spec)
    assert run.returncode == 1, run.stderr
    assert run.stdout == finding_line("lint-example.yaml", finding) + "\n"


def test_a_long_job_without_a_way_back_is_warned(store: ProfileStore) -> None:
    def codes(*sets: str, step_time: float | None = None) -> list[tuple[str, str]]:
        found = lint(profile(store, *sets), step_time=step_time)
        return [
            (f.code, f.field) for f in found if f.code in ("no-way-back", "checkpoint-interval")
        ]

    assert codes("restart_policy=Never") == [("no-way-back", "restart_policy")]
    assert codes("backoff_limit=0") == [("no-way-back", "backoff_limit")]
    # 600 steps at the assumed 1 s are 10 minutes: short enough to need no way back
    assert codes("restart_policy=Never", "args=[--max-steps,600]") == []
    # ... but at 5 s a step, measured, they are 50 minutes, and the default 1000 steps apart
    assert codes("restart_policy=Never", "args=[--max-steps,600]", step_time=5.0) == [
        ("no-way-back", "restart_policy"),
        ("checkpoint-interval", "args"),
    ]
    assert codes("trainer.checkpoint-every=0") == [("checkpoint-interval", "args")]
    assert codes("trainer.checkpoint-every=1000") == []  # the default: 17 minutes at 1 s a step
    found = [f for f in lint(profile(store, "trainer.checkpoint-every=1000"), step_time=3.0)]
    hit = next(f for f in found if f.code == "checkpoint-interval")
    assert "every 1000 steps, 50 min apart (3 s a step, measured)" in hit.message
    assert hit.fix.startswith("--set trainer.checkpoint-every=300 ")
