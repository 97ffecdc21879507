"""THE profile field table: every field a profile may set, written once.

Everything else is derived from these rows: the validation schema (schema.py), the argv builder
(runai_tui/runai/command.py turns each row's `flag` and `emit` into argv elements — the one place
where a field becomes a command-line word), `runai-tui profiles fields`, the field table of
docs/profiles.md (docs.py; a test keeps it current) and the CLI generation check
(runai_tui/runai/installed.py: the installed CLI's help decides, the `cli` column only when
help cannot be read; the generations' names are in runai_tui/shapes/cli_generations.py). The local
cluster's own flag parser
(runai_local/flags.py) is checked against these rows by tests/local/test_flags.py, and the
`Profile` dataclass's annotated attributes (schema.py) by tests/core/test_fields.py.

Row order is argv order: the builder emits flags in the order of this table.
Flag spellings and generations: docs/runai-cli.md §1.3 (v2.25), §1.4 (drift)
and §7 (field → flag per generation).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import NamedTuple

from runai_tui.profiles import validators as v
from runai_tui.shapes.cli_generations import ALL, V2, V2_LATE_ONLY
from runai_tui.util.duration import DurationError, go_seconds

# ExitCode: Kubeflow's PyTorchJob policy (exit 1-127 permanent, 128-255 retryable); the local
# cluster takes it; a runai CLI whose --restart-policy lists only the other three refuses it.
RESTART = ("Always", "OnFailure", "Never", "ExitCode")

Check = Callable[[object], object]  # a value's check: the normalised value, or raises Invalid


class SubField(NamedTuple):
    """A fixed sub-field of a group (cpu.request…), with its own flag."""

    name: str
    check: Check
    help: str
    flag: str


class Field(NamedTuple):
    """One row: `name`, `help`, `example` (a YAML value, shown in docs/profiles.md and `profiles
    fields`), `kind` ("value" | "list" | "group" | "mapping": how it is validated and merged),
    then the optional columns."""

    name: str
    help: str
    example: str
    kind: str
    check: Check | None = None  # value/list: the value's check
    sub: tuple[SubField, ...] = ()  # group: its fixed sub-fields
    key: Callable[[object], str] | None = None  # mapping: each key's check
    value: Check | None = None  # mapping: each value's check
    # How command.py spells it: "" (no flag), "positional", "value", "count" (left out at 0),
    # "switch" (a bare flag when true), "group" (each sub-field's flag), "repeat" (the flag once
    # per item, formatted with `item`), "command" / "args" (after `--`, last).
    emit: str = ""
    flag: str = ""
    item: str = "{}"  # repeat: one item as a flag value ({key}/{value} for mappings)
    cli: frozenset[str] = ALL  # CLI generations whose `submit` knows the flag
    # A protection a shipped profile adds, which a CLI outside `cli` goes without: the submit
    # drops the field, with one warning, when a shipped profile set it and the user did not
    # (runai_tui/runai/submission.py `degrade`); a field the user sets is still refused.
    degrades_on_older_cli: bool = False
    text: bool = False  # `--set` takes the value exactly as written (no YAML parsing)
    empty: object = None  # the Profile attribute's value when the field is not set

    @property
    def flags(self) -> list[str]:
        return [s.flag for s in self.sub] if self.sub else [self.flag] if self.flag else []


def _dns_list(value: object) -> list[str]:
    return v.list_of(v.dns_label, "[pool-a, pool-b]")(value)


_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _node_name(value: object) -> str:
    """A Kubernetes node name: a DNS-1123 subdomain (`ip-10-0-0-7.ec2.internal`)."""
    text = v.string(value)
    if len(text) > 253 or not _NODE_NAME.match(text):
        raise v.Invalid(
            "expected a node name: lower-case letters, digits, '-' and '.', at most 253 "
            "characters (e.g. 'node-7')"
        )
    return text


def _node_names(value: object) -> list[str]:
    return v.list_of(_node_name, "[node-7]")(value)


def _capabilities(value: object) -> list[str]:
    return v.list_of(v.capability, "[IPC_LOCK]")(value)


_UID = v.int_range(0, 2**31 - 1)
_CORES = v.cores(1024)
PRIORITIES = ("very-low", "low", "medium-low", "medium", "medium-high", "high", "very-high")


def _duration(value: object) -> str:
    """A Go duration as the CLI takes it: 30s, 5m, 1h30m, 24h (never negative)."""
    if isinstance(value, str):
        with contextlib.suppress(DurationError):
            go_seconds(value.strip())
            return value.strip()
    raise v.Invalid("expected a duration such as 30s, 5m or 24h")


def _groups(value: object) -> str:
    """Group IDs, as the CLI's comma-separated `ints`: [1001, 1002] or "1001,1002"."""
    items = value if isinstance(value, list) else str(value).split(",")
    try:
        ids = [int(str(item).strip()) for item in items if str(item).strip()]
    except ValueError:
        raise v.Invalid("expected group IDs, e.g. [1001, 1002]") from None
    if not ids or any(i < 0 or i >= 2**31 for i in ids) or isinstance(value, bool):
        raise v.Invalid("expected group IDs, e.g. [1001, 1002]")
    return ",".join(str(i) for i in ids)


_TOLERATION_KEYS = ("operator", "key", "value", "effect", "seconds")


def _tolerations(value: object) -> list[str]:
    """Tolerations as the CLI takes them (`operator=Exists,key=K[,value=V][,effect=E][,seconds=N]`),
    from mappings with those keys or from that text."""
    example = "[{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]"
    if not isinstance(value, list):
        raise v.Invalid(f"expected a list of tolerations, e.g. {example}")
    out = []
    for item in value:
        if isinstance(item, str) and item.strip() and " " not in item:
            out.append(item.strip())
            continue
        if not isinstance(item, dict) or not set(item) <= set(_TOLERATION_KEYS):
            raise v.Invalid(f"expected entries with {', '.join(_TOLERATION_KEYS)}, e.g. {example}")
        operator = str(item.get("operator", "Equal"))
        if operator not in ("Equal", "Exists") or (operator == "Equal" and "value" not in item):
            raise v.Invalid(f"expected operator Exists, or Equal with a value, e.g. {example}")
        parts = [f"operator={operator}"]
        parts += [f"{k}={item[k]}" for k in _TOLERATION_KEYS[1:] if item.get(k) not in (None, "")]
        if any("," in p.split("=", 1)[1] for p in parts):
            raise v.Invalid(f"expected values without ',', e.g. {example}")
        out.append(",".join(parts))
    return out


def _secret_ref(value: object) -> str:
    """A Kubernetes secret key: {secret: NAME, key: KEY} or the CLI's own `NAME,key=KEY`."""
    secret = key = ""
    if isinstance(value, dict) and set(value) == {"secret", "key"}:
        secret, key = str(value["secret"]), str(value["key"])
    elif isinstance(value, str) and ",key=" in value:
        secret, key = value.split(",key=", 1)
    if re.match(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", secret) and key and "," not in key:
        return f"{secret},key={key}"
    raise v.Invalid("expected {secret: NAME, key: KEY} or NAME,key=KEY, e.g. wandb,key=api-key")


# Field(name, help, example, kind, check, ...keywords): see the Field class above.
FIELDS: tuple[Field, ...] = (
    Field("description", "what the profile is for", "RetinaNet over TCP", "value",
          v.string, text=True, empty=""),
    Field("extends", "name of the profile this one inherits from", "retinanet-tcp", "value",
          v.nonempty, text=True),
    # Not a runai flag (no `emit`): the TUI's `F` forwards this port of the master (TensorBoard).
    Field("tensorboard_port", "the master's TensorBoard port, forwarded by the TUI's F key",
          "6006", "value", v.int_range(1, 65535)),
    Field("job_name", "default job name (DNS-1123 label, at most 63)", "retinanet-tcp", "value",
          v.dns_label, emit="positional", text=True),
    Field("project", "Run:ai project (-p)", "team-a", "value", v.dns_label,
          emit="value", flag="--project", text=True),
    Field("image", "container image", "nvcr.io/nvidia/pytorch:26.02-py3", "value", v.no_space,
          emit="value", flag="--image", text=True),
    Field("image_pull_policy", "Always, IfNotPresent or Never", "IfNotPresent", "value",
          v.one_of("Always", "IfNotPresent", "Never"), emit="value", flag="--image-pull-policy"),
    Field("annotations", "pod annotations (e.g. the Multus network)",
          "{k8s.v1.cni.cncf.io/networks: ssa}", "mapping",
          key=v.qualified_key, value=v.annotation_value,
          emit="repeat", flag="--annotation", item="{key}={value}", empty={}),
    Field("labels", "pod labels", "{team: vision}", "mapping",
          key=v.qualified_key, value=v.label_value,
          emit="repeat", flag="--label", item="{key}={value}", empty={}),
    Field("extended_resources", "extended resources per pod (NICs, RDMA VFs)",
          "{openshift.io/mellanoxnics: 1}", "mapping",
          key=v.qualified_key, value=v.resource_amount,
          emit="repeat", flag="--extended-resource", item="{key}={value}", empty={}),
    Field("large_shm", "a large /dev/shm (DataLoader workers need it)", "true", "value", v.boolean,
          emit="switch", flag="--large-shm", empty=False),
    Field("workers", "worker pods (the master pod is extra)", "2", "value", v.int_range(1, 1000),
          emit="value", flag="--workers"),
    # positiveInt in the CLI: zero GPUs is said by leaving the flag out. CLI v1 spells it -g/--gpu.
    Field("gpus", "GPUs per worker pod", "1", "value", v.int_range(0, 64),
          emit="count", flag="--gpu-devices-request", cli=V2),
    Field("master_gpus", "GPUs for the master pod", "1", "value", v.int_range(0, 64),
          emit="count", flag="--master-gpu-devices-request", cli=V2),
    # CLI v1 spells these --cpu/--cpu-limit and --memory/--memory-limit.
    Field("cpu", "CPU cores per pod: {request, limit}", "{request: 2, limit: 4}", "group",
          sub=(SubField("request", _CORES, "CPU cores requested", "--cpu-core-request"),
               SubField("limit", _CORES, "CPU cores limit", "--cpu-core-limit")),
          emit="group", cli=V2, empty={}),
    Field("memory", "memory per pod (quantities): {request, limit}",
          "{request: 4Gi, limit: 16Gi}", "group",
          sub=(SubField("request", v.quantity, "memory requested", "--cpu-memory-request"),
               SubField("limit", v.quantity, "memory limit", "--cpu-memory-limit")),
          emit="group", cli=V2, empty={}),
    Field("run_as", "run as {uid, gid}", "{uid: 2000, gid: 2000}", "group",
          sub=(SubField("uid", _UID, "user id", "--run-as-uid"),
               SubField("gid", _UID, "group id", "--run-as-gid")),
          emit="group", empty={}),
    Field("working_dir", "working directory in the container", "/data/scripts/vision/train",
          "value", v.abs_path, emit="value", flag="--working-dir", text=True),
    # `-e` is the one env spelling valid in CLI v1, old v2 and new v2 (docs/runai-cli.md §1.4).
    Field("env", "environment variables", "{NCCL_DEBUG: INFO}", "mapping",
          key=v.env_key, value=v.env_value,
          emit="repeat", flag="-e", item="{key}={value}", empty={}),
    Field("pvcs", "existing PVCs mounted at a path: [{claim, path}]",
          "[{claim: project-001, path: /data}]", "list", v.pvcs,
          emit="repeat", flag="--existing-pvc",
          item="claimname={claim},path={path}", empty=[]),
    # CLI v1 spells it --add-capability.
    Field("capabilities", "POSIX capabilities to add", "[IPC_LOCK]", "list", _capabilities,
          emit="repeat", flag="--capability", cli=V2, empty=[]),
    Field("node_pools", "node pools, in priority order", "[pool-a, pool-b]", "list", _dns_list,
          emit="repeat", flag="--node-pools", empty=[]),
    # Only the v2.25 flag list (docs/runai-cli.md §1.3) confirms it. A remedy of `straggler` and
    # `hang-rank` adds the slow or hung rank's node here.
    Field("exclude_node", "nodes the pods must not run on", "[node-7]", "list", _node_names,
          emit="repeat", flag="--exclude-node", cli=V2_LATE_ONLY, empty=[]),
    # Older CLIs: `--preemptible` (v1, old v2 workspaces); training is preemptible by default.
    Field("preemptibility", "preemptible or non-preemptible", "preemptible", "value",
          v.one_of("preemptible", "non-preemptible"),
          emit="value", flag="--preemptibility", cli=V2_LATE_ONLY),
    # Recovery in place (the shipped profiles' OnFailure): 2.18-2.20 have no such flags, and a
    # job still has torchrun's restarts in its pods and `watch --recover` without them.
    Field("restart_policy", "worker pods: Always, OnFailure, Never or ExitCode", "Never", "value",
          v.one_of(*RESTART), emit="value", flag="--restart-policy", cli=V2_LATE_ONLY,
          degrades_on_older_cli=True),
    Field("master_restart_policy", "the master pod: Always, OnFailure, Never or ExitCode", "Never", "value",
          v.one_of(*RESTART), emit="value", flag="--master-restart-policy", cli=V2_LATE_ONLY,
          degrades_on_older_cli=True),
    Field("backoff_limit", "retries before Failed", "0", "value", v.int_range(0, 1000),
          emit="value", flag="--backoff-limit"),
    # The 2.18-2.20 submit page (run-ai/docs @029bc11) has no --clean-pod-policy; 2.25 has it.
    Field("clean_pod_policy",
          "pods removed when the job ends: None (logs stay readable), All or Running",
          "None", "value",
          v.one_of("None", "All", "Running"), emit="value", flag="--clean-pod-policy",
          cli=V2_LATE_ONLY),
    # What DDP operators set on a cluster (docs/runai-cli.md §8.3 lists each flag's pages).
    Field("priority", "scheduling priority: " + ", ".join(PRIORITIES), "high", "value",
          v.one_of(*PRIORITIES), emit="value", flag="--priority", cli=V2_LATE_ONLY),
    Field("tolerations", "node taints the pods tolerate", "[{key: nvidia.com/gpu, "
          "operator: Exists, effect: NoSchedule}]", "list", _tolerations,
          emit="repeat", flag="--toleration", cli=V2, empty=[]),
    Field("node_type", "node-type label the pods must run on", "dgx-a100", "value", v.no_space,
          emit="value", flag="--node-type", cli=V2, text=True),
    Field("required_topology_key", "all pods on nodes with the same value of this label "
          "(one rack for NCCL)", "topology.kubernetes.io/rack", "value", v.qualified_key,
          emit="value", flag="--required-pod-topology-key", cli=V2, text=True),
    Field("preferred_topology_key", "pods on nodes with the same value of this label, "
          "if possible", "topology.kubernetes.io/rack", "value", v.qualified_key,
          emit="value", flag="--preferred-pod-topology-key", cli=V2, text=True),
    Field("termination_grace_period", "time a pod gets after SIGTERM (the checkpoint)", "120s",
          "value", _duration, emit="value", flag="--termination-grace-period",
          cli=V2_LATE_ONLY, text=True),
    Field("auto_delete_after", "delete the job this long after it completes", "24h", "value",
          _duration, emit="value", flag="--auto-deletion-time-after-completion", cli=V2,
          text=True),
    Field("host_ipc", "share the node's IPC namespace", "true", "value", v.boolean,
          emit="switch", flag="--host-ipc", cli=V2, empty=False),
    Field("host_network", "use the node's network", "true", "value", v.boolean,
          emit="switch", flag="--host-network", cli=V2, empty=False),
    Field("supplemental_groups", "extra group IDs of the container user", "[1001, 1002]",
          "value", _groups, emit="value", flag="--supplemental-groups", cli=V2),
    Field("env_secrets", "environment variables from Kubernetes secrets",
          "{WANDB_API_KEY: {secret: wandb, key: api-key}}", "mapping",
          key=v.env_key, value=_secret_ref,
          emit="repeat", flag="--env-secret", item="{key}={value}", cli=V2_LATE_ONLY, empty={}),
    # The master pod's own settings. With any of them Run:ai builds the master from these, not
    # from the worker spec: command.py then also gives it the workers' extended resources and
    # NCCL_* environment (unless set here), so the master keeps the NIC.
    Field("no_master", "no separate master pod (no MASTER_ADDR/RANK/WORLD_SIZE from the "
          "operator)", "true", "value", v.boolean,
          emit="switch", flag="--no-master", cli=V2, empty=False),
    Field("master_cpu", "the master pod's CPU cores: {request, limit}", "{request: 2, limit: 4}",
          "group",
          sub=(SubField("request", _CORES, "CPU cores requested", "--master-cpu-core-request"),
               SubField("limit", _CORES, "CPU cores limit", "--master-cpu-core-limit")),
          emit="group", cli=V2_LATE_ONLY, empty={}),
    Field("master_memory", "the master pod's memory: {request, limit}", "{request: 8Gi, limit: 16Gi}",
          "group",
          sub=(SubField("request", v.quantity, "memory requested", "--master-cpu-memory-request"),
               SubField("limit", v.quantity, "memory limit", "--master-cpu-memory-limit")),
          emit="group", cli=V2_LATE_ONLY, empty={}),
    Field("master_extended_resources", "the master pod's extended resources (default with "
          "master settings: the workers')", "{openshift.io/mellanoxnics: 1}", "mapping",
          key=v.qualified_key, value=v.resource_amount,
          emit="repeat", flag="--master-extended-resource", item="{key}={value}", cli=V2,
          empty={}),
    Field("master_env", "the master pod's environment (default with master settings: the "
          "workers' NCCL_*)", "{NCCL_DEBUG: WARN}", "mapping", key=v.env_key, value=v.env_value,
          emit="repeat", flag="--master-environment-variable", item="{key}={value}",
          cli=V2_LATE_ONLY, empty={}),
    Field("master_command", "the master's command line, one string (replaces the entrypoint)",
          "python train.py --rank0-only", "value", v.nonempty,
          emit="value", flag="--master-command", cli=V2_LATE_ONLY, text=True),
    Field("master_args", "the master's arguments, one string", "--log-every 10", "value",
          v.nonempty, emit="value", flag="--master-args", cli=V2_LATE_ONLY, text=True),
    Field("master_no_pvcs", "mount no PVCs in the master pod", "true", "value", v.boolean,
          emit="switch", flag="--master-no-pvcs", cli=V2, empty=False),
    Field("command", "command replacing the image entrypoint (one string = one word)",
          "[/data/scripts/vision/shell/train-retinanet-ddp.sh]", "list", v.argv_list,
          emit="command", flag="--command", empty=[]),
    Field("args", "arguments after the command (one string = one word)",
          '[--epochs, "12"]', "list", v.argv_list,
          emit="args", empty=[]),
)  # fmt: skip

BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}
