"""The headless `runai-tui` command: the TUI's twin for scripts and CI, over the same core.

Imports neither Textual nor torch (the TUI is imported only when no subcommand is given).
Exit codes: 0 success, 1 runtime failure, 2 usage or validation error.

Each subcommand is a row of SUBCOMMANDS: its name, its line in `runai-tui --help`, and the module
(named after its commands: profile_commands, job_commands, watch_commands, ...) whose ARGUMENTS[name] adds its arguments and
whose COMMANDS[name] runs it. A command line that names a subcommand imports that module alone
and builds that subparser alone, so `submit --dry-run` pays for no other command's imports; the
top-level help and a mistyped command list every subcommand, without arguments: they import none.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Collection, Sequence
from typing import NamedTuple

from runai_tui import __version__
from runai_tui.cli.common import Parser, print_error, print_failure, runai_cli_for, settings_for
from runai_tui.shapes.errors import Failure, UsageError
from runai_tui.util.duration import seconds_arg


class Subcommand(NamedTuple):
    """A row of SUBCOMMANDS: what the top-level help shows of a subcommand without importing it."""

    name: str
    help: str  # its line in `runai-tui --help`
    module: str  # holds ARGUMENTS[name] (adds its arguments) and COMMANDS[name] (runs it)


_PROFILES = "runai_tui.cli.profile_commands"
_JOBS = "runai_tui.cli.job_commands"
_BULK = "runai_tui.cli.bulk_commands"
_RANKS = "runai_tui.cli.ranks_commands"

# In the order `runai-tui --help` lists them.
SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand("submit", "submit a job from a profile", _PROFILES),
    Subcommand("profiles", "list, show, validate and create profiles", _PROFILES),
    Subcommand(
        "lint", "check profiles for what breaks or slows a job", "runai_tui.cli.lint_commands"
    ),
    Subcommand(
        "plan",
        "the distributed plan: world size, batch, lr, steps, comms",
        "runai_tui.cli.lint_commands",
    ),
    Subcommand(
        "sweep",
        "submit a grid of jobs from one profile (--grid FIELD=V1,V2), or plan it",
        "runai_tui.cli.sweep_commands",
    ),
    Subcommand(
        "resubmit",
        "submit a job again from its recorded submission, with remedies and overrides",
        "runai_tui.cli.resubmit_commands",
    ),
    Subcommand("list", "list jobs", _JOBS),
    Subcommand("describe", "describe a job: status, pods, events", _JOBS),
    Subcommand("logs", "print a job's logs", _JOBS),
    Subcommand("exec", "run a command (default: a shell) in a job's pod", _JOBS),
    Subcommand("projects", "the projects you may use (runai project list)", _JOBS),
    Subcommand("info", "settings and where each came from, paths, runai version", _JOBS),
    *(
        Subcommand(verb, f"{verb} jobs: by name, or every job a selector matches", _BULK)
        for verb in ("delete", "suspend", "resume")
    ),
    Subcommand(
        "diagnose",
        "read every pod's log: NCCL transport, failures, fixes",
        "runai_tui.cli.diagnose_commands",
    ),
    Subcommand(
        "preflight",
        "check a running job's pods: memlock, shm, GPUs, network",
        "runai_tui.cli.preflight_commands",
    ),
    Subcommand(
        "burnin",
        "measure the wire: the profile's pods run the comm check alone, its table, then deleted",
        "runai_tui.cli.burnin_commands",
    ),
    Subcommand(
        "ranks",
        "every rank's step, images/s, data wait, step and forward time, record age",
        _RANKS,
    ),
    Subcommand("metrics", "every trainer record of every pod, with pod and rank", _RANKS),
    Subcommand(
        "wait", "block until a job is running, completed or done", "runai_tui.cli.wait_commands"
    ),
    Subcommand(
        "watch",
        "follow jobs to their end; --recover submits a failed one again as its fault allows",
        "runai_tui.cli.watch_commands",
    ),
    Subcommand(
        "report",
        "the morning report: per job or chain, attempts, steps lost, GPU-hours and cost",
        "runai_tui.cli.report_commands",
    ),
    Subcommand(
        "bundle",
        "a job's post-mortem in one archive: describe, every log, events, diagnosis, dumps",
        "runai_tui.cli.bundle_commands",
    ),
    Subcommand(
        "top",
        "per pod: CPU use, memory against its limit, each GPU's use and memory",
        "runai_tui.cli.top_commands",
    ),
    Subcommand(
        "port-forward",
        "forward a local port to a job's pod until Ctrl-C",
        "runai_tui.cli.port_forward_commands",
    ),
    Subcommand(
        "compare",
        "runs side by side, one column each, the best marked (or --sweep ID)",
        "runai_tui.cli.compare_commands",
    ),
)
NAMES = tuple(s.name for s in SUBCOMMANDS)
_BY_NAME = {s.name: s for s in SUBCOMMANDS}


def _add_options(parser: argparse.ArgumentParser) -> None:
    """The options before the subcommand (the whole parser's and subcommands_for's alike)."""
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
    parser.add_argument(
        "--timeout", type=seconds_arg(positive=True), default=60.0, help="seconds per runai call"
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--readonly", action="store_true", help="TUI: hide submit, delete, exec")
    parser.add_argument(
        "--refresh",
        type=str,
        default=None,
        metavar="SECONDS",
        help="TUI: job list refresh (default 2; or $RUNAI_TUI_REFRESH, or config.toml)",
    )


def build_parser(names: Collection[str] = NAMES, arguments: bool = True) -> argparse.ArgumentParser:
    """The `runai-tui` parser with the subcommands NAMES (default: every one), each with its
    arguments (which imports its module) when ARGUMENTS."""
    parser = Parser(
        prog="runai-tui",
        description="Job profiles, a TUI and a headless CLI for PyTorch jobs on NVIDIA Run:ai. "
        "With no subcommand, opens the TUI.",
    )
    parser.add_argument("--version", action="version", version=f"runai-tui {__version__}")
    _add_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for subcommand in SUBCOMMANDS:
        if subcommand.name in names:
            subparser = sub.add_parser(subcommand.name, help=subcommand.help)
            if arguments:
                module = importlib.import_module(subcommand.module)
                module.ARGUMENTS[subcommand.name](subparser)
    return parser


def subcommands_for(argv: Sequence[str]) -> Collection[str]:
    """The subcommands the parser needs for ARGV: the one it names, none when it names none
    (the TUI), or every one for the top-level help, a name that is no subcommand and a mistake
    in the options before it (the whole parser says what is wrong).

    The word is found as the whole parser finds it: after the same options, the first word
    that is no option or option value."""
    probe = Parser(prog="runai-tui", add_help=False)
    _add_options(probe)
    probe.add_argument("-h", "--help", action="store_true")
    probe.add_argument("command", nargs="?")
    probe.add_argument("rest", nargs=argparse.REMAINDER)
    try:
        found, _ = probe.parse_known_args(argv)
    except UsageError:
        return NAMES
    if found.help:
        return NAMES
    if found.command is None:
        return ()
    return (found.command,) if found.command in _BY_NAME else NAMES


def parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser for ARGV: the subcommand it names with its arguments, or none (the TUI); for the
    help and the mistakes, every subcommand without its arguments, which neither the help nor
    the errors show, so no command's module is imported."""
    names = subcommands_for(argv)
    return build_parser(names, arguments=len(names) <= 1)


def cmd_tui(args: argparse.Namespace) -> int:
    from runai_tui.tui.launch import run_tui  # Textual is imported only there

    settings = settings_for(args)
    return run_tui(
        backend_choice=settings.backend.value,
        readonly=args.readonly,
        refresh=settings.refresh.value,
        project=settings.project.value,
        timeout=args.timeout,
        project_explicit=settings.project.from_flag,
        notify=settings.notify.value,
        runai_cli=runai_cli_for(settings),
    )


def command(name: str | None) -> Callable[[argparse.Namespace], int]:
    """The function that runs the subcommand NAME (its module imported); None opens the TUI."""
    if name is None:
        return cmd_tui
    module = importlib.import_module(_BY_NAME[name].module)
    run: Callable[[argparse.Namespace], int] = module.COMMANDS[name]
    return run


def _print_traceback() -> None:
    import traceback  # only on a failure with --debug: off every start (docs/performance.md)

    traceback.print_exc()


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    head, tail = raw, None
    if "--" in raw:  # what follows is an exec command: its words are not ours
        split = raw.index("--")
        head, tail = raw[:split], raw[split + 1 :]
    debug = "--debug" in head
    try:
        args = parser_for(head).parse_args(head)
        if tail is not None and args.command != "exec":
            raise UsageError("'--' is only for: runai-tui exec JOB -- CMD", "see: runai-tui --help")
        args.cmd = tail or []
        return command(args.command)(args)
    except Failure as exc:
        print_failure(exc)  # a ProfileError's every problem on its own `error:` line
        if debug:
            _print_traceback()
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
            _print_traceback()
            return 1
        print_error(
            f"internal error: {type(exc).__name__}: {exc}", "rerun with --debug for the traceback"
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
