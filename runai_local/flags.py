"""A small pflag-style parser and the flag tables of the `runai` v2.25 commands runai-local accepts.

This is the one place in runai-local that knows flag spellings (the other is the core's argv
builder; a test keeps the two in agreement). Errors read like cobra's, so a wrong argv fails loudly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runai_local.errors import LocalError
from runai_tui.util.duration import DurationError, go_seconds


class FlagError(LocalError):
    """A command-line error, worded like cobra/pflag (printed as ``Error: <message>``)."""


@dataclass(frozen=True)
class Flag:
    name: str  # long name, without "--"
    kind: str  # bool | string | int | uint | float | array | duration | ints
    short: str = ""
    help: str = ""
    choices: tuple[str, ...] = ()


@dataclass
class Parsed:
    values: dict[str, Any]
    positionals: list[str]
    rest: list[str] | None  # words after "--"; None when there was no "--"
    seen: list[str] = field(default_factory=list)  # long names given, in order

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


def _convert(flag: Flag, text: str) -> Any:
    bad = f'invalid argument "{text}" for "{_label(flag)}" flag: '
    if flag.kind in ("int", "uint"):
        try:
            value = int(text, 10)
        except ValueError:
            raise FlagError(bad + f'strconv.ParseInt: parsing "{text}": invalid syntax') from None
        if flag.kind == "uint" and value < 0:
            raise FlagError(bad + "must be a non-negative integer")
        return value
    if flag.kind == "float":
        try:
            number = float(text)
        except ValueError:
            raise FlagError(bad + f'strconv.ParseFloat: parsing "{text}": invalid syntax') from None
        if number < 0:
            raise FlagError(bad + "must be a non-negative number")
        return number
    if flag.kind == "duration":  # Go's time.ParseDuration forms; kept as typed
        try:
            go_seconds(text)
        except DurationError as exc:
            raise FlagError(bad + str(exc)) from None
        return text
    if flag.kind == "ints":
        try:
            return [int(part) for part in text.split(",") if part]
        except ValueError:
            raise FlagError(bad + "expected comma-separated integers") from None
    if flag.choices and text not in flag.choices:
        raise FlagError(bad + "must be one of: " + ", ".join(flag.choices))
    return text


def _label(flag: Flag) -> str:
    return f"-{flag.short}, --{flag.name}" if flag.short else f"--{flag.name}"


def _bool(flag: Flag, text: str) -> bool:
    low = text.lower()
    if low in ("1", "t", "true"):
        return True
    if low in ("0", "f", "false"):
        return False
    raise FlagError(
        f'invalid argument "{text}" for "{_label(flag)}" flag: '
        f'strconv.ParseBool: parsing "{text}": invalid syntax'
    )


def defaults(flags: list[Flag]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for flag in flags:
        out[flag.name] = False if flag.kind == "bool" else [] if flag.kind == "array" else None
    return out


def parse(args: list[str], flags: list[Flag]) -> Parsed:
    """Parse ARGS like pflag: --name=v, --name v, -x v, -xv, -abc (bools), interspersed positionals."""
    by_long = {f.name: f for f in flags}
    by_short = {f.short: f for f in flags if f.short}
    values = defaults(flags)
    positionals: list[str] = []
    seen: list[str] = []
    rest: list[str] | None = None

    def store(flag: Flag, text: str) -> None:
        seen.append(flag.name)
        if flag.kind == "array":
            values[flag.name].append(text)
        elif flag.kind == "bool":
            values[flag.name] = _bool(flag, text)
        else:
            values[flag.name] = _convert(flag, text)

    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            rest = args[i:]
            break
        if arg.startswith("--"):
            name, eq, inline = arg[2:].partition("=")
            flag = by_long.get(name)
            if flag is None:
                raise FlagError(f"unknown flag: --{name}")
            if flag.kind == "bool":
                store(flag, inline if eq else "true")
            elif eq:
                store(flag, inline)
            elif i < len(args):
                store(flag, args[i])
                i += 1
            else:
                raise FlagError(f"flag needs an argument: --{name}")
        elif arg.startswith("-") and len(arg) > 1:
            shorts = arg[1:]
            j = 0
            while j < len(shorts):
                ch = shorts[j]
                flag = by_short.get(ch)
                if flag is None:
                    raise FlagError(f"unknown shorthand flag: '{ch}' in -{shorts}")
                tail = shorts[j + 1 :]
                if flag.kind == "bool":
                    if tail.startswith("="):
                        store(flag, tail[1:])
                        break
                    store(flag, "true")
                    j += 1
                    continue
                if tail:
                    store(flag, tail[1:] if tail.startswith("=") else tail)
                elif i < len(args):
                    store(flag, args[i])
                    i += 1
                else:
                    raise FlagError(f"flag needs an argument: '{ch}' in -{shorts}")
                break
        else:
            positionals.append(arg)
    return Parsed(values=values, positionals=positionals, rest=rest, seen=seen)


def usage(flags: list[Flag]) -> str:
    lines = []
    for flag in sorted(flags, key=lambda f: f.name):
        head = f"  -{flag.short}, --{flag.name}" if flag.short else f"      --{flag.name}"
        if flag.kind != "bool":
            head += f" {'stringArray' if flag.kind == 'array' else flag.kind}"
        lines.append(f"{head:<48} {flag.help}".rstrip())
    return "\n".join(lines)


# ---- flag tables ---------------------------------------------------------------------------------

GLOBAL_FLAGS = [
    Flag("config-file", "string", help="config file name"),
    Flag("config-path", "string", help="config directory"),
    Flag("debug", "bool", "d", "enable debug mode"),
    Flag("quiet", "bool", "q", "enable quiet mode, suppress all output except error messages"),
    Flag("verbose", "bool", help="enable verbose mode"),
    Flag("help", "bool", "h", "help for this command"),
]

PROJECT = Flag("project", "string", "p", "Specify the project to which the command applies")

# ExitCode is Kubeflow's (PyTorchJob): exit codes 1-127 are permanent (the job fails), 128-255
# retryable (the pod starts again).
_RESTART = ("Always", "OnFailure", "Never", "ExitCode")

SUBMIT_FLAGS = [
    Flag("allow-privilege-escalation", "bool"),
    Flag("annotation", "array", help="name=value"),
    Flag("attach", "bool"),
    Flag("auto-deletion-time-after-completion", "duration"),
    Flag("backoff-limit", "int"),
    Flag("capability", "array"),
    Flag("clean-pod-policy", "string", choices=("None", "All", "Running")),
    Flag("command", "bool", "c", "override the image's entrypoint with the command after '--'"),
    Flag("compute", "string"),
    Flag("configmap-map-volume", "array"),
    Flag("cpu-core-limit", "float"),
    Flag("cpu-core-request", "float"),
    Flag("cpu-memory-limit", "string"),
    Flag("cpu-memory-request", "string"),
    Flag("create-home-dir", "bool"),
    Flag("datasource", "array"),
    Flag("datavolume", "array"),
    Flag("empty-dir-volume", "array"),
    Flag("env-my-credentials", "array"),
    Flag("env-pod-field-ref", "array"),
    Flag("env-secret", "array"),
    Flag("environment", "array", help="environment asset name"),
    Flag("environment-variable", "array", "e", "NAME=VALUE"),
    Flag("exclude-node", "array"),
    Flag("existing-pvc", "array", help="claimname=CLAIM_NAME,path=PATH"),
    Flag("extended-resource", "array", help="resource_name=quantity"),
    Flag("external-url", "array"),
    Flag("git-sync", "array"),
    Flag("gpu-devices-request", "uint", "g", "GPUs per worker pod"),
    Flag("gpu-memory-limit", "string"),
    Flag("gpu-memory-request", "string"),
    Flag("gpu-portion-limit", "float"),
    Flag("gpu-portion-request", "float"),
    Flag("gpu-request-type", "string", choices=("portion", "memory")),
    Flag("host-ipc", "bool"),
    Flag("host-network", "bool"),
    Flag("host-path", "array"),
    Flag("image", "string", "i"),
    Flag("image-pull-my-credentials", "array"),
    Flag("image-pull-policy", "string", choices=("Always", "IfNotPresent", "Never")),
    Flag("label", "array", help="name=value"),
    Flag("large-shm", "bool"),
    Flag("master-args", "string"),
    Flag("master-command", "string"),
    Flag("master-cpu-core-limit", "float"),
    Flag("master-cpu-core-request", "float"),
    Flag("master-cpu-memory-limit", "string"),
    Flag("master-cpu-memory-request", "string"),
    Flag("master-environment-variable", "array"),
    Flag("master-extended-resource", "array"),
    Flag("master-gpu-devices-request", "uint"),
    Flag("master-gpu-portion-limit", "float"),
    Flag("master-gpu-portion-request", "float"),
    Flag("master-no-pvcs", "bool"),
    Flag("master-restart-policy", "string", choices=_RESTART),
    Flag("max-replicas", "int"),
    Flag("min-replicas", "int"),
    Flag("name-prefix", "string"),
    Flag("new-pvc", "array"),
    Flag("nfs", "array"),
    Flag("no-master", "bool"),
    Flag("node-pools", "array"),
    Flag("node-type", "string"),
    Flag("pod-running-timeout", "duration"),
    Flag("port", "array"),
    Flag("preemptibility", "string", choices=("preemptible", "non-preemptible")),
    Flag("preferred-pod-topology-key", "string"),
    Flag("priority", "string"),
    Flag("privileged", "bool"),
    PROJECT,
    Flag("required-pod-topology-key", "string"),
    Flag("restart-policy", "string", choices=_RESTART),
    Flag("run-as-gid", "int"),
    Flag("run-as-non-root", "bool"),
    Flag("run-as-uid", "int"),
    Flag("run-as-user", "bool"),
    Flag("s3", "array"),
    Flag("seccomp-profile", "string", choices=("RuntimeDefault", "Unconfined", "Localhost")),
    Flag("secret-volume", "array"),
    Flag("stdin", "bool"),
    Flag("supplemental-groups", "ints"),
    Flag("template", "string"),
    Flag("termination-grace-period", "duration"),
    Flag("toleration", "array"),
    Flag("tty", "bool", "t"),
    Flag("user-group-source", "string", choices=("fromTheImage", "fromIdpToken")),
    Flag("wait-for-submit", "duration"),
    Flag("workers", "int"),
    Flag("working-dir", "string"),
]

_UUID = Flag("uuid", "string", "u", "The UUID of the workload")

LIST_FLAGS = [
    Flag("all", "bool", "A", "Show resources from all projects"),
    Flag("columns", "string"),
    Flag("deleted", "bool"),
    Flag("framework", "string"),
    Flag("json", "bool", help="Output structure JSON"),
    Flag("max-items", "int"),
    Flag("next-token", "string"),
    Flag("no-headers", "bool"),
    Flag("no-pagination", "bool"),
    Flag("page-size", "int"),
    PROJECT,
    Flag("raw", "bool"),
    Flag("set-default-columns", "bool"),
    Flag("status", "string"),
    Flag("table", "bool"),
    Flag("type", "string"),
    Flag("yaml", "bool"),
]

DESCRIBE_FLAGS = [
    Flag("compute", "bool"),
    Flag("containers", "bool"),
    Flag("event-limit", "int"),
    Flag("events", "bool"),
    Flag("general", "bool"),
    Flag("networks", "bool"),
    Flag("output", "string", "o", "table | json | yaml", choices=("table", "json", "yaml")),
    Flag("pod-limit", "int"),
    Flag("pods", "bool"),
    PROJECT,
    Flag("sortEvents", "string", choices=("asc", "desc")),
    Flag("storage", "bool"),
    Flag("type", "string"),
    Flag("framework", "string"),
    _UUID,
]

LOGS_FLAGS = [
    Flag("container", "string", "c"),
    Flag("follow", "bool", "f", "Stream logs in real time"),
    Flag("limit-bytes", "int"),
    Flag("name", "string"),
    Flag("pod", "string", help="The pod ID. If not specified, the first pod will be used."),
    Flag("previous", "bool"),
    PROJECT,
    Flag("since", "duration"),
    Flag("since-time", "string"),
    Flag("tail", "int", "t", "Lines of recent log file to display (default -1 = all)"),
    Flag("timestamps", "bool"),
    Flag("wait-timeout", "duration"),
    Flag("type", "string"),
    Flag("framework", "string"),
]

EXEC_FLAGS = [
    Flag("container", "string", "c"),
    Flag("pod", "string"),
    Flag("pod-running-timeout", "duration"),
    PROJECT,
    Flag("stdin", "bool", "i", "Pass stdin to the container"),
    Flag("tty", "bool", "t", "Stdin is a TTY"),
    Flag("wait-timeout", "duration"),
    Flag("type", "string"),
    Flag("framework", "string"),
]

# `port-forward` ([D25] 2.6): --port LOCAL:REMOTE (repeatable), --address, --pod (default master).
PORT_FORWARD_FLAGS = [
    Flag("port", "array", help="LOCAL:REMOTE (repeatable)"),
    Flag("address", "string", help='local address to listen on (default "localhost")'),
    Flag("pod", "string", help="The pod ID (default: the master)"),
    PROJECT,
    _UUID,
    Flag("type", "string"),
    Flag("framework", "string"),
]

ACTION_FLAGS = [
    PROJECT,
    _UUID,
    Flag("yes", "bool", "y", "skip confirmation"),
    Flag("type", "string"),
    Flag("framework", "string"),
]

PLAIN_FLAGS: list[Flag] = [Flag("wide", "bool")]

PROJECT_LIST_FLAGS = [
    Flag("json", "bool", help="Output structure JSON"),
    Flag("yaml", "bool", help="Output structure YAML"),
    Flag("table", "bool", help="Output structure table"),
    Flag("no-headers", "bool"),
    Flag("no-pagination", "bool"),
]


def duration_seconds(text: str) -> float:
    """A Go duration (`1h30m`, `300s`, `2m`) in seconds; FlagError when it is none."""
    try:
        return go_seconds(text)
    except DurationError as exc:
        raise FlagError(str(exc)) from None
