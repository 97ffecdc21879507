"""The headless `runai-tui` command: the TUI's twin for scripts and CI, over the same core.

Imports neither Textual nor torch (the TUI is imported only when no subcommand is given).
Exit codes: 0 success, 1 runtime failure, 2 usage or validation error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from runai_tui import __version__, paths
from runai_tui.errors import Failure, RunaiError, RuntimeFailure, UsageError

TYPE_CHECKING = False  # as typing.TYPE_CHECKING; importing typing costs ~2 ms a start (issue 12)
if TYPE_CHECKING:
    from typing import Any, NoReturn

    from runai_tui.profiles import ProfileStore
# The profiles (and YAML) are imported by the commands that read them, not by `diagnose --log`
# or `list` (their start-up is part of their figures in benchmarks/, issue 12).

# argparse translates its own words ("options", "show this help message and exit") with gettext,
# which imports `locale` and searches the disk for message catalogues at every call, remembering
# nothing when there are none: ~2 ms of every headless start for the ~20 parsers below (issue
# 12). Python ships no catalogue for argparse and runai-tui's own help is English: keep them as is.
argparse._ = str  # type: ignore[attr-defined]  # str(message) is the message


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one `error:` line plus a hint, exit 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, f"see: {self.prog} --help")

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for every add_argument, and its default one imports shutil
        # for the terminal width: ~2 ms of every headless start (issue 12). Same width, from os.
        try:
            columns = int(os.environ.get("COLUMNS", "0"))
        except ValueError:
            columns = 0
        if columns <= 0:
            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
            except (AttributeError, ValueError, OSError):
                columns = 0
        return self.formatter_class(prog=self.prog, width=(columns or 80) - 2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="runai-tui",
        description="Job profiles, a TUI and a headless CLI for PyTorch jobs on NVIDIA Run:ai. "
        "With no subcommand, opens the TUI.",
    )
    parser.add_argument("--version", action="version", version=f"runai-tui {__version__}")
    parser.add_argument(
        "--backend",
        choices=["auto", "runai", "local"],
        default=None,
        help="auto (default; or $RUNAI_TUI_BACKEND, or config.toml): runai when installed, "
        "else the local cluster",
    )
    parser.add_argument(
        "-p",
        "--project",
        default=None,
        help="Run:ai project (-p) for every call (or $RUNAI_TUI_PROJECT, or config.toml)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per runai call")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--readonly", action="store_true", help="TUI: hide submit, delete, exec")
    parser.add_argument(
        "--refresh",
        type=float,
        default=None,
        metavar="SECONDS",
        help="TUI: job list refresh (default 2; or $RUNAI_TUI_REFRESH, or config.toml)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("submit", help="submit a job from a profile")
    p.add_argument("--profile", required=True, metavar="NAME", help="profile name")
    p.add_argument("--name", metavar="JOB", help="job name (default: the profile's job_name)")
    p.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a field, e.g. --set workers=4 --set env.NCCL_DEBUG=WARN (repeatable)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the exact command, run nothing")
    p.add_argument("--json", action="store_true", help='with --dry-run: {"argv": [...]}')
    p.add_argument(
        "--strict", action="store_true", help="refuse (exit 2) when lint finds a warning or error"
    )

    profiles = sub.add_parser("profiles", help="list, show, validate and create profiles")
    psub = profiles.add_subparsers(dest="profiles_command", metavar="ACTION", parser_class=_Parser)
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

    pl2 = sub.add_parser("list", help="list jobs")
    pl2.add_argument("--json", action="store_true")
    d = sub.add_parser("describe", help="describe a job: status, pods, events")
    d.add_argument("job")
    d.add_argument("--json", action="store_true")
    lg = sub.add_parser("logs", help="print a job's logs")
    lg.add_argument("job")
    lg.add_argument("-f", "--follow", action="store_true", help="stream until the pod ends")
    lg.add_argument("--pod", help="pod name, e.g. JOB-worker-0 (default: the master)")
    lg.add_argument("--tail", type=int, metavar="N", help="only the last N lines")
    dl = sub.add_parser("delete", help="delete a job")
    dl.add_argument("job")
    dl.add_argument("-y", "--yes", action="store_true", help="do not ask (required without a tty)")
    for verb in ("suspend", "resume"):
        sp = sub.add_parser(verb, help=f"{verb} a job")
        sp.add_argument("job")
    ex = sub.add_parser("exec", help="run a command (default: a shell) in a job's pod")
    ex.add_argument("job")
    ex.add_argument("--pod", help="pod name (default: the master)")
    # The command after `--` is split off before parsing (see main), so `--pod` may come anywhere.
    ex.epilog = "Everything after -- is the command, e.g.: runai-tui exec JOB --pod P -- ls -la"
    pj = sub.add_parser("projects", help="the projects you may use (runai project list)")
    pj.add_argument("--json", action="store_true")
    inf = sub.add_parser("info", help="settings and where each came from, paths, runai version")
    inf.add_argument("--json", action="store_true")
    _add_checks_parsers(sub)
    _add_health_parsers(sub)
    return parser


def _add_checks_parsers(sub: Any) -> None:
    """`lint` and `plan` (runai_tui/knowledge/checks.py, runai_tui/knowledge/plan.py)."""
    sets = {
        "dest": "sets",
        "action": "append",
        "default": [],
        "metavar": "FIELD=VALUE",
        "help": "override a field first, as submit does (repeatable)",
    }
    li = sub.add_parser("lint", help="check profiles for what breaks or slows a job")
    li.add_argument("targets", nargs="*", metavar="PROFILE|PATH", help="default: every profile")
    li.add_argument("--set", **sets)
    li.add_argument("--json", action="store_true", help='{"findings": [...]}')
    pl = sub.add_parser("plan", help="the distributed plan: world size, batch, lr, steps, comms")
    pl.add_argument("profile", metavar="PROFILE")
    pl.add_argument("--set", **sets)
    pl.add_argument(
        "--dataset-size", type=int, metavar="N", help="train images (default: documented size)"
    )
    pl.add_argument("--json", action="store_true", help="one JSON object (keys: see README)")
    pl.add_argument(
        "--job", metavar="JOB", help="measure step time from this job (default: the job name)"
    )
    pl.add_argument("--no-measure", action="store_true", help="do not look for a job's records")


def _add_health_parsers(sub: Any) -> None:
    """`diagnose` and `preflight` (logic: runai_tui/knowledge/diagnose.py, runai_tui/knowledge/preflight.py)."""
    dg = sub.add_parser("diagnose", help="read every pod's log: NCCL transport, failures, fixes")
    dg.add_argument("job", nargs="?", help="the job (or give --log FILE instead)")
    dg.add_argument("--pod", help="only this pod")
    dg.add_argument(
        "--log",
        dest="logs",
        action="append",
        default=[],
        metavar="FILE",
        help="read a saved log instead (the pod is the file name without extension; repeatable)",
    )
    dg.add_argument("--json", action="store_true", help='{"pods": [...], "findings": [...]}')
    pf = sub.add_parser("preflight", help="check a running job's pods: memlock, shm, GPUs, network")
    pf.add_argument("job")
    pf.add_argument("--pod", help="only this pod")
    pf.add_argument("--json", action="store_true", help='{"pods": [{"pod", "items": [...]}]}')


# ---------------------------------------------------------------------------------------------


def _settings(args: argparse.Namespace) -> Any:
    """The settings (flag > env > config.toml > default), resolved once per command."""
    if getattr(args, "settings", None) is None:
        from runai_tui.config import load_settings

        args.settings = load_settings(
            {"backend": args.backend, "project": args.project, "refresh": args.refresh}
        )
    return args.settings


def _client(args: argparse.Namespace) -> Any:
    from runai_tui.runai.backend import select_backend
    from runai_tui.runai.client import RunaiClient

    settings = _settings(args)
    return RunaiClient(
        select_backend(settings.backend.value),
        project=settings.project.value,
        timeout=args.timeout,
    )


def _print_json(data: Any) -> None:
    import json  # lazy: keeps the headless path's start-up at its floor (benchmarks/, issue 12)

    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    head = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()
    return "\n".join([head, *lines])


def cmd_submit(args: argparse.Namespace) -> int:
    from runai_tui.profiles import ProfileStore, apply_overrides, check_job_name
    from runai_tui.runai.command import build_submit_argv, display_argv, with_project

    store = ProfileStore()
    profile = store.load(args.profile)
    if args.sets:
        profile = apply_overrides(profile, args.sets)
    if args.name is not None:
        check_job_name(args.name)
    settings = _settings(args)
    argv = with_project(
        build_submit_argv(profile, args.name),
        settings.project.value,
        override=settings.project.from_flag,  # an explicit -p beats the profile's own project
    )
    if args.json and not args.dry_run:
        raise UsageError("--json goes with --dry-run", "add --dry-run")
    _submit_checks(profile, args.strict)
    if args.dry_run:
        if args.json:
            _print_json({"argv": argv})
        else:
            print(display_argv(argv))
        return 0
    client = _client(args)
    _check_cli_generation(client, profile)
    result = client.submit(argv)
    where = " on the LOCAL cluster" if client.backend.is_local else ""
    print(f"Submitted job {result.name}{where}.")
    print(
        f"Follow it: runai-tui logs {result.name} -f   (status: runai-tui describe {result.name})"
    )
    return 0


def _check_cli_generation(client: Any, profile: Any) -> None:
    """Exit 2 before submitting when the installed runai lacks a flag the profile needs."""
    from runai_tui.runai.generations import check_profile, detect

    found = detect(client)
    if found.warning:
        print(f"warning: {found.warning}", file=sys.stderr)
    check_profile(profile, found.cli)


def _submit_checks(profile: Any, strict: bool) -> None:
    """Warnings and errors of lint on stderr; with --strict, refuse to submit."""
    from runai_tui.knowledge.checks import blocking, lint

    found = blocking(lint(profile))
    for finding in found:
        print(f"{finding.severity}: {finding.code}: {finding.message}", file=sys.stderr)
    if found and strict:
        raise UsageError(
            f"--strict: not submitting: {len(found)} finding(s) in profile '{profile.name}'",
            f"see each fix: runai-tui lint {profile.name}",
        )


def _lint_targets(store: ProfileStore, targets: list[str], sets: list[str]) -> tuple[list, int]:
    """Load each target (name or path) with overrides: ([(label, profile)], problems reported)."""
    from runai_tui.profiles import ProfileError, apply_overrides

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
    from runai_tui.knowledge.checks import exit_code, lint
    from runai_tui.profiles import ProfileStore

    loaded, problems = _lint_targets(ProfileStore(), args.targets, args.sets)
    found = [(label, finding) for label, profile in loaded for finding in lint(profile)]
    if args.json:
        _print_json({"findings": [finding.to_dict(label) for label, finding in found]})
    else:
        for label, finding in found:
            print(finding.line(label))
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
    from runai_tui.knowledge.plan import make_plan, measure
    from runai_tui.profiles import ProfileStore, apply_overrides

    profile = ProfileStore().load(args.profile)
    if args.sets:
        profile = apply_overrides(profile, args.sets)
    plan = make_plan(profile, args.dataset_size)
    if not args.no_measure:
        job = args.job or profile.job_name or profile.name
        try:
            plan = measure(plan, _client(args), job)
        except Failure as exc:  # no runai, not logged in: the plan stands without a measure
            plan.measure_note = f"none ({exc.message})"
    if args.json:
        _print_json(plan.to_dict())
    else:
        print("\n".join(plan.lines()))
    return 0


def cmd_profiles(args: argparse.Namespace) -> int:
    from runai_tui.profiles import ProfileStore

    store = ProfileStore()
    action = args.profiles_command
    if action == "list":
        entries = store.entries()
        if args.json:
            _print_json(
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
        print(_table(rows, ["PROFILE", "ORIGIN", "DESCRIPTION"]) if rows else "no profiles")
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
        from runai_tui.profiles.docs import field_rows

        print(_table([list(row) for row in field_rows()], ["FIELD", "FLAG", "CLI", "WHAT"]))
        return 0
    raise UsageError(f"unknown profiles action {action!r}")


def _validate(store: ProfileStore, targets: list[str]) -> int:
    from runai_tui.profiles import ProfileError

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


def cmd_list(args: argparse.Namespace) -> int:
    client = _client(args)
    jobs = client.list_jobs()
    if args.json:
        _print_json([job.to_dict() for job in jobs])
        return 0
    if client.backend.is_local:
        print("# jobs on the LOCAL cluster (no runai installed)", file=sys.stderr)
    rows = [
        [
            j.name,
            j.status,
            j.project or "-",
            f"{j.running_pods if j.running_pods is not None else '-'}/"
            f"{j.requested_pods if j.requested_pods is not None else '-'}",
            f"{j.gpus:g}" if j.gpus is not None else "-",
        ]
        for j in jobs
    ]
    print(_table(rows, ["NAME", "STATUS", "PROJECT", "PODS", "GPUS"]) if rows else "no jobs")
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    detail = _client(args).describe(args.job)
    if args.json:
        _print_json(detail.to_dict())
        return 0
    job = detail.job
    print(f"Name:     {job.name}")
    print(f"Status:   {job.status}")
    print(f"Project:  {job.project or '-'}")
    if job.created:
        print(f"Created:  {job.created.isoformat()}")
    resources = detail.resource_rows()
    if resources:
        print("Resources:")
        for key, value in resources:
            print(f"  {key}: {value}")
    print("Pods:")
    for pod in detail.pods:
        extra = f"  {pod.message}" if pod.message else ""
        print(f"  {pod.name:<40} {pod.phase.value:<12}{extra}")
    if detail.events:
        print("Events:")
        for ev in detail.events:
            print(f"  {ev.time}  {ev.type:<8} {ev.reason:<16} {ev.message}")
    for note in detail.notes:
        print(f"Note: {note}")
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    client = _client(args)
    out = sys.stdout
    lines = client.logs(args.job, pod=args.pod, follow=args.follow, tail=args.tail)
    with contextlib.closing(lines):  # Ctrl-C or a closed pipe stops `logs` at once
        for line in lines:
            out.write(line + "\n")
            out.flush()
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError(f"refusing to delete {args.job!r} without a terminal", "add --yes")
        answer = input(f"Delete job {args.job!r}? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("Not deleted.")
            return 0
    output = _client(args).delete(args.job)
    print(output.strip() or f"Deleted {args.job}.")
    return 0


def cmd_suspend_resume(args: argparse.Namespace) -> int:
    client = _client(args)
    output = client.suspend(args.job) if args.command == "suspend" else client.resume(args.job)
    done = {"suspend": "Suspended", "resume": "Resumed"}[args.command]
    print(output.strip() or f"{done} {args.job}.")
    return 0


def cmd_exec(args: argparse.Namespace) -> int:
    from runai_tui.runai.interactive import run_interactive

    cmd = list(args.cmd)
    client = _client(args)
    argv = client.exec_argv(args.job, pod=args.pod, command=cmd or None, tty=sys.stdin.isatty())
    return run_interactive(argv)


def cmd_projects(args: argparse.Namespace) -> int:
    client = _client(args)
    projects = client.projects()
    if args.json:
        _print_json([{"name": p, "current": p == client.project} for p in projects])
        return 0
    for project in projects:
        print(f"{project}{'  (current)' if project == client.project else ''}")
    if not projects:
        print("no projects")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from runai_tui.profiles import ProfileStore
    from runai_tui.runai.backend import select_backend
    from runai_tui.runai.client import RunaiClient

    settings = _settings(args)
    store = ProfileStore()
    info: dict[str, Any] = {
        "version": __version__,
        "config_file": {"path": str(settings.file), "exists": settings.file.is_file()},
        "settings": {s.name: {"value": s.value, "source": s.source} for s in settings.all()},
        "profiles": [
            {
                "path": str(d),
                "origin": "user" if d == store.user_dir else "project",
                "exists": d.is_dir(),
            }
            for d in store.dirs
        ],
        "local_cluster": {
            "config": str(paths.local_config_file()),
            "state": str(paths.local_state_dir()),
            "data": str(paths.local_data_dir()),
        },
    }
    try:
        backend = select_backend(settings.backend.value)
    except RunaiError as exc:
        info["backend"] = {"kind": None, "error": exc.message, "hint": exc.hint}
    else:
        try:
            version = RunaiClient(backend, timeout=args.timeout).version().strip()
        except RunaiError as exc:
            version = f"unavailable: {exc.message}"
        info["backend"] = {
            "kind": backend.kind,
            "label": backend.label,
            "executable": backend.executable,
            "version": version.splitlines()[0] if version else "",
        }
    if args.json:
        _print_json(info)
        return 0
    print(f"runai-tui {__version__}")
    missing = "" if info["config_file"]["exists"] else "  (does not exist)"
    print(f"config file: {settings.file}{missing}")
    for setting in settings.all():
        value = setting.value if setting.value is not None else "-"
        shown = f"{value:g} s" if setting.name == "refresh" else value
        print(f"  {setting.name}: {shown}  (from {setting.source})")
    for entry in info["profiles"]:
        exists = "" if entry["exists"] else "  (does not exist yet)"
        print(f"profiles ({entry['origin']}): {entry['path']}{exists}")
    print(f"local cluster state: {paths.local_state_dir()}")
    print(f"local cluster data (PVCs): {paths.local_data_dir()}")
    found = info["backend"]
    if found["kind"] is None:
        print(f"backend: unavailable: {found['error']}")
        return 0
    print(f"backend: {found['kind']}  ({found['label']})  {' '.join(found['executable'])}")
    print(f"version: {found['version'] or '-'}")
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    from runai_tui.knowledge import diagnose

    if args.logs:
        if args.job or args.pod:
            raise UsageError(
                "diagnose takes a JOB or --log FILE..., not both",
                "runai-tui diagnose JOB [--pod POD], or runai-tui diagnose --log FILE",
            )
        paths = [Path(p) for p in args.logs]
        for path in paths:
            if not path.is_file():
                raise UsageError(f"--log {path}: no such file", "give the path of a saved log")
        try:
            report = diagnose.diagnose_files(paths)
        except OSError as exc:
            raise UsageError(f"--log {exc.filename}: {exc.strerror}", "check the file") from None
    elif args.job:
        import asyncio

        report = asyncio.run(diagnose.diagnose_job(_client(args), args.job, pod=args.pod))
    else:
        raise UsageError("diagnose needs a JOB or --log FILE", "see: runai-tui diagnose --help")
    if args.json:
        _print_json(report.to_dict())
    else:
        print(diagnose.render_text(report))
    return report.exit_code


def cmd_preflight(args: argparse.Namespace) -> int:
    import asyncio

    from runai_tui.knowledge import preflight

    client = _client(args)
    report = asyncio.run(preflight.preflight_job(client, args.job, pod=args.pod))
    if not report.pods:
        raise RuntimeFailure(f"job {args.job!r} has no pods", "wait until it is Running")
    if args.json:
        _print_json(report.to_dict())
    else:
        print(preflight.render_text(report))
    return report.exit_code


def cmd_tui(args: argparse.Namespace) -> int:
    from runai_tui.tui.launch import run_tui  # Textual is imported only there

    settings = _settings(args)
    return run_tui(
        backend_choice=settings.backend.value,
        readonly=args.readonly,
        refresh=settings.refresh.value,
        project=settings.project.value,
        timeout=args.timeout,
        project_explicit=settings.project.from_flag,
    )


COMMANDS = {
    "submit": cmd_submit,
    "profiles": cmd_profiles,
    "list": cmd_list,
    "describe": cmd_describe,
    "logs": cmd_logs,
    "delete": cmd_delete,
    "suspend": cmd_suspend_resume,
    "resume": cmd_suspend_resume,
    "exec": cmd_exec,
    "projects": cmd_projects,
    "info": cmd_info,
    "lint": cmd_lint,
    "plan": cmd_plan,
    "diagnose": cmd_diagnose,
    "preflight": cmd_preflight,
    None: cmd_tui,
}


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    head, tail = raw, None
    if "--" in raw:  # what follows is an exec command: its words are not ours
        split = raw.index("--")
        head, tail = raw[:split], raw[split + 1 :]
    debug = "--debug" in head
    try:
        args = build_parser().parse_args(head)
        if tail is not None and args.command != "exec":
            raise UsageError("'--' is only for: runai-tui exec JOB -- CMD", "see: runai-tui --help")
        args.cmd = tail or []
        return COMMANDS[args.command](args)
    except Failure as exc:
        # A ProfileError carries every problem found; each gets its own `error:` line.
        problems = getattr(exc, "problems", None) or [exc.message]
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        if debug:
            import traceback  # lazy, see _print_json

            traceback.print_exc()
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `runai-tui logs JOB | head`: the reader went away; that is not an error.
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return 0
    except Exception as exc:  # a bug of ours: still one line unless --debug
        if debug:
            import traceback  # lazy, see _print_json

            traceback.print_exc()
            return 1
        print(f"error: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("hint: rerun with --debug for the traceback", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
