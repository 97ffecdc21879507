"""Profile commands: `submit`, `profiles`, `lint` and `plan`. The profiles and YAML are imported
inside each command, so `list` and `diagnose --log` never load them."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runai_tui.cli.common import (
    Parser,
    add_set_argument,
    backend_for,
    client_for,
    print_json,
    settings_for,
    table,
)
from runai_tui.errors import Failure, UsageError
from runai_tui.knowledge.checks import blocking, exit_code, finding_dict, finding_line, lint
from runai_tui.profiles import ProfileError, ProfileStore, apply_overrides
from runai_tui.runai import submission
from runai_tui.runai.argv import display_argv

if TYPE_CHECKING:
    from runai_tui.profiles import Profile, ProfileStore

_SET_FIRST = "override a field first, as submit does (repeatable)"


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


def add_lint_arguments(li: argparse.ArgumentParser) -> None:
    """`lint` (runai_tui/knowledge/checks.py)."""
    li.add_argument("targets", nargs="*", metavar="PROFILE|PATH", help="default: every profile")
    add_set_argument(li, _SET_FIRST)
    li.add_argument("--json", action="store_true", help='{"findings": [...]}')


def add_plan_arguments(pl: argparse.ArgumentParser) -> None:
    """`plan` (runai_tui/knowledge/plan.py)."""
    pl.add_argument("profile", metavar="PROFILE")
    add_set_argument(pl, _SET_FIRST)
    pl.add_argument(
        "--dataset-size", type=int, metavar="N", help="train images (default: documented size)"
    )
    pl.add_argument(
        "--json", action="store_true", help="one JSON object (keys: see docs/profiles.md)"
    )
    pl.add_argument(
        "--job", metavar="JOB", help="measure step time from this job (default: the job name)"
    )
    pl.add_argument("--no-measure", action="store_true", help="do not look for a job's records")


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


def _lint_targets(
    store: ProfileStore, targets: list[str], sets: list[str]
) -> tuple[list[tuple[str, Profile]], int]:
    """Load each target (name or path) with overrides: ([(label, profile)], problems reported)."""

    loaded, problems = [], 0
    for target in targets or store.names():
        try:
            if target.endswith((".yaml", ".yml")) or os.sep in target:
                profile = store.load_path(Path(target))
            else:
                profile = store.load(target)
            if sets:
                profile = apply_overrides(profile, sets)
            loaded.append((target, profile))
        except ProfileError as exc:
            for problem in exc.problems:
                print(f"error: {problem}", file=sys.stderr)
            problems += len(exc.problems)
        except UsageError as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            if exc.hint:
                print(f"hint: {exc.hint}", file=sys.stderr)
            problems += 1
    return loaded, problems


def cmd_lint(args: argparse.Namespace) -> int:
    # lazy: off the dry-run start-up path; only this command loads it
    from runai_tui.knowledge.remedies import attach, remedy_dict, remedy_line

    loaded, problems = _lint_targets(ProfileStore(), args.targets, args.sets)
    found = []
    for label, profile in loaded:
        findings = lint(profile)
        attach(findings, profile)
        found += [(label, finding) for finding in findings]
    if args.json:
        print_json(
            {
                "findings": [
                    {**finding_dict(label, finding), "remedy": remedy_dict(finding)}
                    for label, finding in found
                ]
            }
        )
    else:
        for label, finding in found:
            print(finding_line(label, finding))
            if finding.remedy is not None:
                print(f"  {remedy_line(finding.remedy)}")
        counts = {s: sum(1 for _, f in found if f.severity == s) for s in ("error", "warning")}
        infos = len(found) - sum(counts.values())
        print(
            f"{len(loaded)} profile(s) checked: {counts['error']} error(s), "
            f"{counts['warning']} warning(s), {infos} info",
            file=sys.stderr,
        )
    if problems:
        return 2
    return exit_code(finding for _, finding in found)


def cmd_plan(args: argparse.Namespace) -> int:
    # lazy: off the dry-run start-up path; only this command loads it
    from runai_tui.knowledge.plan import make_plan, measure

    profile = ProfileStore().load(args.profile)
    if args.sets:
        profile = apply_overrides(profile, args.sets)
    plan = make_plan(profile, args.dataset_size)
    if not args.no_measure:
        job = args.job or profile.job_name or profile.name
        try:
            plan = measure(plan, client_for(args), job)
        except Failure as exc:  # no runai, not logged in: the plan stands without a measure
            plan.measure_note = f"none ({exc.message})"
    if args.json:
        print_json(plan.to_dict())
    else:
        print("\n".join(plan.lines()))
    return 0


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
        # lazy: off the dry-run start-up path; only this command loads it
        from runai_tui.profiles.docs import field_rows

        print(table([list(row) for row in field_rows()], ["FIELD", "FLAG", "CLI", "WHAT"]))
        return 0
    raise UsageError(f"unknown profiles action {action!r}")


def _validate(store: ProfileStore, targets: list[str]) -> int:
    problems = 0
    for target in targets or store.names():
        path = Path(target)
        try:
            if target.endswith((".yaml", ".yml")) or os.sep in target:
                store.load_path(path)
            else:
                store.load(target)
            print(f"ok: {target}")
        except ProfileError as exc:
            for problem in exc.problems:
                print(f"error: {problem}", file=sys.stderr)
            problems += len(exc.problems)
        except UsageError as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            problems += 1
    return 2 if problems else 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "submit": cmd_submit,
    "profiles": cmd_profiles,
    "lint": cmd_lint,
    "plan": cmd_plan,
}


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "submit": add_submit_arguments,
    "profiles": add_profiles_arguments,
    "lint": add_lint_arguments,
    "plan": add_plan_arguments,
}
