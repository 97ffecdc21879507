"""`lint` and `plan`: what a profile would break or slow, and its distributed plan, before it
runs (runai_tui/knowledge/lint/checks.py, remedies.py and plan.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from runai_tui.cli.common import (
    add_set_argument,
    client_for,
    load_profile,
    print_failure,
    print_json,
)
from runai_tui.knowledge.lint.registry import exit_code, finding_line, lint
from runai_tui.knowledge.plan import Plan, apply_wire, make_plan
from runai_tui.knowledge.records.wire import where_measured
from runai_tui.knowledge.remedies import attach, remedy_line
from runai_tui.profiles import Profile, ProfileStore, apply_overrides
from runai_tui.runai import runner
from runai_tui.shapes.errors import ErrorKind, Failure, RunaiError, UsageError
from runai_tui.util.duration import seconds_arg
from runai_tui.workflows.gather import measure, read_job_check

_SET_FIRST = "override a field first, as submit does (repeatable)"


def add_lint_arguments(li: argparse.ArgumentParser) -> None:
    """`lint` (runai_tui/knowledge/lint/checks.py)."""
    li.add_argument("targets", nargs="*", metavar="PROFILE|PATH", help="default: every profile")
    add_set_argument(li, _SET_FIRST)
    li.add_argument("--json", action="store_true", help='{"findings": [...]}')
    li.add_argument(
        "--step-time",
        type=seconds_arg(positive=True),
        metavar="SECONDS",
        help="seconds a step, as a job measured it (`runai-tui plan` says it), for the "
        "checkpoint-interval and no-way-back rules (default: 1 s assumed)",
    )


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
    pl.add_argument(
        "--wire-from",
        metavar="JOB",
        help="price the all-reduce at the busbw JOB's comm check measured (its comm record: "
        "`runai-tui burnin` or a trainer run), not the assumed link",
    )


def _lint_targets(
    store: ProfileStore, targets: list[str], sets: list[str]
) -> tuple[list[tuple[str, Profile]], int]:
    """Load each target (name or path) with overrides: ([(label, profile)], problems reported)."""

    loaded, problems = [], 0
    for target in targets or store.names():
        try:
            profile = load_profile(store, target)
            if sets:
                profile = apply_overrides(profile, sets)
            loaded.append((target, profile))
        except UsageError as exc:  # a ProfileError too: each problem on its line
            problems += print_failure(exc)
    return loaded, problems


def cmd_lint(args: argparse.Namespace) -> int:
    loaded, problems = _lint_targets(ProfileStore(), args.targets, args.sets)
    found = []
    for label, profile in loaded:
        findings = lint(profile, step_time=args.step_time)
        attach(findings, profile, from_fix=True)  # a fix that is an override is the remedy
        found += [(label, finding) for finding in findings]
    if args.json:
        print_json(
            {"findings": [{"profile": label, **finding.to_dict()} for label, finding in found]}
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
    profile = ProfileStore().load(args.profile)
    if args.sets:
        profile = apply_overrides(profile, args.sets)
    plan = make_plan(profile, args.dataset_size)
    if args.wire_from:
        plan = _priced_by_wire(plan, args)
    if not args.no_measure:
        job = args.job or profile.job_name or profile.name
        try:
            plan = runner.run_sync(measure(plan, client_for(args), job))
        except Failure as exc:  # no runai, not logged in: the plan stands without a measure
            plan.measure_note = f"none ({exc.message})"
    if plan.measured is not None:  # how far apart checkpoints are, at the measured step time
        for finding in lint(profile, step_time=plan.measured.step_time):
            if finding.code in ("checkpoint-interval", "no-way-back"):
                plan.warnings.append(f"{finding.code}: {finding.message}")
    if args.json:
        print_json(plan.to_dict())
    else:
        print("\n".join(plan.lines()))
    return 0


def _priced_by_wire(plan: Plan, args: argparse.Namespace) -> Plan:
    """--wire-from JOB: the busbw of JOB's comm record; a job without one is a usage error."""
    try:
        check, _ = runner.run_sync(read_job_check(client_for(args), args.wire_from))
    except RunaiError as exc:
        if exc.kind is not ErrorKind.NOT_FOUND:
            raise
        raise UsageError(
            f"--wire-from {args.wire_from}: no such job", "see: runai-tui list"
        ) from None
    if check is None:
        raise UsageError(
            f"--wire-from {args.wire_from}: the job has no comm record (it never measured the "
            "wire: --comm-check off, one pod, or its log is gone)",
            f"measure it: runai-tui burnin --profile {args.profile}",
        )
    return apply_wire(plan, args.wire_from, check.busbw_gbs, where_measured(check))


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"lint": cmd_lint, "plan": cmd_plan}


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "lint": add_lint_arguments,
    "plan": add_plan_arguments,
}
