"""The headless `runai-tui` command: the TUI's twin for scripts and CI, over the same core.

Imports neither Textual nor torch (the TUI is imported only when no subcommand is given).
Exit codes: 0 success, 1 runtime failure, 2 usage or validation error. Each group of commands
(profile_commands, job_commands, health_commands) adds its parsers and its COMMANDS here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence

from runai_tui import __version__
from runai_tui.cli import (
    bulk_commands,
    health_commands,
    job_commands,
    profile_commands,
    resource_commands,
    resubmit_commands,
    run_commands,
    watch_commands,
)
from runai_tui.cli.common import Parser, runai_cli_for, settings_for
from runai_tui.errors import Failure, UsageError

GROUPS = (
    profile_commands,
    resubmit_commands,
    job_commands,
    bulk_commands,
    health_commands,
    watch_commands,
    resource_commands,
    run_commands,
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for group in GROUPS:
        group.add_parsers(sub)
    return parser


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


def commands() -> dict[str | None, Callable[[argparse.Namespace], int]]:
    """Every subcommand's function; None (no subcommand) opens the TUI."""
    found: dict[str | None, Callable[[argparse.Namespace], int]] = {None: cmd_tui}
    for group in GROUPS:
        found.update(group.COMMANDS)
    return found


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
        return commands()[args.command](args)
    except Failure as exc:
        # A ProfileError carries every problem found; each gets its own `error:` line.
        problems = getattr(exc, "problems", None) or [exc.message]
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        if debug:
            import traceback  # lazy: only on failure

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
            import traceback  # lazy: only on failure

            traceback.print_exc()
            return 1
        print(f"error: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("hint: rerun with --debug for the traceback", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
