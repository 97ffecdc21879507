"""Job commands: `list`, `describe`, `logs`, `exec`, `projects` and `info` (`delete`, `suspend`
and `resume` act on many jobs: bulk_commands.py)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Any

from runai_tui import __version__
from runai_tui.cli.common import client_for, print_json, runai_cli_for, settings_for, table
from runai_tui.knowledge.records.recovery import Recovery, recovery
from runai_tui.profiles import ProfileStore
from runai_tui.runai import installed, pod_logs, runner
from runai_tui.runai.backend import select_backend
from runai_tui.runai.client import RunaiClient
from runai_tui.runai.interactive import run_interactive
from runai_tui.shapes.errors import RunaiError, UsageError
from runai_tui.shapes.models import JobDetail, Phase, format_gpus, format_pods, master_pod
from runai_tui.util import paths
from runai_tui.util.duration import go_duration, parse_duration
from runai_tui.util.text import natural_key
from runai_tui.workflows.sweep import sweep_jobs

if TYPE_CHECKING:
    from runai_tui.shapes.config import Settings


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    """`projects` and `info`: only --json."""
    parser.add_argument("--json", action="store_true")


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    add_json_argument(parser)
    parser.add_argument(
        "--sweep", metavar="ID", help="only the jobs of this sweep (runai-tui sweep prints its ID)"
    )


def add_describe_arguments(d: argparse.ArgumentParser) -> None:
    d.add_argument("job")
    d.add_argument("--json", action="store_true")


def add_logs_arguments(lg: argparse.ArgumentParser) -> None:
    lg.add_argument("job")
    lg.add_argument(
        "-f", "--follow", action="store_true", help="stream until the pod ends (waits if Pending)"
    )
    which = lg.add_mutually_exclusive_group()
    which.add_argument("--pod", help="pod name, e.g. JOB-worker-0 (default: the master)")
    which.add_argument(
        "--rank", type=int, metavar="N", help="the pod that runs rank N (0: the master)"
    )
    which.add_argument(
        "--all-pods", action="store_true", help="every pod, each line prefixed by [POD]"
    )
    lg.add_argument("--tail", type=int, metavar="N", help="only the last N lines")
    lg.add_argument("--since", metavar="DURATION", help="only lines newer than 30s, 5m, 2h...")
    lg.add_argument(
        "--previous", action="store_true", help="the container before the pod's last restart"
    )


def add_exec_arguments(ex: argparse.ArgumentParser) -> None:
    ex.add_argument("job")
    ex.add_argument("--pod", help="pod name (default: the master)")
    # The command after `--` is split off before parsing (see main), so `--pod` may come anywhere.
    ex.epilog = "Everything after -- is the command, e.g.: runai-tui exec JOB --pod P -- ls -la"


def cmd_list(args: argparse.Namespace) -> int:
    client = client_for(args)
    # Names as people read them (`t2` before `t10`), as the TUI's jobs table sorts them.
    jobs = sorted(client.list_jobs(), key=lambda job: natural_key(job.name))
    if args.sweep is not None:
        kept = set(sweep_jobs(client, args.sweep, jobs))
        jobs = [job for job in jobs if job.name in kept]
    if args.json:
        print_json([job.to_dict() for job in jobs])
        return 0
    if client.backend.is_local:
        print("# jobs on the LOCAL cluster (no runai installed)", file=sys.stderr)
    rows = [
        [j.name, j.status_shown, j.project or "-", format_pods(j), format_gpus(j)] for j in jobs
    ]
    header = ["NAME", "STATUS", "PROJECT", "PODS", "GPUS"]
    if any(j.family != "pytorch" for j in jobs):  # other training frameworks: say which
        header.append("FRAMEWORK")
        for row, job in zip(rows, jobs, strict=True):
            row.append(job.framework or job.family)
    empty = "no jobs" if args.sweep is None else f"no job of sweep {args.sweep} is left"
    print(table(rows, header) if rows else empty)
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    client = client_for(args)
    detail = client.describe(args.job)
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
    recovered = job_recovery(client, detail)
    if recovered.any:
        print(f"Recovery: {recovered.line()}")
    return 0


def job_recovery(client: RunaiClient, detail: JobDetail) -> Recovery:
    """Resumes, steps lost (the master's log), preemptions and pod restarts (describe)."""
    pod = master_pod(detail.pods)
    lines: list[str] = []
    if pod is not None and detail.job.phase is not Phase.PENDING:
        with contextlib.suppress(RunaiError):
            lines = list(client.logs(detail.job.name, pod=pod.name))
    raw = detail.raw.get("pods") if detail.raw else None
    pods = [p for p in raw if isinstance(p, dict)] if isinstance(raw, list) else []
    return recovery(lines, detail.events, pods)


def cmd_logs(args: argparse.Namespace) -> int:
    if args.tail is not None and args.tail < 0:
        raise UsageError(f"--tail {args.tail}: give 0 or more lines", "e.g. --tail 100")
    client = client_for(args)
    since = None
    if args.since is not None:
        since = go_duration(parse_duration(args.since, "--since"))
    out = sys.stdout
    lines = runner.iterate_sync(_log_lines(client, args, since))
    with contextlib.closing(lines):  # Ctrl-C or a closed pipe stops `logs` at once
        for line in lines:
            out.write(line + "\n")
            out.flush()
    return 0


async def _log_lines(
    client: RunaiClient, args: argparse.Namespace, since: str | None
) -> AsyncGenerator[str, None]:
    """The lines `logs` prints: one pod's, or every pod's prefixed by `[POD]`; after waiting for
    a Pending pod when following (said once on stderr)."""
    choice = pod_logs.LogChoice(args.follow, args.tail, since, args.previous)
    pod: str | None = args.pod
    detail = None
    if args.rank is not None or args.all_pods:
        detail = await client.adescribe(args.job)
        if args.rank is not None:
            pod = pod_logs.pod_for_rank(detail, args.rank)
    if args.follow and not args.previous:

        def notice(text: str) -> None:
            print(f"{text} (Ctrl-C to stop)", file=sys.stderr, flush=True)

        detail = await pod_logs.wait_until_started(client, args.job, pod, notice)
    if args.all_pods and detail is not None:
        merged = pod_logs.merged_lines(client, args.job, pod_logs.all_pods(detail), choice)
        async with contextlib.aclosing(merged) as pod_lines:
            async for item in pod_lines:
                yield f"[{item.pod}] {item.text}"
        return
    stream = client.stream_logs(
        args.job, pod, follow=args.follow, tail=args.tail, since=since, previous=args.previous
    )
    async with contextlib.aclosing(stream) as own:
        async for text in own:
            yield text


def cmd_exec(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    client = client_for(args)
    client.capabilities_for("exec")  # CLI v1 is refused before the command is built
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
    info = _info(args)
    if args.json:
        print_json(info)
    else:
        _print_info(info)
    return 0


def _info(args: argparse.Namespace) -> dict[str, Any]:
    """`info`'s document: settings and their sources, paths, the backend and its runai CLI."""
    settings = settings_for(args)
    store = ProfileStore()
    return {
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
        **_backend_info(settings, args.timeout),
    }


def _backend_info(settings: Settings, timeout: float) -> dict[str, Any]:
    """The `backend` entry (and `runai_cli` when there is a backend) of `info`'s document."""
    try:
        backend = select_backend(settings.backend.value)
    except RunaiError as exc:
        return {"backend": {"kind": None, "error": exc.message, "hint": exc.hint}}
    client = RunaiClient(backend, timeout=timeout, **runai_cli_for(settings))
    try:
        version = client.cli_version().line  # asked once: the runai CLI's entry reads it again
    except RunaiError as exc:
        version = f"unavailable: {exc.message}"
    found = {
        "kind": backend.kind,
        "label": backend.label,
        "executable": backend.executable,
        "version": version,
    }
    return {"backend": found, "runai_cli": _detected(client)}


def _print_info(info: dict[str, Any]) -> None:
    """`info` as text: the document `info --json` prints, read line by line."""
    print(f"runai-tui {info['version']}")
    config = info["config_file"]
    print(f"config file: {config['path']}{'' if config['exists'] else '  (does not exist)'}")
    for name, setting in info["settings"].items():
        value = setting["value"] if setting["value"] is not None else "-"
        shown = f"{value:g} s" if name == "refresh" else value
        print(f"  {name}: {shown}  (from {setting['source']})")
    for entry in info["profiles"]:
        exists = "" if entry["exists"] else "  (does not exist yet)"
        print(f"profiles ({entry['origin']}): {entry['path']}{exists}")
    print(f"local cluster state: {info['local_cluster']['state']}")
    print(f"local cluster data (PVCs): {info['local_cluster']['data']}")
    found = info["backend"]
    if found["kind"] is None:
        print(f"backend: unavailable: {found['error']}")
        return
    print(f"backend: {found['kind']}  ({found['label']})  {' '.join(found['executable'])}")
    print(f"version: {found['version'] or '-'}")
    detected = info["runai_cli"]
    if "error" in detected:
        print(f"runai CLI: {detected['error']}")
        return
    print(f"runai CLI: {detected['label']}  (decided by {detected['decided_by']})")
    shown_available = {True: "yes", False: "no", None: "unknown (tried)"}
    for row in detected["capabilities"]:
        print(f"  {row['capability']}: {shown_available[row['available']]}  (from {row['source']})")
    for warning in detected["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)


def _detected(client: RunaiClient) -> dict[str, Any]:
    """What runai-tui learned about the installed CLI: each capability and its source."""
    try:
        caps = client.capabilities_for(*installed.COMMANDS)
        if caps.override is None:
            client.cli_version()  # cached by the backend entry: nothing is asked again
    except (RunaiError, UsageError) as exc:
        return {"error": f"{exc.message} ({exc.hint})" if exc.hint else exc.message}
    sources = {caps.source(key) for key in installed.COMMANDS}
    label = caps.label
    if caps.override is not None:
        label = f"{caps.override.label}, from runai_cli ({caps.override_source})"
    return {
        "label": label,
        "decided_by": ", ".join(sorted(sources)),
        "capabilities": caps.report(),
        "warnings": list(caps.warnings),
    }


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "list": cmd_list,
    "describe": cmd_describe,
    "logs": cmd_logs,
    "exec": cmd_exec,
    "projects": cmd_projects,
    "info": cmd_info,
}


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "list": add_list_arguments,
    "describe": add_describe_arguments,
    "logs": add_logs_arguments,
    "exec": add_exec_arguments,
    "projects": add_json_argument,
    "info": add_json_argument,
}
