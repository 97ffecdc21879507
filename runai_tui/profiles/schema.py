"""The schema derived from the field table: problems, validation, and the `Profile` class.

The records here are namedtuples and plain classes, not dataclasses or typing.NamedTuples:
importing `dataclasses` (and `inspect` with it) costs ~7 ms at every start of the headless CLI, a
fifth of its budget, and `typing` ~2 ms (issue 12; benchmarks/fig_cli.py measures it,
tests/test_startup_imports.py keeps them off that path).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Iterable
from pathlib import Path

from runai_tui.errors import UsageError
from runai_tui.profiles.fields import BY_NAME, FIELDS, Field
from runai_tui.profiles.validators import Invalid, show

TYPE_CHECKING = False  # as typing.TYPE_CHECKING; importing typing costs ~2 ms a start (issue 12)
if TYPE_CHECKING:
    from typing import Any

# ---------------------------------------------------------------------------------------------
# Problems


class Problem(namedtuple("Problem", ["file", "line", "field", "message"])):
    """One thing wrong with a profile: where (`file`, `line` or None), which `field` ("" for the
    whole file), and the `message`: what value, what is expected."""

    __slots__ = ()

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


class FieldSpec(namedtuple("FieldSpec", ["check", "help"])):
    """A value (or list) field: the value's `check` and the field's `help`."""

    __slots__ = ()


class MappingSpec(namedtuple("MappingSpec", ["key", "value", "help"])):
    """A mapping with free keys (env, labels…): each `key` and `value` checked."""

    __slots__ = ()


class GroupSpec(namedtuple("GroupSpec", ["fields", "help"])):
    """A mapping with fixed sub-fields (cpu, memory, run_as): `fields` maps each to its FieldSpec."""

    __slots__ = ()


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


def field_paths() -> list[str]:
    """Every name `--set` accepts (groups as `cpu.request`; free mappings as `env.NAME`)."""
    out = []
    for row in FIELDS:
        if row.kind == "group":
            out.extend(f"{row.name}.{sub.name}" for sub in row.sub)
        elif row.kind == "mapping":
            out.append(f"{row.name}.KEY")
        else:
            out.append(row.name)
    return sorted(out)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    import difflib  # lazy: only a misspelt name needs it (start-up cost, issue 12)

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


# ---------------------------------------------------------------------------------------------
# The resolved profile: one attribute per table row (its `empty` value when unset)


# Every Profile attribute after `name`, in order, with its value when unset: `source`, one per
# table row (its `empty`), then the resolved document (what `profiles show --resolved` prints)
# and where each field came from ("env.NCCL_DEBUG" -> (file, line)). A list or dict is copied.
PROFILE_DEFAULTS: dict[str, Any] = {
    "source": None,
    **{row.name: row.empty for row in FIELDS},
    "data": {},
    "origins": {},
}
_NOT_SHOWN = ("data", "origins")  # left out of repr (long), still compared


class Profile:
    """A resolved, validated profile: `name`, `source`, one attribute per field of the table in
    runai_tui/profiles/fields.py (`extends` is the direct parent), `data` and `origins`.
    Compared by value, shown by repr, like a dataclass (see the module's note for why not one)."""

    def __init__(self, name: str, **fields: Any) -> None:
        unknown = sorted(fields.keys() - PROFILE_DEFAULTS.keys())
        if unknown:
            raise TypeError(f"Profile() got unexpected fields: {', '.join(unknown)}")
        self.name = name
        for key, default in PROFILE_DEFAULTS.items():
            if key in fields:
                setattr(self, key, fields[key])
            else:
                setattr(self, key, default.copy() if isinstance(default, list | dict) else default)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]  # mutable: unhashable, as the dataclass was

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if k not in _NOT_SHOWN)
        return f"Profile({shown})"


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
    data: dict[str, Any], where: Callable[[tuple[str, ...]], tuple[str, int | None]]
) -> tuple[dict[str, Any], list[Problem]]:
    """Check every field against SCHEMA. Returns the normalised data and every problem found."""
    problems: list[Problem] = []
    out: dict[str, Any] = {}

    def problem(path: tuple[str, ...], value: Any, expected: str) -> None:
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
