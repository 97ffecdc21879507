"""Every failure the local cluster explains derives from one base and is reported in one place."""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
from pathlib import Path

import pytest

import runai_local
from runai_local import cli
from runai_local.errors import LocalError
from tests.local.test_through_runai_tui import tui


def test_every_local_exception_class_derives_from_local_error() -> None:
    classes = []
    for module_info in pkgutil.iter_modules(runai_local.__path__):
        module = importlib.import_module(f"runai_local.{module_info.name}")
        for _name, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                classes.append(obj)
    assert {c.__name__ for c in classes} >= {
        "CliError", "ConfigError", "FlagError", "JobError", "LocalError", "PvcError",
        "SpecError", "StateError",
    }  # fmt: skip
    assert [c.__name__ for c in classes if not issubclass(c, LocalError)] == []


@pytest.mark.parametrize(
    ("setup", "args", "expected"),
    [
        (
            "config",
            ["training", "pytorch", "submit", "x", "-i", "img"],
            "gpus='many' is not an integer",
        ),
        ("", ["training", "list", "--bogus"], "unknown flag: --bogus"),
        ("", ["training", "pytorch", "describe", "nope"], "workload 'nope' could not be found"),
        ("", ["training", "pytorch", "submit", "x", "--existing-pvc", "claimname=c"], "path is"),
    ],
)
def test_explained_failures_are_one_error_line_and_exit_1(
    setup: str, args: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if setup == "config":
        config = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "local.yaml"
        config.parent.mkdir(parents=True)
        config.write_text("gpus: many\n")
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and expected in err
    assert "Traceback" not in err and "internal error" not in err


def test_runai_tui_passes_a_runai_message_on_without_runai_s_own_error_prefix() -> None:
    # runai-local says `Error: workload ... could not be found` as the real CLI does; runai-tui
    # says `error:` once, before runai's words.
    for args in (["describe", "ghost"], ["logs", "ghost"], ["delete", "ghost", "--yes"]):
        res = tui(*args)
        errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
        assert res.returncode == 1 and len(errors) == 1, (args, res.stderr)
        assert "Error:" not in res.stderr and "error: error" not in res.stderr.lower(), args
    res = tui("describe", "ghost")
    assert res.stderr.splitlines()[0] == "error: workload 'ghost' could not be found in any project"
