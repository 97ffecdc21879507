"""Job commands: `list`, `describe`, `logs`, `delete`, `suspend`, `resume`, `exec`, `projects`
and `info`."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from typing import Any

from runai_tui import __version__, paths
from runai_tui.cli.common import client_for, print_json, settings_for, table
from runai_tui.errors import RunaiError, UsageError


def add_parsers(sub: Any) -> None:
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


def cmd_list(args: argparse.Namespace) -> int:
    client = client_for(args)
    jobs = client.list_jobs()
    if args.json:
        print_json([job.to_dict() for job in jobs])
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
    print(table(rows, ["NAME", "STATUS", "PROJECT", "PODS", "GPUS"]) if rows else "no jobs")
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    detail = client_for(args).describe(args.job)
    if args.json:
        print_json(detail.to_dict())
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
    client = client_for(args)
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
    output = client_for(args).delete(args.job)
    print(output.strip() or f"Deleted {args.job}.")
    return 0


def cmd_suspend_resume(args: argparse.Namespace) -> int:
    client = client_for(args)
    output = client.suspend(args.job) if args.command == "suspend" else client.resume(args.job)
    done = {"suspend": "Suspended", "resume": "Resumed"}[args.command]
    print(output.strip() or f"{done} {args.job}.")
    return 0


def cmd_exec(args: argparse.Namespace) -> int:
    from runai_tui.runai.interactive import run_interactive

    cmd = list(args.cmd)
    client = client_for(args)
    argv = client.exec_argv(args.job, pod=args.pod, command=cmd or None, tty=sys.stdin.isatty())
    return run_interactive(argv)


def cmd_projects(args: argparse.Namespace) -> int:
    client = client_for(args)
    projects = client.projects()
    if args.json:
        print_json([{"name": p, "current": p == client.project} for p in projects])
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

    settings = settings_for(args)
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
        print_json(info)
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


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "list": cmd_list,
    "describe": cmd_describe,
    "logs": cmd_logs,
    "delete": cmd_delete,
    "suspend": cmd_suspend_resume,
    "resume": cmd_suspend_resume,
    "exec": cmd_exec,
    "projects": cmd_projects,
    "info": cmd_info,
}
