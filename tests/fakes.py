"""Test doubles shared by the test packages: a fake `runai` executable (real subprocess).

Usage:
    from tests.fakes import fake_runai, rule

    fake = fake_runai(tmp_path, [
        rule("training", "list", stdout='{"workloads": [{"name": "a", "phase": "Running"}]}'),
        rule("describe", stderr="workload 'x' could not be found in project 'p'\\n", exit=1),
    ])
    monkeypatch.setenv("RUNAI_TUI_RUNAI", str(fake.path))   # or env={**os.environ, **fake.env()}
    ...
    assert fake.calls() == [["training", "list", "--json"]]

`fake.path` is an executable named `runai` alone in `fake.bin_dir` (prepend it to PATH to test
backend auto-detection). The scenario format is documented in tests/fake_runai/fake_runai.py.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FAKE_PROGRAM = Path(__file__).resolve().parent / "fake_runai" / "fake_runai.py"


def rule(*match: str, **response: Any) -> dict[str, Any]:
    """A scenario rule: answer `response` (stdout=, stderr=, exit=, lines=, block=, sleep=, …)
    when every token of `match` occurs in argv, in order."""
    return {"match": list(match), **response}


@dataclass
class FakeRunai:
    path: Path  # the executable
    scenario_path: Path
    log_path: Path

    @property
    def bin_dir(self) -> Path:
        return self.path.parent

    def set_rules(
        self, rules: list[dict[str, Any]], default: dict[str, Any] | None = None, **extra: Any
    ) -> None:
        """Replace the scenario (the next call sees it); `extra`: cli=, jobs=, page_size= (see
        tests/fake_runai/fake_runai.py)."""
        scenario: dict[str, Any] = {"rules": rules, **extra}
        if default is not None:
            scenario["default"] = default
        tmp = self.scenario_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(scenario), encoding="utf-8")
        os.replace(tmp, self.scenario_path)

    def _all_records(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        lines = self.log_path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def records(self) -> list[dict[str, Any]]:
        """One dict per call but the `--help` questions (help_calls()): {"argv": [...],
        "pid": N, "child_pid": N or None}."""
        return [record for record in self._all_records() if not record.get("help")]

    def calls(self) -> list[list[str]]:
        """The argv (after the program name) of every call so far but the `--help` questions
        runai-tui asks first (help_calls()), in order."""
        return [record["argv"] for record in self.records()]

    def executed(self) -> list[list[str]]:
        """The whole argv of every call but the `--help` questions, the program first as it was
        executed (the path given to exec)."""
        return [[record["program"], *record["argv"]] for record in self.records()]

    def help_calls(self) -> list[list[str]]:
        """The argv of every `--help` call so far, in order."""
        return [record["argv"] for record in self._all_records() if record.get("help")]

    def env(self) -> dict[str, str]:
        """Environment that makes runai-tui use this fake."""
        return {"RUNAI_TUI_RUNAI": str(self.path), "RUNAI_TUI_BACKEND": "runai"}


def fake_runai(
    tmp_path: Path,
    rules: list[dict[str, Any]] | None = None,
    default: dict[str, Any] | None = None,
    name: str = "runai",
    **extra: Any,
) -> FakeRunai:
    """Create a fake `runai` executable under `tmp_path` answering from `rules`; `extra`
    (cli="2.18", jobs=[...], page_size=N) makes it play a documented CLI."""
    root = tmp_path / f"fake-{name}"
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    scenario_path = root / "scenario.json"
    log_path = root / "calls.jsonl"
    exe = bin_dir / name
    # The wrapper fixes the scenario and log paths, so the fake works under any environment
    # (a subprocess CLI test need not pass FAKE_RUNAI_* through). -IS: stdlib only, fast start.
    exe.write_text(
        f"#!{sys.executable} -IS\n"
        "import os, runpy, sys\n"
        # sys.argv[0]: the path the caller executed (runpy replaces it with the program's).
        "os.environ['FAKE_RUNAI_PROGRAM'] = sys.argv[0]\n"
        f"os.environ['FAKE_RUNAI_SCENARIO'] = {str(scenario_path)!r}\n"
        f"os.environ['FAKE_RUNAI_LOG'] = {str(log_path)!r}\n"
        f"runpy.run_path({str(FAKE_PROGRAM)!r}, run_name='__main__')\n",
        encoding="utf-8",
    )
    exe.chmod(0o755)
    fake = FakeRunai(path=exe, scenario_path=scenario_path, log_path=log_path)
    fake.set_rules(rules or [], default, **extra)
    return fake
