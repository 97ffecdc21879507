"""The subcommand table of runai_tui/cli/entry.py: a command line is parsed with only the
subparser of the command it names (only that command's module imported), and comes out as the
whole parser makes of it; help and mistakes get every subcommand, as before, but not their
arguments, which neither shows: they import no command's module."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import subprocess
import sys
from collections.abc import Callable

import pytest

from runai_tui.cli.entry import NAMES, SUBCOMMANDS, build_parser, main, parser_for, subcommands_for
from runai_tui.shapes.errors import UsageError


def test_each_module_adds_and_runs_exactly_its_rows_of_the_table() -> None:
    for module_name in {row.module for row in SUBCOMMANDS}:
        module = importlib.import_module(module_name)
        rows = {row.name for row in SUBCOMMANDS if row.module == module_name}
        assert set(module.ARGUMENTS) == rows == set(module.COMMANDS), module_name


COMMAND_LINES = [
    ["submit", "--profile", "retinanet-tcp", "--dry-run"],
    ["--backend", "local", "-p", "team-a", "list", "--json"],
    ["-pteam-a", "--timeout", "5", "logs", "job-a", "--tail", "3", "-f"],
    # An option's value that is a command's name is still the option's value.
    ["--proj", "submit", "--deb", "submit", "--profile", "p"],
    ["--refresh=3", "wait", "job-a", "--timeout", "9"],  # wait's own --timeout
    ["profiles", "show", "p", "--resolved"],
    ["delete", "--selector", "sweep-*", "-y"],
    ["exec", "job-a", "--pod", "p"],
    ["compare", "a", "b", "--differences"],
]


@pytest.mark.parametrize("argv", COMMAND_LINES)
def test_a_command_line_parses_alike_with_its_subparser_alone(argv: list[str]) -> None:
    needed = subcommands_for(argv)
    alone = build_parser(needed).parse_args(argv)
    assert list(needed) == [alone.command]
    assert vars(alone) == vars(build_parser().parse_args(argv))


@pytest.mark.parametrize(
    ("argv", "needed"),
    [
        ([], ()),  # the TUI: no subparser at all
        (["--debug", "--refresh", "3", "--readonly"], ()),
        (["--version"], ()),
        (["-h", "submit"], NAMES),  # the top-level help lists every command
        (["--he"], NAMES),
        (["frobnicate"], NAMES),  # the whole parser names the choices
        (["--backend", "bogus", "submit"], NAMES),
        (["--re", "submit"], NAMES),  # ambiguous: --readonly or --refresh
    ],
)
def test_help_and_mistakes_get_the_whole_parser(argv: list[str], needed: tuple[str, ...]) -> None:
    assert tuple(subcommands_for(argv)) == needed


@pytest.mark.parametrize(
    "argv",
    [["-h"], ["-h", "submit"], ["frobnicate"], ["--backend", "bogus", "submit"], ["--re", "x"]],
)
def test_help_and_mistakes_read_as_with_the_whole_parser(argv: list[str]) -> None:
    def shown(parser: argparse.ArgumentParser) -> tuple[str, str]:
        """What the parser printed, and how it stopped: the help's exit or the usage error."""
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                parser.parse_args(argv)
        except SystemExit as exited:
            return out.getvalue(), f"exit {exited.code}"
        except UsageError as error:
            return out.getvalue(), f"usage error: {error}"
        raise AssertionError(f"{argv} parsed")

    assert shown(parser_for(argv)) == shown(build_parser())


def test_the_top_level_help_imports_no_command_module() -> None:
    probe = (
        "import contextlib, io, sys\n"
        "from runai_tui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        f"print(sorted(m for m in {sorted({row.module for row in SUBCOMMANDS})!r} "
        "if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def printed_help(run: Callable[[list[str]], object], argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        run(argv)
    assert exited.value.code == 0
    return out.getvalue()


@pytest.mark.parametrize("name", NAMES)
def test_each_command_help_is_the_whole_parsers(name: str) -> None:
    shown = printed_help(main, [name, "--help"])
    assert shown.startswith(f"usage: runai-tui {name} ")
    assert shown == printed_help(build_parser().parse_args, [name, "--help"])


def test_the_top_level_help_lists_every_command_with_its_line() -> None:
    shown = " ".join(printed_help(main, ["--help"]).split())
    for row in SUBCOMMANDS:
        assert f"{row.name} {' '.join(row.help.split())}" in shown
