"""Small CLI defects seen on a real cluster, driven in-process over the fake `runai`."""

from __future__ import annotations

from pathlib import Path

import pytest

from runai_tui.cli import main
from tests.fakes import fake_runai, rule


@pytest.mark.parametrize(("verb", "said"), [("suspend", "Suspended"), ("resume", "Resumed")])
def test_suspend_and_resume_with_empty_output_say_what_happened(
    tmp_path: Path, monkeypatch, capsys, verb: str, said: str
) -> None:
    fake = fake_runai(tmp_path, [rule(verb, "job-a", stdout="")])
    for key, value in fake.env().items():
        monkeypatch.setenv(key, value)
    assert main([verb, "job-a"]) == 0
    assert capsys.readouterr().out == f"{said} job-a.\n"
    # The list (here unanswered) is asked first, to skip jobs in a state the verb does not fit.
    assert fake.calls() == [["training", "list", "--json"], ["training", "pytorch", verb, "job-a"]]


def test_debug_after_the_double_dash_belongs_to_the_exec_command(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("RUNAI_TUI_RUNAI", str(tmp_path / "missing-runai"))
    args = ["--backend", "runai", "exec", "job-a", "--", "python", "train.py", "--debug"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: runai is not installed") and "Traceback" not in err
    assert main(["--debug", *args[:-1]]) == 1  # before `--` it is ours: a traceback
    assert "Traceback" in capsys.readouterr().err
