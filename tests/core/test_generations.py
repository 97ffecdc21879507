"""The runai CLI generation: told from `runai version`, cached per executable, and a profile field
the detected CLI lacks stops `submit` with exit 2 before anything is submitted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runai_tui.cli_generations import V1, V2_EARLY, V2_LATE
from runai_tui.runai import generations as G
from tests.fakes import fake_runai, rule

RUNAI_TUI = shutil.which("runai-tui", path=str(Path(sys.executable).parent)) or "runai-tui"


@pytest.mark.parametrize(
    ("line", "generation", "version"),
    [
        ("runai version v2.25.3", V2_LATE, "2.25.3"),
        ("v2.21.0", V2_LATE, "2.21.0"),
        ("2.23.7-rc.1", V2_LATE, "2.23.7-rc.1"),
        ("3.0.1", V2_LATE, "3.0.1"),
        ("runai version 2.20.14", V2_EARLY, "2.20.14"),
        ("2.18.0", V2_EARLY, "2.18.0"),
        ("Version: 2.18.94", V1, "2.18.94"),
        ("runai-local 0.1.0 (embedded local cluster)", G.LOCAL_EMULATES, "runai-local 0.1.0"),
        ("development build", None, "development build"),
        ("1.4.2", None, "1.4.2"),
        ("", None, "(no output)"),
    ],
)
def test_classify(line: str, generation: str | None, version: str) -> None:
    cli = G.classify(line)
    assert (cli.generation, cli.version) == (generation, version)


def test_label_names_version_and_generation() -> None:
    assert G.classify("v2.20.1").label == "runai 2.20.1 (CLI v2 ≤ 2.20)"
    assert G.classify("runai-local 0.1.0 (embedded local cluster)").label.startswith(
        "runai-local 0.1.0 (CLI v2 ≥ 2.21)"
    )


LATE_PROFILE = """\
extends: retinanet-tcp
job_name: late
preemptibility: preemptible
restart_policy: Never
"""


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [RUNAI_TUI, *args], capture_output=True, text=True, env={**os.environ, **env}, timeout=60
    )


def user_profile(name: str, text: str) -> Path:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(text)
    return folder / f"{name}.yaml"


def submits(fake) -> list[list[str]]:
    return [c for c in fake.calls() if c[:3] == ["training", "pytorch", "submit"]]


SUBMITTED = rule("pytorch", "submit", stdout="Creating pytorch training late...\n")


def test_a_field_the_cli_lacks_exits_2_before_submitting(tmp_path: Path) -> None:
    path = user_profile("late", LATE_PROFILE)
    fake = fake_runai(tmp_path, [rule("version", stdout="runai version v2.20.1\n"), SUBMITTED])
    out = run("submit", "--profile", "late", env=fake.env())
    assert out.returncode == 2, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: {path}:3: preemptibility: --preemptibility is not in runai 2.20.1 "
        "(CLI v2 ≤ 2.20); it needs CLI v2 ≥ 2.21",
        f"error: {path}:4: restart_policy: --restart-policy is not in runai 2.20.1 "
        "(CLI v2 ≤ 2.20); it needs CLI v2 ≥ 2.21",
    ]
    assert "hint: drop the field for this CLI (--set preemptibility= --set restart_policy=)" in (
        out.stderr
    )
    assert "Traceback" not in out.stderr
    assert fake.calls() == [["version"]] and not submits(fake)

    # Asked once: the answer is cached per executable (and its mtime and size).
    again = run("submit", "--profile", "late", env=fake.env())
    assert again.returncode == 2 and fake.calls() == [["version"]]
    cache = json.loads(G.cache_path().read_text())
    assert [entry["line"] for entry in cache.values()] == ["runai version v2.20.1"]

    # Dropping the fields submits; a profile without them never was a problem.
    dropped = run(
        "submit", "--profile", "late", "--set", "preemptibility=", "--set", "restart_policy=",
        env=fake.env(),
    )  # fmt: skip
    assert dropped.returncode == 0, dropped.stderr
    assert run("submit", "--profile", "retinanet-tcp", env=fake.env()).returncode == 0
    assert len(submits(fake)) == 2 and fake.calls().count(["version"]) == 1

    # An updated runai (a new mtime) is asked again, and 2.25 has the flags.
    fake.set_rules([rule("version", stdout="runai version v2.25.3\n"), SUBMITTED])
    stat = fake.path.stat()
    os.utime(fake.path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    out = run("submit", "--profile", "late", env=fake.env())
    assert out.returncode == 0, out.stderr
    assert fake.calls().count(["version"]) == 2
    last = submits(fake)[-1]
    assert last[last.index("--preemptibility") + 1] == "preemptible"


@pytest.mark.parametrize(
    "version",
    [
        {"stdout": "runai development build (commit abc123)\n"},
        {"stderr": 'Error: unknown command "version"\n', "exit": 1},
    ],
)
def test_an_unreadable_version_warns_once_and_does_not_block(tmp_path: Path, version) -> None:
    user_profile("late", LATE_PROFILE)
    fake = fake_runai(tmp_path, [rule("version", **version), SUBMITTED])
    first = run("submit", "--profile", "late", env=fake.env())
    assert first.returncode == 0, first.stderr
    # Lint findings are warnings too; only the generation warning is counted here.
    generation = [line for line in first.stderr.splitlines() if "CLI generation" in line]
    assert len(generation) == 1 and generation[0].startswith("warning: cannot tell")
    second = run("submit", "--profile", "late", env=fake.env())
    assert second.returncode == 0 and "CLI generation" not in second.stderr
    assert fake.calls().count(["version"]) == 1 and len(submits(fake)) == 2


def test_cli_v1_warns_and_does_not_block(tmp_path: Path) -> None:
    fake = fake_runai(
        tmp_path, [rule("version", stdout="Version: 2.18.94\nBuildDate: 2024-01-01\n"), SUBMITTED]
    )
    out = run("submit", "--profile", "retinanet-tcp", env=fake.env())
    assert out.returncode == 0, out.stderr
    assert "warning: runai 2.18.94 (CLI v1) looks like CLI v1" in out.stderr


def test_dry_run_asks_nothing(tmp_path: Path) -> None:
    user_profile("late", LATE_PROFILE)
    fake = fake_runai(tmp_path, [rule("version", stdout="v2.20.1\n")])
    out = run("submit", "--profile", "late", "--dry-run", env=fake.env())
    assert out.returncode == 0 and "--preemptibility preemptible" in out.stdout
    assert fake.calls() == []
