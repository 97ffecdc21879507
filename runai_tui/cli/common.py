"""What every headless command shares: settings resolved once, the client, JSON and tables."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from runai_tui.runai.backend import Backend, select_backend
from runai_tui.shapes.cli_generations import parse_override
from runai_tui.shapes.config import load_settings
from runai_tui.shapes.errors import Failure, UsageError

if TYPE_CHECKING:
    from runai_tui.profiles import Profile, ProfileStore
    from runai_tui.runai.client import RunaiClient
    from runai_tui.shapes.config import Settings


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one `error:` line plus a hint, exit 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, f"see: {self.prog} --help")


def settings_for(args: argparse.Namespace) -> Settings:
    """The settings (flag > env > config.toml > default), resolved once per command."""
    settings: Settings | None = getattr(args, "settings", None)
    if settings is None:
        settings = args.settings = load_settings(
            {"backend": args.backend, "project": args.project, "refresh": args.refresh}
        )
    return settings


def backend_for(args: argparse.Namespace) -> Backend:
    """The backend (selected once per command): what a dry run shows as the executable is what
    the client then runs. Cheap: the environment, PATH and the config."""
    backend: Backend | None = getattr(args, "backend_chosen", None)
    if backend is None:
        backend = args.backend_chosen = select_backend(settings_for(args).backend.value)
    return backend


def client_for(args: argparse.Namespace) -> RunaiClient:
    from runai_tui.runai.client import RunaiClient  # off the dry run (docs/performance.md)

    settings = settings_for(args)
    return RunaiClient(
        backend_for(args),
        project=settings.project.value,
        timeout=args.timeout,
        **runai_cli_for(settings),
        on_warning=lambda text: print(f"warning: {text}", file=sys.stderr),
    )


def runai_cli_for(settings: Settings) -> dict[str, Any]:
    """The client's `runai_cli` override keywords from the settings (none when unset)."""
    if settings.runai_cli.value is None:
        return {}

    return {
        "runai_cli": parse_override(settings.runai_cli.value),
        "runai_cli_source": settings.runai_cli.source,
    }


def add_set_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """`--set FIELD=VALUE` (repeatable, into `args.sets`): the override submit, lint, plan,
    resubmit and sweep all take."""
    parser.add_argument(
        "--set", dest="sets", action="append", default=[], metavar="FIELD=VALUE", help=help
    )


def print_error(message: str, hint: str = "") -> None:
    """A failure as every command says it, on stderr: one `error:` line, then the `hint:` line
    (the fix) when there is one."""
    print(f"error: {message}", file=sys.stderr)
    if hint:
        print(f"hint: {hint}", file=sys.stderr)


def print_failure(exc: Failure, prefix: str = "") -> int:
    """`exc` said as print_error says it, one `error:` line per problem (a ProfileError carries
    every problem found), `prefix` before each (`JOB: `); how many problems."""
    problems = [str(p) for p in getattr(exc, "problems", None) or [exc.message]]
    for problem in problems[:-1]:
        print_error(prefix + problem)
    print_error(prefix + problems[-1], exc.hint)
    return len(problems)


def load_profile(store: ProfileStore, target: str) -> Profile:
    """A profile by name, or by path: a target ending in .yaml or .yml, or with a path separator
    in it, is a file."""
    if target.endswith((".yaml", ".yml")) or os.sep in target:
        return store.load_path(Path(target))
    return store.load(target)


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    head = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()
    return "\n".join([head, *lines])
