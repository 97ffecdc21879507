"""THE profile field table: every field a profile may set, written once.

Everything else is derived from these rows: the validation schema (schema.py), the argv builder
(runai_tui/runai/command.py turns each row's `flag` and `emit` into argv elements — the one place
where a field becomes a command-line word), `runai-tui profiles fields`, the README field table
(docs.py; a test keeps README.md current) and the CLI generation check
(runai_tui/runai/generations.py; the generations' names are in runai_tui/cli_generations.py). The local cluster's own flag parser
(runai_tui/local/flags.py) is checked against these rows by tests/local/test_flags.py, and the
`Profile` dataclass's annotated attributes (schema.py) by tests/core/test_fields.py.

Row order is argv order: the builder emits flags in the order of this table.
Flag spellings and generations: docs/runai-cli.md §1.3 (v2.25), §1.4 (drift)
and §7 (field → flag per generation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runai_tui.cli_generations import ALL, V2, V2_LATE_ONLY
from runai_tui.profiles import validators as v

RESTART = ("Always", "OnFailure", "Never")

Check = Callable[[Any], Any]  # a value's check: the normalised value, or raises Invalid


@dataclass(frozen=True)
class SubField:
    """A fixed sub-field of a group (cpu.request…), with its own flag."""

    name: str
    check: Check
    help: str
    flag: str


@dataclass(frozen=True)
class Field:
    """One row: `name`, `help`, `example` (a YAML value, shown in the README and `profiles
    fields`), `kind` ("value" | "list" | "group" | "mapping": how it is validated and merged),
    then the optional columns."""

    name: str
    help: str
    example: str
    kind: str
    check: Check | None = None  # value/list: the value's check
    sub: tuple[SubField, ...] = ()  # group: its fixed sub-fields
    key: Check | None = None  # mapping: each key's check
    value: Check | None = None  # mapping: each value's check
    # How command.py spells it: "" (no flag), "positional", "value", "count" (left out at 0),
    # "switch" (a bare flag when true), "group" (each sub-field's flag), "repeat" (the flag once
    # per item, formatted with `item`), "command" / "args" (after `--`, last).
    emit: str = ""
    flag: str = ""
    item: str = "{}"  # repeat: one item as a flag value ({key}/{value} for mappings)
    cli: frozenset[str] = ALL  # CLI generations whose `submit` knows the flag
    text: bool = False  # `--set` takes the value exactly as written (no YAML parsing)
    empty: Any = None  # the Profile attribute's value when the field is not set

    @property
    def flags(self) -> list[str]:
        return [s.flag for s in self.sub] if self.sub else [self.flag] if self.flag else []


def _dns_list(value: Any) -> list[str]:
    return v.list_of(v.dns_label, "[pool-a, pool-b]")(value)


def _capabilities(value: Any) -> list[str]:
    return v.list_of(v.capability, "[IPC_LOCK]")(value)


_UID = v.int_range(0, 2**31 - 1)
_CORES = v.cores(1024)

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
    # Older CLIs: `--preemptible` (v1, old v2 workspaces); training is preemptible by default.
    Field("preemptibility", "preemptible or non-preemptible", "preemptible", "value",
          v.one_of("preemptible", "non-preemptible"),
          emit="value", flag="--preemptibility", cli=V2_LATE_ONLY),
    Field("restart_policy", "worker pods: Always, OnFailure or Never", "Never", "value",
          v.one_of(*RESTART), emit="value", flag="--restart-policy", cli=V2_LATE_ONLY),
    Field("master_restart_policy", "the master pod: Always, OnFailure or Never", "Never", "value",
          v.one_of(*RESTART), emit="value", flag="--master-restart-policy", cli=V2_LATE_ONLY),
    Field("backoff_limit", "retries before Failed", "0", "value", v.int_range(0, 1000),
          emit="value", flag="--backoff-limit"),
    # docs/runai-cli.md §7 gives --clean-pod-policy for every generation (and §1.5 a v1 default), so
    # it is not limited to 2.2x here.
    Field("clean_pod_policy",
          "pods removed when the job ends: None (logs stay readable), All or Running",
          "None", "value",
          v.one_of("None", "All", "Running"), emit="value", flag="--clean-pod-policy"),
    Field("command", "command replacing the image entrypoint (one string = one word)",
          "[/data/scripts/vision/shell/train-retinanet-ddp.sh]", "list", v.argv_list,
          emit="command", flag="--command", empty=[]),
    Field("args", "arguments after the command (one string = one word)",
          '[--epochs, "12"]', "list", v.argv_list,
          emit="args", empty=[]),
)  # fmt: skip

BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}
