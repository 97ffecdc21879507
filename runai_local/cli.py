"""`runai-local`: the embedded local cluster's command line, shaped like `runai` v2.

    runai-local training pytorch submit|describe|logs|exec|port-forward|delete|suspend|resume|list ...
    runai-local pytorch <verb> ...            (alias, as `runai pytorch`)
    runai-local training list | workload list|describe|logs|exec|delete ...
    runai-local project list [--json] | whoami | version

Output formats are fixed in docs/contracts.md. Errors: one `Error: ...` line on stderr, exit 1
(as cobra does); `--debug` adds the traceback.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, TypeAlias, TypeVar

from runai_local import flags as F
from runai_local import jobs, state
from runai_local.errors import LocalError
from runai_local.flags import Flag, FlagError, Parsed
from runai_local.state import JobSpec, PodSpec, PodStatus
from runai_tui import __version__

PROG = "runai-local"
T = TypeVar("T")
FOLLOW_POLL_SECONDS = 0.2


class CliError(LocalError):
    """Printed as `Error: <message>`; exit 1."""


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


# ---- commands ------------------------------------------------------------------------------------


def cmd_submit(p: Parsed, argv: list[str]) -> int:
    # The spec builder, the PVCs and the config (YAML) only where used: over a quarter of the CPU of
    # each read command (describe, list, logs), which the TUI and `wait` poll
    from runai_local import config, jobspec, pvc

    cluster = config.load_config()
    spec, mounts = jobspec.build_spec(p, cluster, argv, Path.cwd())
    for mount in mounts:
        if mount.claim in cluster.pvcs and not mount.local.is_dir():
            # A claim mapped to a directory that is not there is an unbound PVC: the job waits.
            print(f"Warning: PVC {mount.claim}: {mount.local} does not exist; the workload "
                  "stays Pending until it does", file=sys.stderr)  # fmt: skip
            continue
        try:
            pvc.prepare(mount)
        except OSError as exc:
            raise CliError(f"cannot prepare PVC {mount.claim} at {mount.local}: {exc}") from None
    for warning in _start_warnings(spec):
        print(f"Warning: {warning}", file=sys.stderr)
    jobs.create(spec)
    name, project = spec["name"], spec["project"]
    if not p["quiet"]:
        _out(f"Creating pytorch training {name}...")
        _out(
            f"To track the workload's status, run '{PROG} training pytorch describe {name} "
            f"-p {project}' (local cluster: pods run on this machine)"
        )
    return 0


def _start_warnings(spec: JobSpec) -> list[str]:
    """Commands that will not start here: the pod will fail, as on a cluster; say so early."""
    out = []
    path = spec["baseEnv"].get("PATH", "")
    for argv0 in dict.fromkeys(pod["argv"][0] for pod in spec["pods"]):
        if "/" in argv0:
            target = Path(spec["workingDir"], argv0)
            if not (target.is_file() and os.access(target, os.X_OK)):
                out.append(f"command {argv0} is not an executable file here; the pod will fail")
        elif shutil.which(argv0, path=path) is None:
            out.append(f"command {argv0} is not on the pods' PATH; the pod will fail")
    return out


def cmd_list(p: Parsed, argv: list[str]) -> int:
    project = None if p["all"] else p["project"]
    views = jobs.all_views(project)
    for view in views:
        if view.problem:
            print(f"Warning: {view.problem}", file=sys.stderr)
    if p["status"]:
        views = [v for v in views if v.phase.lower() == p["status"].lower()]
    views.sort(key=lambda v: (v.spec.get("createdAt", ""), v.project, v.name))
    workloads = [v.workload() for v in views]
    start = 0
    if p["next-token"]:
        try:
            start = int(p["next-token"])
        except ValueError:
            raise CliError(f"invalid next token '{p['next-token']}'") from None
    nxt = ""
    if p["page-size"] is not None and p["page-size"] > 0:
        end = start + p["page-size"]
        nxt = str(end) if end < len(workloads) else ""
        workloads = workloads[start:end]
    else:
        workloads = workloads[start:]
    if p["max-items"] is not None and p["max-items"] >= 0:
        workloads = workloads[: p["max-items"]]
    if p["json"] or p["raw"] or p["yaml"]:  # JSON is valid YAML
        _out(json.dumps({"workloads": workloads, "next": nxt}, indent=2))
        return 0
    header = ["Workload", "Type", "Status", "Project", "Preemptible", "Running/Requested Pods"]
    header.append("GPU Allocation")
    rows = [
        [
            w["name"],
            "Training",
            w["phase"],
            w["projectName"],
            "Yes" if w["preemptible"] else "No",
            f"{w['runningPods']}/{w['requestedPods']}",
            f"{w['allocatedGPUs']:.2f}",
        ]
        for w in workloads
    ]
    _table(header, rows, headers=not p["no-headers"])
    if nxt:
        _out(f"\nMore workloads: --next-token {nxt}")
    return 0


def _table(header: list[str], rows: list[list[str]], headers: bool = True) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    fmt = "   ".join(f"{{:<{w}}}" for w in widths)
    if headers:
        _out(fmt.format(*header).rstrip())
        _out("─" * (sum(widths) + 3 * (len(widths) - 1)))
    for row in rows:
        _out(fmt.format(*row).rstrip())


# `runai training pytorch describe` lists at most this many pods and events unless asked for more
# with --pod-limit / --event-limit (-1: no limit); the local cluster keeps the same defaults, so a
# caller that forgets the flags loses pods here as it would on a cluster.
DEFAULT_POD_LIMIT = 10
DEFAULT_EVENT_LIMIT = 50


def _limited(items: list[T], limit: int | None, default: int) -> list[T]:
    limit = default if limit is None else limit
    return items if limit < 0 else items[:limit]


def describe_doc(
    view: jobs.JobView, pod_limit: int | None = None, event_limit: int | None = None
) -> dict[str, Any]:
    doc = view.workload()
    pods_spec = view.spec.get("pods") or []
    node_of = {p["name"]: p.get("node") for p in pods_spec}
    argv_of = {p["name"]: p.get("argv", []) for p in pods_spec}
    doc["pods"] = [
        {
            "name": pod.get("name"),
            "phase": pod.get("phase"),
            "role": pod.get("role"),
            "nodeName": node_of.get(pod.get("name") or "") or state.NODE_NAME,
            "pid": pod.get("pid"),
            "exitCode": pod.get("exitCode"),
            "restartCount": pod.get("restartCount") or 0,
            "startedAt": pod.get("startedAt"),
            "finishedAt": pod.get("finishedAt"),
            "runs": pod.get("runs") or [],
            "message": pod.get("message", ""),
            "gpus": pod.get("gpus", 0),
            "command": argv_of.get(pod.get("name") or "", []),
        }
        for pod in _limited(view.status.get("pods") or [], pod_limit, DEFAULT_POD_LIMIT)
    ]
    doc["events"] = _limited(view.status.get("events") or [], event_limit, DEFAULT_EVENT_LIMIT)
    doc["resources"] = view.spec.get("resources") or {}
    doc["notes"] = list(view.spec.get("notes") or [])
    if view.problem:
        doc["notes"].insert(0, view.problem)
    doc["spec"] = {
        k: view.spec.get(k)
        for k in (
            "submitArgv",
            "flags",
            "rest",
            "image",
            "workingDir",
            "workingDirRequested",
            "mounts",
            "annotations",
            "labels",
            "noMaster",
            "worldSize",
            "graceSeconds",
        )
    }
    doc["masterPort"] = view.status.get("masterPort")
    doc["stateDir"] = str(view.jobdir)
    return doc


def cmd_describe(p: Parsed, argv: list[str]) -> int:
    name = _one_name(p)
    view = jobs.load(jobs.find(name, p["project"]))
    doc = describe_doc(view, p["pod-limit"], p["event-limit"])
    if p["output"] in ("json", "yaml"):  # yaml: JSON is valid YAML
        _out(json.dumps(doc, indent=2))
        return 0
    spec = doc["spec"]
    lines = [
        ("Name", doc["name"]),
        ("Project", doc["projectName"]),
        ("Id", doc["id"]),
        ("Type", "Training (PyTorch) on the local cluster"),
        ("Status", doc["phase"]),
        ("Message", doc["message"]),
        ("Created", doc["createdAt"]),
        ("Pods", f"{doc['runningPods']} running / {doc['requestedPods']} requested"),
        ("GPUs", f"{doc['allocatedGPUs']} allocated"),
        ("Priority", f"{doc['priority']} ({'' if doc['preemptible'] else 'non-'}preemptible)"),
        ("Preemptions", str(doc["preemptions"])),
        ("Working dir", spec.get("workingDir") or ""),
        ("Master port", str(doc.get("masterPort") or "")),
        ("State", doc["stateDir"]),
    ]
    for key, value in lines:
        _out(f"{key + ':':<13}{value}")
    for mount in spec.get("mounts") or []:
        _out(f"{'PVC:':<13}{mount['claim']} at {mount['path']} -> {mount['local']}")
    _out("\nPods:")
    _table(
        ["Name", "Role", "Phase", "PID", "Restarts", "Exit", "Message"],
        [
            [
                pod["name"],
                pod["role"],
                pod["phase"],
                str(pod["pid"] or ""),
                str(pod.get("restartCount") or 0),
                "" if pod["exitCode"] is None else str(pod["exitCode"]),
                pod["message"],
            ]
            for pod in doc["pods"]
        ],
    )
    _out("\nEvents:")
    _table(
        ["Time", "Type", "Reason", "Message"],
        [[e["createdAt"], e["type"], e["reason"], e["message"]] for e in doc["events"]],
    )
    if doc["notes"]:
        _out("\nNotes:")
        for note in doc["notes"]:
            _out(f"  - {note}")
    return 0


def _names(p: Parsed) -> list[str]:
    """Workload names from the positionals, else `--name`, else the job with `--uuid`."""
    if p.positionals:
        return p.positionals
    if p.values.get("name"):
        return [p["name"]]
    if p.values.get("uuid"):
        for view in jobs.all_views(p["project"]):
            if view.spec.get("id") == p["uuid"]:
                return [view.name]
        raise CliError(f"workload with uuid '{p['uuid']}' could not be found")
    return []


def _one_name(p: Parsed) -> str:
    names = _names(p)
    if not names:
        raise CliError("workload name is required")
    if len(names) > 1:
        raise CliError(f"accepts at most 1 arg(s), received {len(names)}")
    return names[0]


def _pod_of(view: jobs.JobView, pod_name: str | None) -> PodSpec:
    pods = view.spec.get("pods") or []
    if not pods:
        raise CliError(f"workload '{view.name}' has no readable pods: {view.problem}")
    if not pod_name:
        return pods[0]  # the master, as the real CLI's "first pod"
    for pod in pods:
        if pod["name"] == pod_name:
            return pod
    names = ", ".join(p["name"] for p in pods)
    raise CliError(f"pod '{pod_name}' could not be found in workload '{view.name}' (pods: {names})")


def _pod_status(view: jobs.JobView, name: str) -> PodStatus:
    none: PodStatus = {}
    return next((p for p in view.status.get("pods") or [] if p.get("name") == name), none)


def cmd_logs(p: Parsed, argv: list[str]) -> int:
    name = _one_name(p)
    jobdir = jobs.find(name, p["project"])
    view = jobs.load(jobdir)
    pod = _pod_of(view, p["pod"])
    paths = state.JobPaths(jobdir)
    previous = bool(p["previous"])
    log_path = paths.pod_log(pod["name"], previous)
    if previous and not log_path.exists():
        raise CliError(
            f'previous terminated container "pytorch" in pod "{pod["name"]}" not found '
            "(the pod has not restarted)"
        )
    out = sys.stdout.buffer
    try:
        with open(log_path, "rb") as fh:
            inode = os.fstat(fh.fileno()).st_ino
            data = fh.read()
    except FileNotFoundError:
        inode, data = 0, b""
    offset = len(data)
    if p["since"]:
        cutoff = time.time() - F.duration_seconds(p["since"])
        data = data[_offset_since(paths.pod_log_times(pod["name"], previous), cutoff, data) :]
    tail = p["tail"]
    if tail is not None and tail >= 0:
        lines = data.splitlines(keepends=True)
        data = b"".join(lines[-tail:]) if tail else b""
    out.write(data)
    out.flush()
    if not p["follow"] or previous:
        return 0
    # Follow until the pod (or the whole job) ends, then drain what is left. A restarted pod
    # writes a new file (the old one becomes the previous log): follow the new container.
    last_check = 0.0
    while True:
        offset, inode = _copy_new(log_path, offset, inode, out)
        now = time.monotonic()
        if now - last_check >= 1.0 or not jobdir.exists():
            last_check = now
            if not jobdir.exists():
                return 0
            view = jobs.load(jobdir)
            pod_phase = _pod_status(view, pod["name"]).get("phase")
            job_done = view.phase in ("Completed", "Failed", "Stopped", "Unknown", "Deleting")
            if job_done or pod_phase in ("Succeeded", "Failed"):
                _copy_new(log_path, offset, inode, out)
                return 0
        time.sleep(FOLLOW_POLL_SECONDS)


def _offset_since(times: Path, cutoff: float, data: bytes) -> int:
    """Where the bytes written after `cutoff` (epoch seconds) start in a log, at a line start.
    `times` holds `EPOCH SIZE` lines (the supervisor notes each growth, within a poll)."""
    start = 0
    try:
        text = times.read_text(encoding="ascii")
    except FileNotFoundError:
        return 0
    for line in text.splitlines():
        when, _, size = line.partition(" ")
        try:
            if float(when) > cutoff:
                break
            start = int(size)
        except ValueError:
            continue
    start = min(start, len(data))
    if start and data[start - 1 : start] != b"\n":
        newline = data.find(b"\n", start)
        start = len(data) if newline < 0 else newline + 1
    return start


def _copy_new(path: Path, offset: int, inode: int, out: BinaryIO) -> tuple[int, int]:
    """Copy what was added to PATH since OFFSET; a new file (a restart, a resume) from its
    start. Returns the new (offset, inode)."""
    try:
        with open(path, "rb") as fh:
            info = os.fstat(fh.fileno())
            if info.st_ino != inode or info.st_size < offset:
                offset, inode = 0, info.st_ino
            fh.seek(offset)
            chunk = fh.read()
    except FileNotFoundError:
        return offset, inode
    if chunk:
        out.write(chunk)
        out.flush()
    return offset + len(chunk), inode


def cmd_exec(p: Parsed, argv: list[str]) -> int:
    name = _one_name(p)
    jobdir = jobs.find(name, p["project"])
    view = jobs.load(jobdir)
    pod = _pod_of(view, p["pod"])
    phase = _pod_status(view, pod["name"]).get("phase", "Unknown")
    if view.phase != "Running" or phase != "Running":
        raise CliError(
            f"pod '{pod['name']}' is {phase} (workload {view.phase}); exec needs a running pod"
        )
    command = p.rest or p.positionals[1:]
    if not command:
        command = ["bash"] if shutil.which("bash") else ["sh"]
    # The spec builder off the read commands' start, as in cmd_submit
    from runai_local import jobspec

    # Listed before the command starts, so the command itself is not among the pod's processes.
    pids = state.processes_of_job(jobdir, pod["name"])
    env = jobspec.exec_environment(
        view.spec, pod, int(view.status.get("masterPort") or 0), jobdir, pids
    )
    if os.environ.get("TERM"):
        env["TERM"] = os.environ["TERM"]
    try:
        os.chdir(view.spec["workingDir"])
    except OSError as exc:
        raise CliError(f"cannot enter working dir {view.spec['workingDir']}: {exc}") from None
    sys.stdout.flush()
    try:
        os.execvpe(command[0], command, env)
    except OSError as exc:
        print(f'Error: exec: "{command[0]}": {exc.strerror or exc}', file=sys.stderr)
        return 127
    return 0  # not reached


def cmd_port_forward(p: Parsed, argv: list[str]) -> int:
    # asyncio off runai-local's start (docs/performance.md)
    from runai_local import portforward

    name = _one_name(p)
    jobdir = jobs.find(name, p["project"])
    pod = _pod_of(jobs.load(jobdir), p["pod"])
    return portforward.forward(jobdir, pod["name"], p["address"], p["port"])


def cmd_delete(p: Parsed, argv: list[str]) -> int:
    names = _names(p)
    if not names:
        raise CliError("workload name is required")
    for name in names:
        jobs.delete(jobs.find(name, p["project"]))
        _out(f"Successfully deleted workload {name}")
    return 0


def cmd_suspend(p: Parsed, argv: list[str]) -> int:
    name = _one_name(p)
    jobs.suspend(jobs.load(jobs.find(name, p["project"])))
    _out(f"Successfully suspended workload {name}")
    return 0


def cmd_resume(p: Parsed, argv: list[str]) -> int:
    name = _one_name(p)
    jobs.resume(jobs.load(jobs.find(name, p["project"])))
    _out(f"Successfully resumed workload {name}")
    return 0


def cmd_standard(p: Parsed, argv: list[str]) -> int:
    # `runai training describe|logs|...` act on *standard* training; the local cluster has only
    # PyTorch workloads, so these find nothing -- as the real CLI would for a PyTorch job.
    name = p.positionals[0] if p.positionals else ""
    where = f"project '{p['project']}'" if p["project"] else "any project"
    raise CliError(
        f"workload '{name}' could not be found in {where} (standard training; "
        f"use 'training pytorch' for PyTorch workloads)"
    )


def cmd_project_list(p: Parsed, argv: list[str]) -> int:
    """The projects: the default one (config `project`) and every project holding a workload."""
    # The config (YAML) off the read commands' start, as in cmd_submit
    from runai_local.config import load_config

    default = load_config().project
    found = sorted({d.parent.name for d in state.iter_job_dirs()} - {default})
    projects: list[dict[str, Any]] = [
        {"name": name, "default": name == default} for name in [default, *found]
    ]
    if p["json"] or p["yaml"]:  # JSON is valid YAML
        _out(json.dumps({"projects": projects}, indent=2))
        return 0
    rows = [[x["name"], "yes" if x["default"] else ""] for x in projects]
    _table(["Project", "Default"], rows, headers=not p["no-headers"])
    return 0


def cmd_whoami(p: Parsed, argv: list[str]) -> int:
    _out(getpass.getuser())
    return 0


def cmd_version(p: Parsed, argv: list[str]) -> int:
    _out(f"{PROG} {__version__} (embedded local cluster)")
    return 0


# ---- command tree ----------------------------------------------------------------------------

Handler = Callable[[Parsed, list[str]], int]
Leaf = tuple[Handler, list[Flag], str]
Node: TypeAlias = "Leaf | dict[str, Node]"  # a command, or the words under a command word

_PYTORCH: dict[str, Node] = {
    "submit": (cmd_submit, F.SUBMIT_FLAGS, "Submit a PyTorch training workload"),
    "list": (cmd_list, F.LIST_FLAGS, "List PyTorch training workloads"),
    "describe": (cmd_describe, F.DESCRIBE_FLAGS, "Describe a PyTorch training workload"),
    "logs": (cmd_logs, F.LOGS_FLAGS, "Show the logs of a pod"),
    "exec": (cmd_exec, F.EXEC_FLAGS, "Run a command in a pod"),
    "port-forward": (
        cmd_port_forward,
        F.PORT_FORWARD_FLAGS,
        "Forward local ports to a pod (local pods: their ports are already local)",
    ),
    "delete": (cmd_delete, F.ACTION_FLAGS, "Delete a workload and stop all its processes"),
    "suspend": (cmd_suspend, F.ACTION_FLAGS, "Suspend a workload (stop its pods)"),
    "resume": (cmd_resume, F.ACTION_FLAGS, "Resume a suspended workload"),
}
_STANDARD = {
    verb: (cmd_standard, flags, "standard training (none exist on the local cluster)")
    for verb, flags in (
        ("describe", F.DESCRIBE_FLAGS),
        ("logs", F.LOGS_FLAGS),
        ("exec", F.EXEC_FLAGS),
        ("port-forward", F.PORT_FORWARD_FLAGS),
        ("delete", F.ACTION_FLAGS),
        ("suspend", F.ACTION_FLAGS),
        ("resume", F.ACTION_FLAGS),
    )
}
TREE: dict[str, Node] = {
    "training": {
        "list": (cmd_list, F.LIST_FLAGS, "List training workloads of every framework"),
        "pytorch": _PYTORCH,
        **_STANDARD,
    },
    "pytorch": _PYTORCH,
    "workload": {verb: _PYTORCH[verb] for verb in ("list", "describe", "logs", "exec", "delete")},
    "project": {"list": (cmd_project_list, F.PROJECT_LIST_FLAGS, "List projects")},
    "whoami": (cmd_whoami, [], "Show the current user"),
    "version": (cmd_version, F.PLAIN_FLAGS, "Show the version"),
}

_GLOBAL_WITH_VALUE = {"--config-file", "--config-path"}


def _help(path: list[str], node: Node) -> str:
    title = " ".join([PROG, *path])
    if isinstance(node, dict):
        lines = [f"Usage:\n  {title} [command]\n", "Available Commands:"]
        for word, child in node.items():
            desc = child[2] if isinstance(child, tuple) else f"{word} commands"
            lines.append(f"  {word:<12} {desc}")
        lines.append(f"\nGlobal Flags:\n{F.usage(F.GLOBAL_FLAGS)}")
        return "\n".join(lines)
    _handler, flags, desc = node
    return f"{desc}\n\nUsage:\n  {title} [flags]\n\nFlags:\n{F.usage(flags)}\n\nGlobal Flags:\n{F.usage(F.GLOBAL_FLAGS)}"


def _resolve(argv: list[str]) -> tuple[list[str], Node, list[str]]:
    """Walk the command words (skipping global flags, as cobra does) to a node; return the rest."""
    node: Node = TREE
    path: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv) and isinstance(node, dict):
        word = argv[i]
        if word == "--":
            rest.extend(argv[i:])
            i = len(argv)
            break
        if word.startswith("-"):
            rest.append(word)
            if word in _GLOBAL_WITH_VALUE and i + 1 < len(argv):
                rest.append(argv[i + 1])
                i += 1
            i += 1
            continue
        if word not in node:
            where = " ".join([PROG, *path])
            raise FlagError(
                f'unknown command "{word}" for "{where}"\nRun \'{where} --help\' for usage.'
            )
        node = node[word]
        path.append(word)
        i += 1
    return path, node, rest + argv[i:]


def _program() -> list[str]:
    """The words that started this process as its parent executed them, recorded as the start of
    a submit's argv so that it reads as the command that ran: the script's path (`sys.argv[0]`
    is the path given to exec), or the interpreter's `python -m runai_local.cli`."""
    if Path(sys.argv[0]).resolve() == Path(__file__).resolve():  # python -m
        return list(sys.orig_argv[: len(sys.orig_argv) - len(sys.argv) + 1])
    return [sys.argv[0]]


def main(argv: list[str] | None = None) -> int:
    program = _program() if argv is None else [PROG]
    args = sys.argv[1:] if argv is None else list(argv)
    flag_part = args[: args.index("--")] if "--" in args else args
    debug = "--debug" in flag_part or "-d" in flag_part
    try:
        path, node, rest = _resolve(args)
        if isinstance(node, dict):
            parsed = F.parse(rest, F.GLOBAL_FLAGS)
            if parsed.positionals:  # cobra: an unknown subcommand word
                where = " ".join([PROG, *path])
                raise FlagError(
                    f'unknown command "{parsed.positionals[0]}" for "{where}"\n'
                    f"Run '{where} --help' for usage."
                )
            _out(_help(path, node))
            return 0
        handler, flags, _desc = node
        parsed = F.parse(rest, [*flags, *F.GLOBAL_FLAGS])
        if parsed["help"]:
            _out(_help(path, node))
            return 0
        return handler(parsed, [*program, *args])
    except LocalError as exc:  # every explained failure (flags, spec, PVC, job, config, state)
        return _fail(str(exc), debug)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error for a log stream.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug or an unexpected state: one line, traceback with --debug
        return _fail(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug)", debug)


def _fail(message: str, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    print(f"Error: {message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
