"""Profile -> argv for `runai training pytorch submit` (CLI v2 syntax); the project the user chose
(`with_project`) and the display form (`display_argv`) are in runai_tui/runai/argv.py.

This is where a profile field becomes argv elements: `build_submit_argv` walks the field table
(runai_tui/profiles/fields.py: each row's `flag`, `emit` style and `item` format) in its order.
Every value is its own argv element, exactly as written; repeated values repeat the flag.
"""

from __future__ import annotations

from typing import Any

from runai_tui.profiles import BY_NAME, FIELDS, Field, Profile

SUBMIT = ["runai", "training", "pytorch", "submit"]


def field_argv(row: Field, value: Any) -> list[str]:
    """The argv elements one field's value becomes (before the `--` tail)."""
    if row.emit in ("value", "count"):
        # "count": positiveInt in the CLI, so zero (a CPU-only pod) is said by leaving it out.
        keep = value is not None if row.emit == "value" else bool(value)
        return [row.flag, str(value)] if keep else []
    if row.emit == "switch":
        return [row.flag] if value else []
    if row.emit == "group":
        return [w for s in row.sub if s.name in value for w in (s.flag, str(value[s.name]))]
    if row.emit == "repeat":
        if isinstance(value, dict):
            items = [row.item.format(key=k, value=v) for k, v in value.items()]
        else:
            items = [
                row.item.format(**v) if isinstance(v, dict) else row.item.format(v) for v in value
            ]
        return [w for item in items for w in (row.flag, item)]
    return []  # "", "positional", "command", "args": placed by build_submit_argv


# The master pod's own settings. With any of them Run:ai builds the master from them instead of
# from the worker spec (the REST API's masterSpecSameAsWorker), so a master would silently lose
# the workers' NIC and NCCL environment, and rank 0 would take the slow path.
MASTER_FIELDS = (
    "master_gpus",
    "master_cpu",
    "master_memory",
    "master_extended_resources",
    "master_env",
    "master_command",
    "master_args",
    "master_no_pvcs",
)


def master_copies(profile: Profile) -> list[tuple[str, str, str]]:
    """(field, flag, value) of what the master gets from the workers once any master setting is
    emitted: each extended resource and each NCCL_* variable the master settings do not set."""
    if not any(field_argv(BY_NAME[n], getattr(profile, n)) for n in MASTER_FIELDS):
        return []
    out = [
        ("extended_resources", "--master-extended-resource", f"{key}={value}")
        for key, value in profile.extended_resources.items()
        if key not in profile.master_extended_resources
    ]
    out += [
        ("env", "--master-environment-variable", f"{key}={value}")
        for key, value in profile.env.items()
        if key.startswith("NCCL_") and key not in profile.master_env
    ]
    return out


def build_submit_argv(profile: Profile, name: str | None = None) -> list[str]:
    """The full argv (starting with "runai") that submits profile as job `name`."""
    job = name or profile.job_name or profile.name
    argv = [*SUBMIT, job]
    for row in FIELDS:
        argv.extend(field_argv(row, getattr(profile, row.name)))
    for _field, flag, value in master_copies(profile):
        argv.extend([flag, value])
    # With --command the words after `--` replace the entrypoint; without it they are its args.
    if profile.command:
        argv.extend(["--command", "--", *profile.command, *profile.args])
    elif profile.args:
        argv.extend(["--", *profile.args])
    return argv
