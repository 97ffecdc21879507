"""Job profiles: one YAML file per profile, loaded with line numbers, resolved through `extends`,
validated field by field, and saved atomically.

Merge rule for `extends`: mappings merge key by key (recursively), lists and scalars replace, and
a key set to `null` in the child removes what the parent set. The child's own `extends` and
`description` are never inherited from the parent chain except `description`, which is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from runai_tui.atomic import atomic_write
from runai_tui.errors import UsageError

MAX_PROFILE_BYTES = 256 * 1024
PROJECT_ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------------------------------
# Problems


# The records below are NamedTuples and plain classes, not dataclasses: importing `dataclasses`
# (and `inspect` with it) costs ~7 ms at every start of the headless CLI, a fifth of its budget
# (issue 12; measured by benchmarks/fig_cli.py; tests/test_layers.py keeps it off that path).


class Problem(NamedTuple):
    """One thing wrong with a profile: where, which field, what value, what is expected."""

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
# The schema: every field, its type check and what is expected. Validators return an error text
# (what is expected) or None, and may normalise the value (e.g. 3846 -> "3846").

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
# Kubernetes qualified name with an optional DNS prefix: `example.com/name`.
QUALIFIED_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|K|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
CAPABILITY = re.compile(r"^[A-Z][A-Z0-9_]*$")


class _Invalid(Exception):
    def __init__(self, expected: str) -> None:
        self.expected = expected


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "...'"


def _string(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _Invalid("expected a text value")
    text = str(value)
    if "\x00" in text:
        raise _Invalid("expected text without NUL characters")
    return text


def _nonempty(value: Any) -> str:
    text = _string(value)
    if not text.strip():
        raise _Invalid("expected a non-empty value")
    return text


def _no_space(value: Any) -> str:
    text = _nonempty(value)
    if any(c.isspace() for c in text):
        raise _Invalid("expected a value without spaces")
    return text


def _dns_label(value: Any) -> str:
    text = _string(value)
    if len(text) > 63 or not DNS1123_LABEL.match(text):
        raise _Invalid(
            "expected a Kubernetes DNS-1123 label: at most 63 characters of lower-case letters, "
            "digits and '-', starting and ending with a letter or digit (e.g. 'retinanet-tcp')"
        )
    return text


def _int_range(lo: int, hi: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Invalid(f"expected a whole number from {lo} to {hi}")
        if not lo <= value <= hi:
            raise _Invalid(f"expected a whole number from {lo} to {hi}")
        return value

    return check


def _positive_float(hi: float) -> Callable[[Any], float | int]:
    def check(value: Any) -> float | int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Invalid(f"expected a number above 0 and at most {hi:g} (cores, e.g. 0.5 or 4)")
        if not 0 < value <= hi:
            raise _Invalid(f"expected a number above 0 and at most {hi:g} (cores, e.g. 0.5 or 4)")
        return value

    return check


def _quantity(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _Invalid("expected a memory quantity such as 3846, 512Mi, 4G or 16Gi")
    text = str(value)
    if not QUANTITY.match(text) or float(re.sub(r"[^0-9.]", "", text) or 0) <= 0:
        raise _Invalid("expected a memory quantity such as 3846, 512Mi, 4G or 16Gi")
    return text


def _one_of(*choices: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        text = str(value) if isinstance(value, str) else None
        if text not in choices:
            raise _Invalid("expected one of: " + ", ".join(choices))
        return text

    return check


def _abs_path(value: Any) -> str:
    text = _no_space(value)
    if not text.startswith("/"):
        raise _Invalid("expected an absolute path inside the container, e.g. /data/work")
    return text


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Invalid("expected true or false")
    return value


def _argv_list(value: Any) -> list[str]:
    # A single string is one argv element, exactly as written: we never split on spaces.
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise _Invalid("expected a list of words, e.g. [python, train.py, --lr, '0.01']")
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise _Invalid("expected a list of text words, e.g. [python, train.py]")
        out.append(str(item))
    return out


def _list_of(check_item: Callable[[Any], str], example: str) -> Callable[[Any], list[str]]:
    def check(value: Any) -> list[str]:
        if not isinstance(value, list):
            raise _Invalid(f"expected a list, e.g. {example}")
        return [check_item(v) for v in value]

    return check


def _capability(value: Any) -> str:
    text = _string(value)
    if not CAPABILITY.match(text):
        raise _Invalid("expected a POSIX capability name in upper case, e.g. IPC_LOCK")
    return text


class FieldSpec(NamedTuple):
    check: Callable[[Any], Any]
    help: str


class MappingSpec(NamedTuple):
    """A mapping with free keys (env, labels…): each key and value checked."""

    key: Callable[[Any], str]
    value: Callable[[Any], Any]
    help: str


class GroupSpec(NamedTuple):
    """A mapping with fixed sub-fields (cpu, memory, run_as)."""

    fields: dict[str, FieldSpec]
    help: str


def _env_key(value: Any) -> str:
    if not isinstance(value, str) or not ENV_NAME.match(value):
        raise _Invalid(
            "expected an environment variable name of letters, digits, '_', '-' or '.', "
            "not starting with a digit and without '=' or spaces (e.g. NCCL_DEBUG)"
        )
    return value


def _qualified_key(value: Any) -> str:
    if not isinstance(value, str) or len(value) > 316 or not QUALIFIED_KEY.match(value):
        raise _Invalid(
            "expected a Kubernetes key such as 'team' or 'k8s.v1.cni.cncf.io/networks' "
            "(letters, digits, '-', '_', '.', an optional DNS prefix and '/')"
        )
    return value


def _annotation_value(value: Any) -> str:
    return _string(value)


def _label_value(value: Any) -> str:
    text = _string(value)
    if len(text) > 63 or not re.match(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$", text):
        raise _Invalid("expected a label value: at most 63 letters, digits, '-', '_' or '.'")
    return text


def _resource_amount(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _Invalid("expected a whole quantity such as 1")
    text = str(value)
    if not QUANTITY.match(text):
        raise _Invalid("expected a whole quantity such as 1")
    return text


def _env_value(value: Any) -> str:
    # YAML turns `1` into an int and `true` into a bool; env values are text, written as given.
    if isinstance(value, bool):
        return "true" if value else "false"
    return _string(value)


def _pvcs(value: Any) -> list[dict[str, str]]:
    example = "[{claim: project-001, path: /data}]"
    if not isinstance(value, list):
        raise _Invalid(f"expected a list of claims, e.g. {example}")
    out = []
    for item in value:
        if not isinstance(item, dict) or set(item) != {"claim", "path"} or not item.get("claim"):
            raise _Invalid(f"expected entries with 'claim' and 'path', e.g. {example}")
        claim = str(item["claim"])
        if len(claim) > 253 or not re.match(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", claim):
            raise _Invalid(f"expected a PVC claim name in DNS-1123 form, e.g. {example}")
        path = item.get("path")
        if not isinstance(path, str) or not path.startswith("/") or "," in path or "=" in path:
            raise _Invalid(f"expected an absolute mount path without ',' or '=', e.g. {example}")
        out.append({"claim": claim, "path": path})
    return out


RESTART = ("Always", "OnFailure", "Never")

SCHEMA: dict[str, FieldSpec | MappingSpec | GroupSpec] = {
    "description": FieldSpec(_string, "what the profile is for"),
    "extends": FieldSpec(_nonempty, "name of the profile this one inherits from"),
    "job_name": FieldSpec(_dns_label, "default job name (DNS-1123 label)"),
    "project": FieldSpec(_dns_label, "Run:ai project (-p)"),
    "image": FieldSpec(_no_space, "container image"),
    "image_pull_policy": FieldSpec(_one_of("Always", "IfNotPresent", "Never"), "pull policy"),
    "workers": FieldSpec(_int_range(1, 1000), "worker pods (the master pod is extra)"),
    "gpus": FieldSpec(_int_range(0, 64), "GPUs per worker pod"),
    "master_gpus": FieldSpec(_int_range(0, 64), "GPUs for the master pod"),
    "cpu": GroupSpec(
        {
            "request": FieldSpec(_positive_float(1024), "CPU cores requested"),
            "limit": FieldSpec(_positive_float(1024), "CPU cores limit"),
        },
        "CPU cores: {request, limit}",
    ),
    "memory": GroupSpec(
        {
            "request": FieldSpec(_quantity, "memory requested"),
            "limit": FieldSpec(_quantity, "memory limit"),
        },
        "CPU memory: {request, limit}",
    ),
    "run_as": GroupSpec(
        {
            "uid": FieldSpec(_int_range(0, 2**31 - 1), "user id"),
            "gid": FieldSpec(_int_range(0, 2**31 - 1), "group id"),
        },
        "run as {uid, gid}",
    ),
    "working_dir": FieldSpec(_abs_path, "working directory in the container"),
    "env": MappingSpec(_env_key, _env_value, "environment variables"),
    "pvcs": FieldSpec(_pvcs, "existing PVCs: [{claim, path}]"),
    "annotations": MappingSpec(_qualified_key, _annotation_value, "pod annotations"),
    "labels": MappingSpec(_qualified_key, _label_value, "pod labels"),
    "extended_resources": MappingSpec(_qualified_key, _resource_amount, "extended resources"),
    "large_shm": FieldSpec(_boolean, "large /dev/shm"),
    "capabilities": FieldSpec(_list_of(_capability, "[IPC_LOCK]"), "POSIX capabilities"),
    "node_pools": FieldSpec(_list_of(_dns_label, "[pool-a, pool-b]"), "node pools by priority"),
    "preemptibility": FieldSpec(_one_of("preemptible", "non-preemptible"), "preemptibility"),
    "restart_policy": FieldSpec(_one_of(*RESTART), "worker restart policy"),
    "master_restart_policy": FieldSpec(_one_of(*RESTART), "master restart policy"),
    "backoff_limit": FieldSpec(_int_range(0, 1000), "retries before Failed"),
    "clean_pod_policy": FieldSpec(_one_of("None", "All", "Running"), "clean pod policy"),
    "command": FieldSpec(_argv_list, "command replacing the image entrypoint"),
    "args": FieldSpec(_argv_list, "arguments after the command"),
}

FIELD_NAMES = sorted(SCHEMA)


def field_paths() -> list[str]:
    """Every name `--set` accepts (groups as `cpu.request`; free mappings as `env.NAME`)."""
    out = []
    for name, spec in SCHEMA.items():
        if isinstance(spec, GroupSpec):
            out.extend(f"{name}.{sub}" for sub in spec.fields)
        elif isinstance(spec, MappingSpec):
            out.append(f"{name}.KEY")
        else:
            out.append(name)
    return sorted(out)


# ---------------------------------------------------------------------------------------------
# The resolved profile


# Every Profile attribute but `name`, with its default (a list or dict default is copied).
PROFILE_DEFAULTS: dict[str, Any] = {
    "source": None,
    "description": "",
    "job_name": None,
    "project": None,
    "image": None,
    "image_pull_policy": None,
    "workers": None,
    "gpus": None,
    "master_gpus": None,
    "cpu": {},
    "memory": {},
    "run_as": {},
    "working_dir": None,
    "env": {},
    "pvcs": [],
    "annotations": {},
    "labels": {},
    "extended_resources": {},
    "large_shm": False,
    "capabilities": [],
    "node_pools": [],
    "preemptibility": None,
    "restart_policy": None,
    "master_restart_policy": None,
    "backoff_limit": None,
    "clean_pod_policy": None,
    "command": [],
    "args": [],
    "extends": None,
    "data": {},
    "origins": {},
}


class Profile:
    """A profile's fields (plain attributes; see the note above `Problem` for why no dataclass).
    `data` is the resolved document (what `profiles show --resolved` prints) and `origins` where
    each field came from."""

    name: str
    source: Path | None
    description: str
    job_name: str | None
    project: str | None
    image: str | None
    image_pull_policy: str | None
    workers: int | None
    gpus: int | None
    master_gpus: int | None
    cpu: dict[str, float | int]
    memory: dict[str, str]
    run_as: dict[str, int]
    working_dir: str | None
    env: dict[str, str]
    pvcs: list[dict[str, str]]
    annotations: dict[str, str]
    labels: dict[str, str]
    extended_resources: dict[str, str]
    large_shm: bool
    capabilities: list[str]
    node_pools: list[str]
    preemptibility: str | None
    restart_policy: str | None
    master_restart_policy: str | None
    backoff_limit: int | None
    clean_pod_policy: str | None
    command: list[str]
    args: list[str]
    extends: str | None
    data: dict[str, Any]
    origins: dict[str, tuple[str, int | None]]

    def __init__(self, name: str, **fields: Any) -> None:
        unknown = sorted(fields.keys() - PROFILE_DEFAULTS.keys())
        if unknown:
            raise TypeError(f"Profile got unknown fields: {', '.join(unknown)}")
        self.name = name
        for key, default in PROFILE_DEFAULTS.items():
            value = fields.get(key, default)
            fresh = value is default and isinstance(default, (list, dict))
            setattr(self, key, default.copy() if fresh else value)

    def __eq__(self, other: object) -> bool:
        return type(other) is Profile and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it replaces

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{k}={v!r}" for k, v in vars(self).items() if k not in ("data", "origins")
        )
        return f"Profile({shown})"


# ---------------------------------------------------------------------------------------------
# Loading YAML with line numbers


class _Document(NamedTuple):
    data: dict[str, Any]
    lines: dict[tuple[str, ...], int]  # field path -> 1-based line
    path: str


def _read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ProfileError([Problem(str(path), None, "", f"cannot read: {exc.strerror}")]) from exc
    if size > MAX_PROFILE_BYTES:
        raise ProfileError(
            [
                Problem(
                    str(path),
                    None,
                    "",
                    f"file is {size} bytes; a profile is at most {MAX_PROFILE_BYTES} bytes",
                )
            ]
        )
    raw = path.read_bytes()
    return _decode(raw, str(path))


def _decode(raw: bytes, label: str) -> str:
    if b"\x00" in raw:
        raise ProfileError(
            [Problem(label, None, "", "binary file (NUL bytes); expected YAML text")]
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ProfileError(
            [Problem(label, line, "", "not UTF-8 text; expected a YAML file")]
        ) from exc


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_document(text: str, label: str) -> _Document:
    """Parse YAML text into plain data plus the line of every field; reject duplicate keys."""
    if len(text.encode("utf-8", "replace")) > MAX_PROFILE_BYTES:
        raise ProfileError([Problem(label, None, "", f"larger than {MAX_PROFILE_BYTES} bytes")])
    # libyaml's parser when built in: 3-4 ms less per profile on the headless path (issue 12);
    # same nodes, marks and errors as the pure-Python one.
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark else None
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ProfileError(
            [Problem(label, line, "", f"malformed YAML: {what}; fix the syntax at this line")]
        ) from exc
    finally:
        loader.dispose()
    if node is None:
        return _Document({}, {}, label)
    if not isinstance(node, yaml.MappingNode):
        raise ProfileError(
            [
                Problem(
                    label,
                    node.start_mark.line + 1,
                    "",
                    "the file is not a mapping; expected 'field: value' lines such as 'image: ...'",
                )
            ]
        )
    lines: dict[tuple[str, ...], int] = {}
    problems: list[Problem] = []
    data = _construct(loader, node, (), lines, problems, label)
    if problems:
        raise ProfileError(problems)
    return _Document(data, lines, label)


def _construct(
    loader: yaml.SafeLoader,
    node: yaml.Node,
    path: tuple[str, ...],
    lines: dict[tuple[str, ...], int],
    problems: list[Problem],
    label: str,
) -> Any:
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            key = key if isinstance(key, str) else str(key)
            sub = (*path, key)
            if key in out:
                problems.append(
                    Problem(
                        label,
                        key_node.start_mark.line + 1,
                        ".".join(sub),
                        f"duplicate key (first at line {lines[sub]}); keep one of them",
                    )
                )
                continue
            lines[sub] = key_node.start_mark.line + 1
            out[key] = _construct(loader, value_node, sub, lines, problems, label)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_construct(loader, item, path, lines, problems, label) for item in node.value]
    return loader.construct_object(node, deep=True)


# ---------------------------------------------------------------------------------------------
# Merging and validation


def merge(parent: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """Mappings merge recursively, lists and scalars replace, a `null` in the child deletes."""
    out = dict(parent)
    for key, value in child.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    import difflib  # lazy: only when a key is unknown (benchmarks/, issue 12)

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def validate_data(
    data: dict[str, Any], where: Callable[[tuple[str, ...]], tuple[str, int | None]]
) -> tuple[dict[str, Any], list[Problem]]:
    """Check every field against SCHEMA. Returns the normalised data and every problem found."""
    problems: list[Problem] = []
    out: dict[str, Any] = {}

    def problem(path: tuple[str, ...], value: Any, expected: str) -> None:
        file, line = where(path)
        problems.append(Problem(file, line, ".".join(path), f"{_show(value)}: {expected}"))

    for key, value in data.items():
        spec = SCHEMA.get(key)
        if spec is None:
            file, line = where((key,))
            hint = _did_you_mean(key, SCHEMA) or "; valid fields: " + ", ".join(FIELD_NAMES)
            problems.append(Problem(file, line, key, f"unknown field{hint}"))
            continue
        if isinstance(spec, FieldSpec):
            try:
                out[key] = spec.check(value)
            except _Invalid as bad:
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
                    hint = _did_you_mean(sub, spec.fields) or "; valid: " + ", ".join(spec.fields)
                    problems.append(Problem(file, line, f"{key}.{sub}", f"unknown field{hint}"))
                    continue
                try:
                    group[sub] = sub_spec.check(sub_value)
                except _Invalid as bad:
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
                except _Invalid as bad:
                    problem((key, str(sub)), sub, bad.expected)
                    continue
                try:
                    mapping[name] = spec.value(sub_value)
                except _Invalid as bad:
                    problem((key, name), sub_value, bad.expected)
            out[key] = mapping
    # Cross-field rules.
    cpu = out.get("cpu", {})
    if "request" in cpu and "limit" in cpu and cpu["limit"] < cpu["request"]:
        problem(("cpu", "limit"), cpu["limit"], "expected a limit at least the request")
    if "command" in out and not out["command"]:
        problem(("command",), [], "expected at least one word (or remove the field)")
    return out, problems


# ---------------------------------------------------------------------------------------------
# The store


class ProfileEntry(NamedTuple):
    name: str
    path: Path
    origin: str  # "project" or "user"
    description: str = ""
    shadows: Path | None = None  # the shipped profile this user profile hides
    error: str | None = None


def default_dirs() -> list[Path]:
    """Shipped profiles first, then the user's (a later directory shadows an earlier one)."""
    return [PROJECT_ROOT / "profiles", user_profiles_dir()]


def user_profiles_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "runai-tui" / "profiles"


class ProfileStore:
    def __init__(self, dirs: list[Path] | None = None) -> None:
        self.dirs = list(dirs) if dirs is not None else default_dirs()
        self.user_dir = self.dirs[-1]

    # -- discovery --------------------------------------------------------------------------

    def _files(self) -> dict[str, tuple[Path, str, Path | None]]:
        found: dict[str, tuple[Path, str, Path | None]] = {}
        for index, directory in enumerate(self.dirs):
            origin = "user" if directory == self.user_dir else "project"
            if not directory.is_dir():
                continue
            for path in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")]):
                previous = found.get(path.stem)
                shadows = previous[0] if previous and index > 0 else None
                found[path.stem] = (path, origin, shadows)
        return found

    def names(self) -> list[str]:
        return sorted(self._files())

    def entries(self) -> list[ProfileEntry]:
        out = []
        for name, (path, origin, shadows) in sorted(self._files().items()):
            try:
                description, error = self.load(name).description, None
            except UsageError as exc:
                description, error = "", str(exc)
            out.append(ProfileEntry(name, path, origin, description, shadows, error))
        return out

    def path(self, name: str) -> Path:
        files = self._files()
        if name not in files:
            known = ", ".join(sorted(files)) or "none"
            hint = _did_you_mean(name, files).lstrip("; ")
            raise UsageError(
                f"unknown profile '{name}'" + (f"; {hint}" if hint else ""),
                f"known profiles: {known} (see: runai-tui profiles list)",
            )
        return files[name][0]

    def raw_text(self, name: str) -> str:
        return _read_text(self.path(name))

    # -- loading ----------------------------------------------------------------------------

    def _resolve(
        self, doc: _Document, name: str, chain: tuple[str, ...]
    ) -> tuple[dict[str, Any], dict[tuple[str, ...], tuple[str, int | None]]]:
        """Merge the parents of doc into one mapping; record which file and line set each path."""
        origins: dict[tuple[str, ...], tuple[str, int | None]] = {}
        parent_data: dict[str, Any] = {}
        parent_name = doc.data.get("extends")
        if parent_name is not None:
            line = doc.lines.get(("extends",))
            if not isinstance(parent_name, str) or not parent_name:
                raise ProfileError(
                    [Problem(doc.path, line, "extends", f"{_show(parent_name)}: expected a name")]
                )
            if parent_name in chain or parent_name == name:
                cycle = " -> ".join((*chain, name, parent_name))
                raise ProfileError(
                    [
                        Problem(
                            doc.path,
                            line,
                            "extends",
                            f"'{parent_name}': cycle {cycle}; remove one 'extends'",
                        )
                    ]
                )
            try:
                parent_path = self.path(parent_name)
            except UsageError:
                known = ", ".join(self.names()) or "none"
                raise ProfileError(
                    [
                        Problem(
                            doc.path,
                            line,
                            "extends",
                            f"'{parent_name}': no such profile; expected one of: {known}",
                        )
                    ]
                ) from None
            parent_doc = parse_document(_read_text(parent_path), str(parent_path))
            parent_data, origins = self._resolve(parent_doc, parent_name, (*chain, name))
            parent_data.pop("extends", None)
        merged = merge(parent_data, doc.data)
        for path, line in doc.lines.items():
            origins[path] = (doc.path, line)
        return merged, origins

    def _build(self, doc: _Document, name: str, overrides: list[str] | None = None) -> Profile:
        merged, origins = self._resolve(doc, name, ())
        if overrides:
            merged = _apply_sets(merged, overrides, origins)

        def where(path: tuple[str, ...]) -> tuple[str, int | None]:
            for n in range(len(path), 0, -1):
                if path[:n] in origins:
                    return origins[path[:n]]
            return (doc.path, None)

        data, problems = validate_data(merged, where)
        if "image" not in data and not problems:
            problems.append(
                Problem(doc.path, None, "image", "missing; expected e.g. 'image: repo/name:tag'")
            )
        if problems:
            raise ProfileError(problems)
        data.pop("extends", None)
        known = {k: v for k, v in data.items() if k in PROFILE_DEFAULTS}
        profile = Profile(name=name, source=Path(doc.path), **known)
        profile.extends = doc.data.get("extends")
        profile.data = data
        profile.origins = {".".join(k): v for k, v in origins.items()}
        return profile

    def load(self, name: str, overrides: list[str] | None = None) -> Profile:
        path = self.path(name)
        return self._build(parse_document(_read_text(path), str(path)), name, overrides)

    def load_path(self, path: Path) -> Profile:
        """Validate a file that may live outside the search path (its `extends` use the store)."""
        return self._build(parse_document(_read_text(path), str(path)), path.stem)

    def validate_text(self, name: str, text: str, label: str | None = None) -> Profile:
        return self._build(parse_document(text, label or f"{name}.yaml"), name)

    def resolved_yaml(self, name: str) -> str:
        return to_yaml(self.load(name).data)

    # -- writing ----------------------------------------------------------------------------

    def save_text(self, name: str, text: str) -> Path:
        """Validate then write atomically into the user dir. An invalid text is never saved."""
        _check_profile_name(name)
        target = self.user_dir / f"{name}.yaml"
        self.validate_text(name, text, str(target))
        atomic_write(target, text)
        return target

    def new(self, name: str, base: str | None = None) -> Path:
        _check_profile_name(name)
        if name in self._files() and (self.user_dir / f"{name}.yaml").exists():
            raise UsageError(f"profile '{name}' already exists", "choose another name")
        if base is not None:
            self.path(base)  # unknown base -> clear error
            text = (
                f"description: {name} (based on {base})\n"
                f"extends: {base}\n"
                "# Set only what differs from the parent; `null` removes an inherited key.\n"
            )
            if DNS1123_LABEL.match(name) and len(name) <= 63:
                text += f"job_name: {name}\n"
        else:
            job = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:63] or "job"
            text = (
                f"description: {name}\n"
                f"job_name: {job}\n"
                "image: nvcr.io/nvidia/pytorch:26.02-py3\n"
                "workers: 1\n"
                "gpus: 1\n"
                "command: [python, train.py]\n"
            )
        return self.save_text(name, text)

    def duplicate(self, name: str, new_name: str) -> Path:
        text = self.raw_text(name)
        if (self.user_dir / f"{new_name}.yaml").exists():
            raise UsageError(f"profile '{new_name}' already exists", "choose another name")
        return self.save_text(new_name, text)


def check_job_name(name: str) -> str:
    """Raise UsageError unless name is a valid job name (a DNS-1123 label)."""
    try:
        return _dns_label(name)
    except _Invalid as bad:
        raise UsageError(f"job name {name!r}: {bad.expected}") from None


def _check_profile_name(name: str) -> None:
    if not PROFILE_NAME.match(name):
        raise UsageError(
            f"invalid profile name {name!r}",
            "use letters, digits, '.', '_' or '-' (at most 100), e.g. retinanet-big",
        )


def to_yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)


# ---------------------------------------------------------------------------------------------
# Overrides (--set FIELD=VALUE)


def _apply_sets(
    data: dict[str, Any],
    sets: list[str],
    origins: dict[tuple[str, ...], tuple[str, int | None]],
) -> dict[str, Any]:
    out = merge({}, data)
    problems = []
    for item in sets:
        label = f"--set {item}"
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(Problem(label, None, "", "expected FIELD=VALUE, e.g. --set workers=4"))
            continue
        path = tuple(key.split("."))
        top = SCHEMA.get(path[0])
        if top is None or (len(path) > 1 and isinstance(top, FieldSpec)) or len(path) > 2:
            hint = _did_you_mean(key, field_paths()) or "; valid: " + ", ".join(field_paths())
            problems.append(Problem(label, None, key, f"unknown field{hint}"))
            continue
        if isinstance(top, GroupSpec) and len(path) == 2 and path[1] not in top.fields:
            hint = _did_you_mean(path[1], top.fields) or "; valid: " + ", ".join(top.fields)
            problems.append(Problem(label, None, key, f"unknown field{hint}"))
            continue
        value = _parse_set_value(raw, top, path)
        if len(path) == 1:
            if value is None:
                out.pop(path[0], None)
            else:
                out[path[0]] = value
        else:
            group = out.setdefault(path[0], {})
            if not isinstance(group, dict):
                group = out[path[0]] = {}
            if value is None:
                group.pop(path[1], None)
            else:
                group[path[1]] = value
        origins[path] = (label, None)
    if problems:
        raise ProfileError(problems)
    return out


def _parse_set_value(raw: str, spec: FieldSpec | MappingSpec | GroupSpec, path: tuple) -> Any:
    # Text fields take the value exactly as written; typed fields parse it as a YAML scalar/list.
    textual = {"description", "job_name", "project", "image", "working_dir", "extends"}
    if path[0] in textual or (isinstance(spec, MappingSpec) and len(path) == 2):
        return raw
    if path[0] in ("command", "args") and not raw.lstrip().startswith("["):
        return raw
    try:
        return yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        return raw


def apply_overrides(profile: Profile, sets: list[str]) -> Profile:
    """A copy of profile with `--set FIELD=VALUE` overrides applied and re-validated."""
    origins = {tuple(k.split(".")): v for k, v in profile.origins.items()}
    merged = _apply_sets(profile.data, sets, origins)

    def where(path: tuple[str, ...]) -> tuple[str, int | None]:
        for n in range(len(path), 0, -1):
            if path[:n] in origins:
                return origins[path[:n]]
        return (str(profile.source or profile.name), None)

    data, problems = validate_data(merged, where)
    if problems:
        raise ProfileError(problems)
    known = {k: v for k, v in data.items() if k in PROFILE_DEFAULTS}
    out = Profile(name=profile.name, source=profile.source, **known)
    out.extends = profile.extends
    out.data = data
    out.origins = {".".join(k): v for k, v in origins.items()}
    return out
