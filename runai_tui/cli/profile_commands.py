"""Profile commands: `submit` and `profiles` (`lint` and `plan` read a profile's findings and
plan: lint_commands.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from runai_tui.cli.common import (
    Parser,
    add_set_argument,
    backend_for,
    client_for,
    load_profile,
    print_failure,
    print_json,
    settings_for,
    table,
)
from runai_tui.knowledge.lint.registry import blocking, lint
from runai_tui.profiles import ProfileStore
from runai_tui.profiles.docs import field_rows
from runai_tui.runai import submission
from runai_tui.runai.argv import display_argv
from runai_tui.shapes.errors import UsageError


def add_submit_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", required=True, metavar="NAME", help="profile name")
    p.add_argument("--name", metavar="JOB", help="job name (default: the profile's job_name)")
    add_set_argument(
        p, "override a field, e.g. --set workers=4 --set env.NCCL_DEBUG=WARN (repeatable)"
    )
    p.add_argument("--dry-run", action="store_true", help="print the exact command, run nothing")
    p.add_argument("--json", action="store_true", help='with --dry-run: {"argv": [...]}')
    p.add_argument(
        "--strict", action="store_true", help="refuse (exit 2) when lint finds a warning or error"
    )


def add_profiles_arguments(profiles: argparse.ArgumentParser) -> None:
    psub = profiles.add_subparsers(dest="profiles_command", metavar="ACTION", parser_class=Parser)
    psub.required = True
    pl = psub.add_parser("list", help="every profile, its origin and description")
    pl.add_argument("--json", action="store_true")
    ps = psub.add_parser("show", help="print a profile's YAML")
    ps.add_argument("name")
    ps.add_argument("--resolved", action="store_true", help="with extends merged in")
    pv = psub.add_parser("validate", help="validate profiles by name or path (default: all)")
    pv.add_argument("targets", nargs="*", metavar="NAME|PATH")
    pn = psub.add_parser("new", help="create a user profile")
    pn.add_argument("name")
    pn.add_argument("--from", dest="base", metavar="BASE", help="extend this profile")
    psub.add_parser("fields", help="every field --set accepts: its flag and CLI generations")


def cmd_submit(args: argparse.Namespace) -> int:
    if args.json and not args.dry_run:
        raise UsageError("--json goes with --dry-run", "add --dry-run")
    settings = settings_for(args)
    prepared = submission.prepare(
        ProfileStore().load(args.profile),
        args.sets,
        backend=backend_for(args),
        name=args.name,
        project=settings.project.value,
        project_explicit=settings.project.from_flag,
    )
    _submit_checks(prepared.profile, args.strict)
    if args.dry_run:
        if args.json:
            print_json({"argv": prepared.argv})
        else:
            print(display_argv(prepared.argv))
        return 0
    client = client_for(args)
    result = submission.submit(client, prepared, warn=_warn)
    where = " on the LOCAL cluster" if client.backend.is_local else ""
    print(f"Submitted job {result.name}{where}.")
    print(
        f"Follow it: runai-tui logs {result.name} -f   (status: runai-tui describe {result.name})"
    )
    return 0


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _submit_checks(profile: Any, strict: bool) -> None:
    """Warnings and errors of lint on stderr; with --strict, refuse to submit."""

    found = blocking(lint(profile))
    for finding in found:
        print(f"{finding.severity}: {finding.code}: {finding.message}", file=sys.stderr)
    if found and strict:
        raise UsageError(
            f"--strict: not submitting: {len(found)} finding(s) in profile '{profile.name}'",
            f"see each fix: runai-tui lint {profile.name}",
        )


def cmd_profiles(args: argparse.Namespace) -> int:
    store = ProfileStore()
    action = args.profiles_command
    if action == "list":
        entries = store.entries()
        if args.json:
            print_json(
                [
                    {
                        "name": e.name,
                        "path": str(e.path),
                        "origin": e.origin,
                        "description": e.description,
                        "shadows": str(e.shadows) if e.shadows else None,
                        "error": e.error,
                    }
                    for e in entries
                ]
            )
            return 0
        rows = [
            [
                e.name,
                e.origin + (" (shadows shipped)" if e.shadows else ""),
                f"INVALID: {e.error}" if e.error else e.description,
            ]
            for e in entries
        ]
        print(table(rows, ["PROFILE", "ORIGIN", "DESCRIPTION"]) if rows else "no profiles")
        return 0
    if action == "show":
        sys.stdout.write(
            store.resolved_yaml(args.name) if args.resolved else store.raw_text(args.name)
        )
        return 0
    if action == "validate":
        return _validate(store, args.targets)
    if action == "new":
        path = store.new(args.name, args.base)
        print(f"Created {path}")
        return 0
    if action == "fields":
        print(table([list(row) for row in field_rows()], ["FIELD", "FLAG", "CLI", "WHAT"]))
        return 0
    raise UsageError(f"unknown profiles action {action!r}")


def _validate(store: ProfileStore, targets: list[str]) -> int:
    problems = 0
    for target in targets or store.names():
        try:
            load_profile(store, target)
            print(f"ok: {target}")
        except UsageError as exc:  # a ProfileError too: each problem on its line
            problems += print_failure(exc)
    return 2 if problems else 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "submit": cmd_submit,
    "profiles": cmd_profiles,
}


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "submit": add_submit_arguments,
    "profiles": add_profiles_arguments,
}
