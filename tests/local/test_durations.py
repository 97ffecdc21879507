"""runai-local reads its durations as `runai` does (Go's time.ParseDuration, with
runai_tui/util/duration.py's one parser) and refuses junk, nan, inf and negatives in one `Error:`
line before anything runs: a grace period read as 0 s would SIGKILL a preempted trainer before
its checkpoint. Exit 1, as every runai-local error (cobra's, docs/contracts.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.local.conftest import describe, run_local

SUBMIT = ["training", "pytorch", "submit"]


def _one_error(code: int, err: str) -> str:
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("Error: "), err
    return lines[0]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("banana", 'time: invalid duration "banana"'),
        ("nan", 'time: invalid duration "nan"'),
        ("inf", 'time: invalid duration "inf"'),
        ("-30s", 'time: invalid duration "-30s"'),
        ("30", 'time: missing unit in duration "30"'),
        ("2d", 'time: unknown unit "d" in duration "2d"'),
    ],
)
def test_a_bad_grace_period_is_refused_and_nothing_runs(value: str, words: str) -> None:
    res = run_local(*SUBMIT, "g", "--termination-grace-period", value, "--command", "--", "true")
    line = _one_error(res.code, res.err)
    assert (
        line == f'Error: invalid argument "{value}" for "--termination-grace-period" flag: {words}'
    )
    listed = run_local("training", "list", "--json")
    assert listed.code == 0 and json.loads(listed.out)["workloads"] == []


def test_go_forms_of_the_grace_period_are_its_seconds() -> None:
    for name, value, seconds in (("g1", "1m30s", 90.0), ("g2", ".5s", 0.5), ("g3", "0", 0.0)):
        res = run_local(
            *SUBMIT, name, "--termination-grace-period", value, "--command", "--", "true"
        )
        assert res.code == 0, res.err
        spec = json.loads((Path(describe(name)["stateDir"]) / "spec.json").read_text())
        assert spec["graceSeconds"] == seconds


@pytest.mark.parametrize("value", ["nan", "inf", ".inf", "-5", "soon"])
def test_a_bad_default_grace_is_refused_from_env_and_file(value: str, tmp_path: Path) -> None:
    env = {**os.environ, "RUNAI_LOCAL_GRACE_SECONDS": value}
    res = run_local(*SUBMIT, "e", "--command", "--", "true", env=env)
    line = _one_error(res.code, res.err)
    assert f"RUNAI_LOCAL_GRACE_SECONDS='{value}' is not a duration" in line
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "local.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"grace_seconds: {value}\n")
    res = run_local(*SUBMIT, "f", "--command", "--", "true")
    assert "grace_seconds=" in _one_error(res.code, res.err)


def test_logs_since_junk_is_one_line() -> None:
    res = run_local("training", "pytorch", "logs", "nojob", "--since", "nan")
    line = _one_error(res.code, res.err)
    assert line == 'Error: invalid argument "nan" for "--since" flag: time: invalid duration "nan"'
