"""The schema derived from the field table: problems, validation, and the `Profile` class."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from runai_tui.profiles.fields import BY_NAME, FIELDS, Check, Field
from runai_tui.profiles.validators import Invalid, show
from runai_tui.shapes.errors import UsageError
from runai_tui.trainer_flags import FIELD

# ---------------------------------------------------------------------------------------------
# Problems


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a profile: where (`file`, `line` or None), which `field` ("" for the
    whole file), and the `message`: what value, what is expected."""

    file: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


class ProfileError(UsageError):
    """A profile (or an override) is invalid: exit code 2. `problems` lists every problem found."""

    def __init__(self, problems: list[Problem], hint: str = "") -> None:
        self.problems = problems
        first = str(problems[0]) if problems else "invalid profile"
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(first + more, hint)


# ---------------------------------------------------------------------------------------------
# Specs by shape (derived from the table; kept for callers that walk SCHEMA)


class FieldSpec(NamedTuple):
    """A value (or list) field: the value's `check` and the field's `help`."""

    check: Check
    help: str


class MappingSpec(NamedTuple):
    """A mapping with free keys (env, labels…): each `key` and `value` checked."""

    key: Callable[[object], str]
    value: Check
    help: str


class GroupSpec(NamedTuple):
    """A mapping with fixed sub-fields (cpu, memory, run_as): `fields` maps each to its FieldSpec."""

    fields: dict[str, FieldSpec]
    help: str


def _spec(row: Field) -> FieldSpec | MappingSpec | GroupSpec:
    if row.kind == "group":
        return GroupSpec({s.name: FieldSpec(s.check, s.help) for s in row.sub}, row.help)
    if row.kind == "mapping":
        assert row.key is not None and row.value is not None
        return MappingSpec(row.key, row.value, row.help)
    assert row.check is not None
    return FieldSpec(row.check, row.help)


SCHEMA: dict[str, FieldSpec | MappingSpec | GroupSpec] = {row.name: _spec(row) for row in FIELDS}
FIELD_NAMES = sorted(SCHEMA)


# `--set trainer.FLAG=VALUE`: one of the trainer's flags, not a field of its own.
TRAINER_FIELD = FIELD


def field_paths() -> list[str]:
    """Every name `--set` accepts (groups as `cpu.request`; free mappings as `env.NAME`)."""
    out: list[str] = []
    for row in FIELDS:
        if row.kind == "group":
            out.extend(f"{row.name}.{sub.name}" for sub in row.sub)
        elif row.kind == "mapping":
            out.append(f"{row.name}.KEY")
        else:
            out.append(row.name)
    out.append(f"{TRAINER_FIELD}.FLAG")  # a trainer flag in command or args (overrides.py)
    return sorted(out)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    import difflib  # only for a misspelt name (docs/performance.md)

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


# ---------------------------------------------------------------------------------------------
# The resolved profile: one attribute per table row (its `empty` value when unset)


@dataclass
class Profile:
    """A resolved, validated profile: `name`, `source`, one attribute per row of the field table in
    runai_tui/profiles/fields.py, in its order and with its `empty` value when unset (`extends` is
    the direct parent; tests/core/test_fields.py keeps the two in step), then the resolved document
    (`data`, what `profiles show --resolved` prints) and where each field came from (`origins`,
    "env.NCCL_DEBUG" -> (file, line)). Mutable, so unhashable."""

    name: str
    source: Path | None = None
    description: str = ""
    extends: str | None = None
    tensorboard_port: int | None = None
    job_name: str | None = None
    project: str | None = None
    image: str | None = None
    image_pull_policy: str | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    extended_resources: dict[str, str] = field(default_factory=dict)
    large_shm: bool = False
    workers: int | None = None
    gpus: int | None = None
    master_gpus: int | None = None
    cpu: dict[str, float] = field(default_factory=dict)
    memory: dict[str, str] = field(default_factory=dict)
    run_as: dict[str, int] = field(default_factory=dict)
    working_dir: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    pvcs: list[dict[str, str]] = field(default_factory=list)
    capabilities: list[str] = field(default_factory=list)
    node_pools: list[str] = field(default_factory=list)
    exclude_node: list[str] = field(default_factory=list)
    preemptibility: str | None = None
    restart_policy: str | None = None
    master_restart_policy: str | None = None
    backoff_limit: int | None = None
    clean_pod_policy: str | None = None
    priority: str | None = None
    tolerations: list[str] = field(default_factory=list)
    node_type: str | None = None
    required_topology_key: str | None = None
    preferred_topology_key: str | None = None
    termination_grace_period: str | None = None
    auto_delete_after: str | None = None
    host_ipc: bool = False
    host_network: bool = False
    supplemental_groups: str | None = None
    env_secrets: dict[str, str] = field(default_factory=dict)
    no_master: bool = False
    master_cpu: dict[str, float] = field(default_factory=dict)
    master_memory: dict[str, str] = field(default_factory=dict)
    master_extended_resources: dict[str, str] = field(default_factory=dict)
    master_env: dict[str, str] = field(default_factory=dict)
    master_command: str | None = None
    master_args: str | None = None
    master_no_pvcs: bool = False
    command: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    data: dict[str, object] = field(default_factory=dict, repr=False)  # long: left out of repr
    origins: dict[str, tuple[str, int | None]] = field(default_factory=dict, repr=False)

    @property
    def master_pod_gpus(self) -> int:
        """The master pod's GPUs: `master_gpus`, else the workers' (`gpus`), as runai gives the
        master the workers' spec when no master GPUs are asked for."""
        return (self.master_gpus if self.master_gpus is not None else self.gpus) or 0

    @property
    def most_gpus_per_pod(self) -> int:
        """The GPUs of the job's largest pod (0: a CPU job)."""
        return max(self.gpus or 0, self.master_pod_gpus)

    @property
    def job_gpus(self) -> int:
        """The GPUs the whole job holds: the master's and every worker's."""
        return self.master_pod_gpus + (self.workers or 0) * (self.gpus or 0)


def make_profile(
    name: str,
    source: Path | None,
    data: dict[str, Any],
    extends: str | None,
    origins: dict[tuple[str, ...], tuple[str, int | None]],
) -> Profile:
    """A Profile from validated data (without `extends`, which is given as the direct parent)."""
    known = {k: val for k, val in data.items() if k in BY_NAME and k != "extends"}
    profile = Profile(name=name, source=source, **known)
    profile.extends = extends
    profile.data = data
    profile.origins = {".".join(k): val for k, val in origins.items()}
    return profile


def unsupported_fields(profile: Profile, generation: str) -> list[tuple[Field, str]]:
    """The (row, field name) of every field profile sets whose flag `generation` lacks."""
    out = []
    for row in FIELDS:
        if generation in row.cli or not row.flags:
            continue
        value = getattr(profile, row.name)
        if value == row.empty or (row.emit == "count" and not value):
            continue  # not set, or set to what emits no flag
        out.append((row, row.name))
    return out


# ---------------------------------------------------------------------------------------------
# Validation


def validate_data(
    data: Mapping[str, object], where: Callable[[tuple[str, ...]], tuple[str, int | None]]
) -> tuple[dict[str, Any], list[Problem]]:
    """Check every field against SCHEMA. Returns the normalised data and every problem found."""
    problems: list[Problem] = []
    out: dict[str, Any] = {}

    def problem(path: tuple[str, ...], value: object, expected: str) -> None:
        file, line = where(path)
        problems.append(Problem(file, line, ".".join(path), f"{show(value)}: {expected}"))

    for key, value in data.items():
        spec = SCHEMA.get(key)
        if spec is None:
            file, line = where((key,))
            hint = did_you_mean(key, SCHEMA) or "; valid fields: " + ", ".join(FIELD_NAMES)
            problems.append(Problem(file, line, key, f"unknown field{hint}"))
            continue
        if isinstance(spec, FieldSpec):
            try:
                out[key] = spec.check(value)
            except Invalid as bad:
                problem((key,), value, bad.expected)
        elif isinstance(spec, GroupSpec):
            if not isinstance(value, dict):
                problem((key,), value, f"expected a mapping: {spec.help}")
                continue
            group = {}
            for sub, sub_value in value.items():
                sub_spec = spec.fields.get(sub)
                if sub_spec is None:
                    file, line = where((key, sub))
                    hint = did_you_mean(sub, spec.fields) or "; valid: " + ", ".join(spec.fields)
                    problems.append(Problem(file, line, f"{key}.{sub}", f"unknown field{hint}"))
                    continue
                try:
                    group[sub] = sub_spec.check(sub_value)
                except Invalid as bad:
                    problem((key, sub), sub_value, bad.expected)
            out[key] = group
        else:  # MappingSpec
            if not isinstance(value, dict):
                problem((key,), value, f"expected a mapping of NAME: value ({spec.help})")
                continue
            mapping = {}
            for sub, sub_value in value.items():
                try:
                    name = spec.key(sub)
                except Invalid as bad:
                    problem((key, str(sub)), sub, bad.expected)
                    continue
                try:
                    mapping[name] = spec.value(sub_value)
                except Invalid as bad:
                    problem((key, name), sub_value, bad.expected)
            out[key] = mapping
    # Cross-field rules.
    cpu = out.get("cpu", {})
    if "request" in cpu and "limit" in cpu and cpu["limit"] < cpu["request"]:
        problem(("cpu", "limit"), cpu["limit"], "expected a limit at least the request")
    if "command" in out and not out["command"]:
        problem(("command",), [], "expected at least one word (or remove the field)")
    return out, problems
