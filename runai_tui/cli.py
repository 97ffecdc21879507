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
from typing import Any, NoReturn

from runai_tui import __version__
from runai_tui.command import build_submit_argv, display_argv
from runai_tui.errors import Failure, RunaiError, UsageError
from runai_tui.profiles import (
    ProfileError,
    ProfileStore,
    apply_overrides,
    check_job_name,
    field_paths,
)


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
        help="auto (default, or $RUNAI_TUI_BACKEND): runai when installed, else the local cluster",
    )
    parser.add_argument("-p", "--project", default=None, help="Run:ai project (-p) for every call")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per runai call")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--readonly", action="store_true", help="TUI: hide submit, delete, exec")
    parser.add_argument(
        "--refresh", type=float, default=2.0, metavar="SECONDS", help="TUI: job list refresh"
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
    psub.add_parser("fields", help="every field --set accepts")

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
    sub.add_parser("info", help="paths, backend and runai version in use")
    return parser


# ---------------------------------------------------------------------------------------------


def _client(args: argparse.Namespace) -> Any:
    from runai_tui.backend import select_backend
    from runai_tui.client import RunaiClient

    return RunaiClient(select_backend(args.backend), project=args.project, timeout=args.timeout)


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
    store = ProfileStore()
    profile = store.load(args.profile)
    if args.sets:
        profile = apply_overrides(profile, args.sets)
    if args.name is not None:
        check_job_name(args.name)
    argv = build_submit_argv(profile, args.name)
    if args.json and not args.dry_run:
        raise UsageError("--json goes with --dry-run", "add --dry-run")
    if args.dry_run:
        if args.json:
            _print_json({"argv": argv})
        else:
            print(display_argv(argv))
        return 0
    client = _client(args)
    result = client.submit(argv)
    where = " on the LOCAL cluster" if client.backend.is_local else ""
    print(f"Submitted job {result.name}{where}.")
    print(
        f"Follow it: runai-tui logs {result.name} -f   (status: runai-tui describe {result.name})"
    )
    return 0


def cmd_profiles(args: argparse.Namespace) -> int:
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
        print("\n".join(field_paths()))
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
    for line in client.logs(args.job, pod=args.pod, follow=args.follow, tail=args.tail):
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
    print(output.strip() or f"{args.command.capitalize()}ed {args.job}.")
    return 0


def cmd_exec(args: argparse.Namespace) -> int:
    from runai_tui.interactive import run_interactive

    cmd = list(args.cmd)
    client = _client(args)
    argv = client.exec_argv(args.job, pod=args.pod, command=cmd or None, tty=sys.stdin.isatty())
    return run_interactive(argv)


def cmd_info(args: argparse.Namespace) -> int:
    from runai_tui.backend import select_backend
    from runai_tui.client import RunaiClient

    store = ProfileStore()
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local/state") / "runai-tui"
    print(f"runai-tui {__version__}")
    for directory in store.dirs:
        kind = "user" if directory == store.user_dir else "project"
        exists = "" if directory.is_dir() else "  (does not exist yet)"
        print(f"profiles ({kind}): {directory}{exists}")
    print(f"local cluster state: {state / 'local'}")
    backend = select_backend(args.backend)
    print(f"backend: {backend.kind}  ({backend.label})  {' '.join(backend.executable)}")
    try:
        version = RunaiClient(backend, timeout=args.timeout).version().strip()
    except RunaiError as exc:
        version = f"unavailable: {exc.message}"
    print(f"version: {version.splitlines()[0] if version else '-'}")
    return 0


def cmd_tui(args: argparse.Namespace) -> int:
    from runai_tui.tui.launch import run_tui  # Textual is imported only there

    return run_tui(
        backend_choice=args.backend,
        readonly=args.readonly,
        refresh=args.refresh,
        project=args.project,
        timeout=args.timeout,
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
    "info": cmd_info,
    None: cmd_tui,
}


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in raw
    try:
        head, tail = raw, None
        if "--" in raw:
            split = raw.index("--")
            head, tail = raw[:split], raw[split + 1 :]
        args = build_parser().parse_args(head)
        if tail is not None and args.command != "exec":
            raise UsageError("'--' is only for: runai-tui exec JOB -- CMD", "see: runai-tui --help")
        args.cmd = tail or []
        return COMMANDS[args.command](args)
    except Failure as exc:
        # A ProfileError carries every problem found; each gets its own `error:` line.
        problems = exc.problems if isinstance(exc, ProfileError) else [exc.message]
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
