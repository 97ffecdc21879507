"""`--set FIELD=VALUE` overrides: parsed against the field table, applied, re-validated."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import yaml

from runai_tui.profiles.document import merge
from runai_tui.profiles.fields import BY_NAME
from runai_tui.profiles.schema import (
    SCHEMA,
    TRAINER_FIELD,
    FieldSpec,
    GroupSpec,
    MappingSpec,
    Problem,
    Profile,
    ProfileError,
    did_you_mean,
    field_paths,
    make_profile,
    validate_data,
)
from runai_tui.trainer_flags import FLAGS, flag_name, set_flag, setting_key, spelled


def apply_sets(
    data: Mapping[str, object],
    sets: list[str],
    origins: dict[tuple[str, ...], tuple[str, int | None]],
) -> dict[str, object]:
    out = merge({}, copy.deepcopy(data))  # the sets below write into nested mappings
    problems = []
    for item in sets:
        label = f"--set {item}"
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(Problem(label, None, "", "expected FIELD=VALUE, e.g. --set workers=4"))
            continue
        path = tuple(key.split("."))
        if path[0] == TRAINER and path[0] not in SCHEMA:
            message = _set_trainer_flag(out, path, raw, label, origins)
            if message:
                problems.append(Problem(label, None, key, message))
            continue
        top = SCHEMA.get(path[0])
        if top is None or (len(path) > 1 and isinstance(top, FieldSpec)) or len(path) > 2:
            hint = _trainer_hint(key) or did_you_mean(key, field_paths())
            hint = hint or "; valid: " + ", ".join(field_paths())
            problems.append(Problem(label, None, key, f"unknown field{hint}"))
            continue
        if isinstance(top, GroupSpec) and len(path) == 2 and path[1] not in top.fields:
            hint = did_you_mean(path[1], top.fields) or "; valid: " + ", ".join(top.fields)
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


# `--set trainer.NAME=VALUE`: a flag of the trainer, set where the profile's command or args pass
# it (runai_tui/trainer_flags/ holds the trainer's flag table and edits the words).
TRAINER = TRAINER_FIELD


def _set_trainer_flag(
    out: dict[str, Any],
    path: tuple[str, ...],
    raw: str,
    label: str,
    origins: dict[tuple[str, ...], tuple[str, int | None]],
) -> str:
    """Set the flag in `out`'s command or args; "" when done, else what is wrong."""
    asked = ".".join(path[1:])
    name = flag_name(asked)
    if name is None:
        # the suggestion compares the flag names alone, then names the field (`trainer.lr`)
        close = did_you_mean(spelled(asked), FLAGS)
        hint = close.replace("'", f"'{TRAINER}.", 1) or "; see: python -m trainer --help"
        return f"not a flag of the trainer{hint}"
    command, args = (out.get(k) or [] for k in ("command", "args"))
    command, args = ([w] if isinstance(w, str) else list(w) for w in (command, args))
    try:
        new_command, new_args = set_flag(command, args, name, raw)
    except ValueError as error:
        return str(error)
    for field, before, after in (("command", command, new_command), ("args", args, new_args)):
        if after != before:
            out[field] = after
            origins[(field,)] = (label, None)
    return ""


def _trainer_hint(key: str) -> str:
    """`--set lr=0.01`: the trainer's flag of that name is `trainer.lr`."""
    name = flag_name(key) if "." not in key else None
    return f"; did you mean '{TRAINER}.{name}'?" if name else ""


def _parse_set_value(
    raw: str, spec: FieldSpec | MappingSpec | GroupSpec, path: tuple[str, ...]
) -> object:
    # Text fields (and mapping values) take the value exactly as written; typed fields parse it
    # as a YAML scalar or list. A command or args not written as a [list] is one argv word.
    row = BY_NAME[path[0]]
    if row.text or (isinstance(spec, MappingSpec) and len(path) == 2):
        return raw
    if row.emit in ("command", "args") and not raw.lstrip().startswith("["):
        return raw
    try:
        return yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        return raw


def apply_overrides(profile: Profile, sets: list[str]) -> Profile:
    """A copy of profile with `--set FIELD=VALUE` overrides applied and re-validated."""
    origins = {tuple(k.split(".")): v for k, v in profile.origins.items()}
    merged = apply_sets(profile.data, sets, origins)

    def where(path: tuple[str, ...]) -> tuple[str, int | None]:
        for n in range(len(path), 0, -1):
            if path[:n] in origins:
                return origins[path[:n]]
        return (str(profile.source or profile.name), None)

    data, problems = validate_data(merged, where)
    if problems:
        raise ProfileError(problems)
    return make_profile(profile.name, profile.source, data, profile.extends, origins)


def set_key(item: str) -> str:
    """The field an override sets: `env.X` of `env.X=1`; `trainer.batch_size` and
    `trainer.batch-size` are one flag."""
    return setting_key(item.partition("=")[0])


def replaces(later: str, earlier: str) -> bool:
    """Whether override `later` (a key, set_key) makes `earlier` moot: the same field, or a whole
    field over one of its keys (`env` over `env.X`), or the command or args over a trainer flag
    they carry (`args` over `trainer.lr`). A key never makes its whole field moot: `env.X` after
    `env={…}` adds to it."""
    if later == earlier or earlier.startswith(later + "."):
        return True
    return later in ("args", "command") and earlier.startswith(f"{TRAINER}.")


def effective_sets(items: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The overrides that still count, in order, one per field: an override the later ones make
    moot (`replaces`) is dropped. Applying them gives the profile that applying all of `items`
    gives, so a record of a resubmit of a resubmit holds each field once, not its history
    (`env.GLOO_SOCKET_IFNAME=nonexist0` then `=lo` is `env.GLOO_SOCKET_IFNAME=lo`)."""
    kept: list[str] = []
    for item in items:
        key = set_key(item)
        kept = [k for k in kept if not replaces(key, set_key(k))]
        kept.append(item)
    return tuple(kept)
