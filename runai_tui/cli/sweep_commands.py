"""`runai-tui sweep`: a grid of jobs from one profile (runai_tui/workflows/sweep.py), every combination
prepared and checked before the first is submitted, each submitted through the one submit
sequence with the sweep's ID in its record; `--plan` sums what the sweep would cost."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runai_tui.cli.common import (
    add_set_argument,
    backend_for,
    client_for,
    print_error,
    print_json,
    settings_for,
    table,
)
from runai_tui.knowledge.lint.registry import blocking, lint
from runai_tui.knowledge.plan import make_plan
from runai_tui.profiles import ProfileError, ProfileStore, apply_overrides
from runai_tui.runai import runner, submission
from runai_tui.runai.argv import display_argv
from runai_tui.shapes.errors import Failure, UsageError
from runai_tui.util.duration import seconds_arg
from runai_tui.util.text import literal
from runai_tui.workflows import sweep
from runai_tui.workflows.gather import measure

if TYPE_CHECKING:
    from runai_tui.knowledge.plan import Plan
    from runai_tui.profiles import Profile
    from runai_tui.runai.client import RunaiClient


def add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = (
        "e.g. runai-tui sweep --profile retinanet-tcp --grid trainer.lr=0.01,0.02,0.04 "
        "--grid trainer.batch-size=4,8 --name lr   (6 jobs: lr-1 … lr-6)"
    )
    p.add_argument("--profile", required=True, metavar="NAME", help="profile name")
    p.add_argument(
        "--grid",
        dest="grids",
        action="append",
        default=[],
        metavar="FIELD=V1,V2",
        help="a field and its values, any --set field, e.g. trainer.lr=0.01,0.02 (repeatable: "
        "the jobs are every combination)",
    )
    add_set_argument(p, "override a field in every job, as submit does (repeatable)")
    p.add_argument(
        "--name",
        metavar="PREFIX",
        help="jobs are PREFIX-1 … PREFIX-N (default: the profile's job_name)",
    )
    p.add_argument("--dry-run", action="store_true", help="print every command, run nothing")
    p.add_argument(
        "--json",
        action="store_true",
        help='{"sweep": ID, "jobs": [{"name", "values", "argv"}]} (with --plan: the plan)',
    )
    p.add_argument("-y", "--yes", action="store_true", help="do not ask (required without a tty)")
    p.add_argument(
        "--plan",
        action="store_true",
        help="jobs, pods, GPUs and GPU-hours in all; submit nothing",
    )
    p.add_argument(
        "--dataset-size", type=int, metavar="N", help="with --plan: train images per epoch"
    )
    p.add_argument(
        "--job",
        metavar="JOB",
        help="with --plan: measure the step time from this job (default: the profile's job name)",
    )
    p.add_argument(
        "--step-time",
        type=seconds_arg(positive=True),
        metavar="S",
        help="with --plan: seconds per step, your estimate, where no job's is measured",
    )


def _prepare_all(args: argparse.Namespace) -> tuple[str, list[submission.Submission]]:
    """The sweep's ID and every job prepared (overrides applied, names checked, argv built): a
    bad value is one UsageError naming it and its field, before anything is submitted."""
    axes = sweep.parse_grid(args.grids)
    settings = settings_for(args)
    profile = ProfileStore().load(args.profile)
    if args.sets:
        profile = apply_overrides(profile, args.sets)  # a bad --set: said once, as submit says it
    prefix = args.name or profile.job_name or profile.name
    combos = sweep.combinations(axes)
    names = sweep.names_for(prefix, len(combos))
    sweep_id = sweep.new_id(prefix)
    prepared = []
    for name, values in zip(names, combos, strict=True):
        try:
            prepared.append(
                submission.prepare(
                    profile,
                    [*sweep.grid_sets(values), *sweep.output_dir_sets(profile, name, list(values))],
                    backend=backend_for(args),
                    name=name,
                    project=settings.project.value,
                    project_explicit=settings.project.from_flag,
                    prior_sets=args.sets,
                    sweep=sweep_id,
                    values=values,
                )
            )
        except ProfileError as exc:
            raise _bad_value(exc, values) from None
    return sweep_id, prepared


def _bad_value(exc: ProfileError, values: dict[str, str]) -> UsageError:
    """The one line that names the grid's value and field a ProfileError is about."""
    problem = exc.problems[0] if exc.problems else None
    for field, value in values.items():
        if problem is not None and problem.file == f"--set {field}={value}":
            about_value = value in problem.message  # else the field itself is wrong
            return UsageError(
                f"--grid {field}: {problem.message}; nothing submitted",
                f"fix or drop {value!r} in --grid {field}=…"
                if about_value
                else "see the fields: runai-tui profiles fields",
            )
    combo = ", ".join(f"{k}={v}" for k, v in values.items())
    return UsageError(f"--grid combination {combo}: {exc.message}; nothing submitted", exc.hint)


def _values_table(sweep_id: str, prepared: list[submission.Submission]) -> str:
    fields = list(prepared[0].record.values) if prepared[0].record else []
    rows = [
        [p.name or "", *(literal((p.record.values if p.record else {}).get(f, "")) for f in fields)]
        for p in prepared
    ]
    return f"sweep {sweep_id}: {len(prepared)} jobs\n" + table(rows, ["NAME", *fields])


def _lint_once(prepared: list[submission.Submission]) -> None:
    """Lint's warnings and errors on stderr, each once with the jobs it concerns."""
    seen: dict[str, list[str]] = {}
    for p in prepared:
        for finding in blocking(lint(p.profile)):
            seen.setdefault(f"{finding.severity}: {finding.code}: {finding.message}", []).append(
                p.name or ""
            )
    for line, names in seen.items():
        where = "" if len(names) == len(prepared) else f" ({', '.join(names)})"
        print(f"{line}{where}", file=sys.stderr)


def _confirm(count: int) -> bool:
    if not sys.stdin.isatty():
        raise UsageError(f"refusing to submit {count} jobs without a terminal", "add --yes")
    print(f"Submit {count} jobs? [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _job_dict(p: submission.Submission) -> dict[str, Any]:
    return {"name": p.name, "values": p.record.values if p.record else {}, "argv": p.argv}


def cmd_sweep(args: argparse.Namespace) -> int:
    if not args.plan and (
        args.dataset_size is not None or args.job is not None or args.step_time is not None
    ):
        raise UsageError("--dataset-size, --job and --step-time go with --plan", "add --plan")
    sweep_id, prepared = _prepare_all(args)
    if args.plan:
        return _plan(args, sweep_id, prepared)
    out = sys.stderr if args.json else sys.stdout
    _lint_once(prepared)  # on stderr, as submit says them, dry run or not
    if args.dry_run:
        if args.json:
            print_json({"sweep": sweep_id, "jobs": [_job_dict(p) for p in prepared]})
            return 0
        print(_values_table(sweep_id, prepared))
        for p in prepared:
            print(display_argv(p.argv))
        return 0
    client = client_for(args)
    taken = [job.name for job in client.list_jobs()]
    sweep.check_free([p.name or "" for p in prepared], taken, sweep.id_prefix(sweep_id))
    print(_values_table(sweep_id, prepared), file=out)
    if not args.yes and not _confirm(len(prepared)):
        print("Nothing submitted.", file=out)
        return 0
    submitted = _submit_all(client, sweep_id, prepared, out)
    if submitted is None:
        return 1
    where = " on the LOCAL cluster" if client.backend.is_local else ""
    print(f"Submitted sweep {sweep_id}: {len(submitted)} jobs{where}.", file=out)
    print(f"Follow it: runai-tui list --sweep {sweep_id}   (runai-tui wait --sweep {sweep_id})",
          file=out)  # fmt: skip
    if args.json:
        print_json({"sweep": sweep_id, "jobs": [_job_dict(p) for p in prepared]})
    return 0


def _submit_all(
    client: RunaiClient, sweep_id: str, prepared: list[submission.Submission], out: Any
) -> list[str] | None:
    """Submit in order; the first failure stops the rest and says which were submitted and the
    one command that deletes them (None then)."""
    done: list[str] = []
    said: set[str] = set()  # each warning once: every job of the sweep would say the same

    def warn_once(message: str) -> None:
        if message not in said:
            said.add(message)
            _warn(message)

    for p in prepared:
        try:
            result = submission.submit(client, p, warn=warn_once)
        except Failure as exc:
            print_error(f"{p.name}: {exc.message}", exc.hint)
            rest = len(prepared) - len(done) - 1
            if done:
                print_error(
                    f"sweep {sweep_id} stopped: submitted {', '.join(done)}; "
                    f"{rest + 1} not submitted",
                    f"delete them: runai-tui delete --sweep {sweep_id} -y",
                )
            else:
                print_error(f"sweep {sweep_id} stopped: nothing submitted")
            return None
        done.append(result.name)
        print(f"Submitted job {result.name}.", file=out, flush=True)
    return done


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _step_time(args: argparse.Namespace, first: Plan, profile: Profile) -> tuple[float | None, str]:
    """Seconds per step and where they come from: a job's records, else --step-time."""
    job = args.job or profile.job_name or profile.name
    note = ""
    try:
        measured = runner.run_sync(measure(first, client_for(args), job)).measured
        if measured is not None:
            return measured.step_time, f"measured from job {job} ({measured.source})"
        note = first.measure_note
    except Failure as exc:
        note = f"none ({exc.message})"
    if args.step_time is not None:
        return args.step_time, f"--step-time {args.step_time:g} s (estimate; measured: {note})"
    return None, f"unknown: measured {note}; give --job JOB or --step-time S"


def _plan(args: argparse.Namespace, sweep_id: str, prepared: list[submission.Submission]) -> int:
    plans = [make_plan(p.profile, args.dataset_size) for p in prepared]
    seconds, source = _step_time(args, plans[0], prepared[0].profile)
    jobs: list[dict[str, Any]] = []
    for p, plan in zip(prepared, plans, strict=True):
        hours = plan.total_steps * seconds / 3600 if seconds is not None else None
        gpus = p.profile.job_gpus
        jobs.append(
            {
                "name": p.name,
                "values": p.record.values if p.record else {},
                "pods": plan.pods,
                "gpus": gpus,
                "world_size": plan.world_size,
                "global_batch": plan.global_batch,
                "lr": plan.lr,
                "total_steps": plan.total_steps,
                "hours": hours,
                "gpu_hours": None if hours is None else hours * gpus,
            }
        )
    known = seconds is not None
    total = {
        "jobs": len(jobs),
        "pods": sum(j["pods"] for j in jobs),
        "gpus": sum(j["gpus"] for j in jobs),
        "hours": sum(j["hours"] for j in jobs) if known else None,
        "gpu_hours": sum(j["gpu_hours"] for j in jobs) if known else None,
    }
    if args.json:
        step = {"seconds": seconds, "source": source}
        print_json({"sweep": sweep_id, "step_time": step, "jobs": jobs, "total": total})
        return 0
    fields = list(jobs[0]["values"])
    rows = [
        [
            j["name"],
            *(literal(j["values"][f]) for f in fields),
            str(j["pods"]),
            str(j["gpus"]),
            str(j["global_batch"]),
            f"{j['lr']:.6g}",
            f"{j['total_steps']:,}",
            _hours(j["hours"]),
            _hours(j["gpu_hours"]),
        ]
        for j in jobs
    ]
    header = ["NAME", *fields, "PODS", "GPUS", "GLOBAL BATCH", "LR", "STEPS", "HOURS", "GPU-H"]
    print(f"sweep {sweep_id} (plan; nothing submitted): {len(jobs)} jobs from profile "
          f"{prepared[0].profile.name}")  # fmt: skip
    print(table(rows, header))
    spent = (
        f"{_hours(total['hours'])} job-hours, {_hours(total['gpu_hours'])} GPU-hours"
        if known
        else "hours unknown (no step time)"
    )
    print(f"in all: {total['jobs']} jobs, {total['pods']} pods, {total['gpus']} GPUs; {spent}")
    print(f"step time: {source}")
    if known and len({j["global_batch"] for j in jobs}) > 1:
        print("note: the jobs' batches differ; one step time for all is a rough figure")
    return 0


def _hours(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"sweep": cmd_sweep}
ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"sweep": add_sweep_arguments}
