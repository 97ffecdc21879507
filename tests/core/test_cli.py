"""The headless CLI as a user runs it: a real `runai-tui` subprocess, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runai_tui.profiles import submission_record

REPO = Path(__file__).resolve().parents[2]
RUNAI_TUI = shutil.which("runai-tui", path=str(Path(sys.executable).parent)) or "runai-tui"


def run(*args: str, env: dict[str, str] | None = None, stdin: str | None = None):
    return subprocess.run(
        [RUNAI_TUI, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        input=stdin,
        timeout=60,
    )


def user_profile(name: str, text: str) -> Path:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return path


def test_dry_run_prints_the_seed_command_on_one_line(tmp_path: Path) -> None:
    from tests.fakes import fake_runai

    fake = fake_runai(tmp_path)
    out = run("submit", "--profile", "retinanet-tcp", "--dry-run", env=fake.env())
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 1
    # runai as the backend executes it (its path), then the seed's words.
    assert lines[0].startswith(f"{fake.path} training pytorch submit retinanet-tcp --image ")
    assert lines[0].endswith(" --command -- /data/scripts/vision/shell/train-retinanet-ddp.sh")


def test_dry_run_json_with_name_and_sets() -> None:
    out = run(
        "submit",
        "--profile",
        "retinanet-tcp",
        "--name",
        "r2",
        "--set",
        "workers=4",
        "--set",
        "env.MSG=a $(b) `c`",
        "--dry-run",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    argv = json.loads(out.stdout)["argv"]
    assert argv[4] == "r2"
    assert argv[argv.index("--workers") + 1] == "4"
    assert "MSG=a $(b) `c`" in argv


@pytest.mark.parametrize(
    ("args", "profile_text", "words"),
    [
        (["submit", "--profile", "nope", "--dry-run"], None, "unknown profile 'nope'"),
        (
            ["submit", "--profile", "p", "--dry-run"],
            "image: a\nworkers: two\n",
            "p.yaml:2: workers:",
        ),
        (["submit", "--profile", "p", "--dry-run"], "image: [a\n", "malformed YAML"),
        (["submit", "--profile", "p", "--dry-run"], "- a\n", "not a mapping"),
        (["submit", "--profile", "p", "--dry-run"], "image: a\nimage: b\n", "duplicate key"),
        (["submit", "--profile", "p", "--dry-run"], "extends: p\nimage: a\n", "cycle"),
        (["submit", "--profile", "p", "--dry-run"], "extends: gone\nimage: a\n", "no such profile"),
        (
            ["submit", "--profile", "p", "--dry-run"],
            "image: a\nenv: {'A=B': 1}\n",
            "env.A=B",
        ),
        (
            ["submit", "--profile", "retinanet-tcp", "--dry-run", "--set", "gpu=1"],
            None,
            "did you mean 'gpus'",
        ),
        (
            ["submit", "--profile", "retinanet-tcp", "--dry-run", "--name", "Big_Job"],
            None,
            "DNS-1123",
        ),
        (["submit", "--dry-run"], None, "--profile"),
        (["frobnicate"], None, "invalid choice"),
        (["profiles", "validate", "p"], "image: a\nworkers: -5\n", "workers"),
        (["profiles", "show", "nope"], None, "unknown profile"),
    ],
)
def test_bad_input_exits_2_with_one_error_line(
    args: list[str], profile_text: str | None, words: str
) -> None:
    if profile_text is not None:
        user_profile("p", profile_text)
    out = run(*args)
    assert out.returncode == 2, (out.stdout, out.stderr)
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, out.stderr
    assert words in errors[0]
    assert "Traceback" not in out.stderr


def test_debug_shows_the_traceback() -> None:
    out = run("--debug", "submit", "--profile", "nope", "--dry-run")
    assert out.returncode == 2 and "Traceback" in out.stderr


def test_profiles_list_show_validate_new() -> None:
    out = run("profiles", "list", "--json")
    names = {p["name"]: p for p in json.loads(out.stdout)}
    assert names["retinanet-tcp"]["origin"] == "project"
    resolved = run("profiles", "show", "retinanet-rdma", "--resolved").stdout
    assert "NCCL_IB_HCA: mlx5" in resolved and "image: nvcr.io/nvidia/pytorch:26.02-py3" in resolved
    assert run("profiles", "validate").returncode == 0
    created = run("profiles", "new", "mine", "--from", "retinanet-tcp")
    assert created.returncode == 0, created.stderr
    path = Path(created.stdout.split("Created ", 1)[1].strip())
    assert path.parent == Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    assert run("profiles", "validate", str(path)).returncode == 0
    dry = run("submit", "--profile", "mine", "--dry-run").stdout
    assert dry.split(" ", 1)[1].startswith("training pytorch submit mine ")


def test_delete_without_a_terminal_requires_yes() -> None:
    out = run("--backend", "local", "delete", "some-job")
    assert out.returncode == 2 and "add --yes" in out.stderr


def test_every_subcommand_has_help() -> None:
    for sub in ["submit", "profiles", "list", "describe", "logs", "delete", "exec", "info"]:
        out = run(sub, "--help")
        assert out.returncode == 0 and "usage:" in out.stdout, sub


# --- against a fake `runai` that records its argv -------------------------------------------

LIST_JSON = json.dumps(
    {
        "workloads": [
            {"name": "train-a", "phase": "Running", "projectName": "team-a", "runningPods": 3},
            {"name": "train-b", "status": "Succeeded", "project": "team-a"},
        ],
        "next": "",
    }
)
DESCRIBE_JSON = json.dumps(
    {
        "name": "train-a",
        "phase": "Running",
        "projectName": "team-a",
        "pods": [{"name": "train-a-master-0", "phase": "Running"}],
        "events": [{"createdAt": "t0", "type": "Normal", "reason": "Started", "message": "ok"}],
    }
)


def test_list_sorts_names_as_people_read_them(tmp_path: Path) -> None:
    from tests.fakes import fake_runai, rule

    listed = [
        {"name": n, "phase": "Running", "projectName": "p"} for n in ("t10", "t2", "T1", "t2b")
    ]
    fake = fake_runai(
        tmp_path, [rule("training", "list", stdout=json.dumps({"workloads": listed}))]
    )
    env = fake.env()
    out = run("list", env=env)
    assert out.returncode == 0, out.stderr
    names = [line.split()[0] for line in out.stdout.splitlines()[1:]]
    assert names == ["T1", "t2", "t2b", "t10"]
    as_json = json.loads(run("list", "--json", env=env).stdout)
    assert [j["name"] for j in as_json] == ["T1", "t2", "t2b", "t10"]


def test_cli_against_fake_runai(tmp_path: Path) -> None:
    from tests.fakes import fake_runai, rule

    fake = fake_runai(
        tmp_path,
        [
            rule("training", "list", stdout="A new version (v9) is available.\n" + LIST_JSON),
            rule("pytorch", "describe", "train-a", stdout=DESCRIBE_JSON),
            rule("pytorch", "logs", stdout="line 1\n[red]literal[/red]\n"),
            rule("pytorch", "delete", stdout="workload train-a deleted\n"),
            rule("pytorch", "submit", stdout="Creating pytorch training retinanet-tcp...\n"),
        ],
    )
    env = fake.env()
    out = run("submit", "--profile", "retinanet-tcp", env=env)
    assert out.returncode == 0, out.stderr
    assert (
        "Submitted job retinanet-tcp" in out.stdout
        and "runai-tui logs retinanet-tcp -f" in out.stdout
    )
    dry = json.loads(
        run("submit", "--profile", "retinanet-tcp", "--dry-run", "--json", env=env).stdout
    )
    # Exactly the dry run's argv, the executable and the submission record (one annotation)
    # included.
    assert fake.executed()[-1] == dry["argv"]
    sent = fake.calls()[-1]
    mark = f"{submission_record.ANNOTATION}="
    [at] = [i for i, w in enumerate(sent) if w == "--annotation" and sent[i + 1].startswith(mark)]
    assert submission_record.decode(sent[at + 1].removeprefix(mark)).profile == "retinanet-tcp"

    listed = json.loads(run("list", "--json", env=env).stdout)
    assert [(j["name"], j["status"]) for j in listed] == [
        ("train-a", "Running"),
        ("train-b", "Completed"),
    ]
    assert fake.calls()[-1] == ["training", "list", "--json"]
    table = run("-p", "team-a", "list", env=env)
    assert "train-a" in table.stdout and "Running" in table.stdout
    assert fake.calls()[-1] == ["training", "list", "--json", "-p", "team-a"] or fake.calls()[
        -1
    ] == ["training", "list", "-p", "team-a", "--json"]

    described = run("describe", "train-a", env=env)
    assert "train-a-master-0" in described.stdout and "Running" in described.stdout
    # then the master's log, for what recovery cost (resumes, steps lost)
    assert fake.calls()[-2][:4] == ["training", "pytorch", "describe", "train-a"]
    assert fake.calls()[-1][:4] == ["training", "pytorch", "logs", "train-a"]
    logs = run("logs", "train-a", "--pod", "train-a-worker-0", "--tail", "5", env=env)
    assert logs.stdout == "line 1\n[red]literal[/red]\n"
    assert {"--pod", "train-a-worker-0", "--tail", "5"} <= set(fake.calls()[-1])
    deleted = run("delete", "train-a", "--yes", env=env)
    assert deleted.returncode == 0 and fake.calls()[-1][:4] == [
        "training",
        "pytorch",
        "delete",
        "train-a",
    ]


@pytest.mark.parametrize(
    ("response", "words", "hint"),
    [
        (
            {"stderr": "workload 'ghost' could not be found in project 'p'\n", "exit": 1},
            "ghost",
            "runai-tui list",
        ),
        (
            {"stdout": "Job ghost does not exist in project p.\n", "exit": 0},
            "ghost",
            "",
        ),
        (  # the real CLI's cobra prefix: passed on without it, after our own `error:`
            {"stderr": "Error: workload 'ghost' could not be found in project 'p'\n", "exit": 1},
            "ghost",
            "runai-tui list",
        ),
        ({"stderr": "Error: token is expired\n", "exit": 1}, "log", "runai login"),
        ({"stderr": "Error: something odd happened\n", "exit": 3}, "something odd", ""),
    ],
)
def test_runtime_failures_exit_1_with_one_error_line(
    tmp_path: Path, response: dict, words: str, hint: str
) -> None:
    from tests.fakes import fake_runai, rule

    fake = fake_runai(tmp_path, [rule("describe", **response), rule("delete", **response)])
    for args in (["describe", "ghost"], ["delete", "ghost", "--yes"]):
        out = run(*args, env=fake.env())
        assert out.returncode == 1, (args, out.stdout, out.stderr)
        errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and words in errors[0].lower(), out.stderr
        assert errors[0].lower().count("error:") == 1, errors[0]  # ours, not runai's again
        if hint:
            assert hint in out.stderr


def test_runai_not_installed(tmp_path: Path) -> None:
    out = run(
        "--backend", "runai", "list", env={"RUNAI_TUI_RUNAI": str(tmp_path / "missing-runai")}
    )
    assert out.returncode == 1 and "error:" in out.stderr and "Traceback" not in out.stderr


def test_exec_options_may_come_before_the_command(tmp_path: Path) -> None:
    from tests.fakes import fake_runai, rule

    fake = fake_runai(tmp_path, [rule("exec", stdout="done\n")])
    out = run(
        "exec", "job-a", "--pod", "job-a-worker-0", "--", "ls", "--pod", "-la", env=fake.env()
    )
    assert out.returncode == 0, out.stderr
    call = fake.calls()[-1]
    assert call[:4] == ["training", "pytorch", "exec", "job-a"]
    assert call[call.index("--pod") + 1] == "job-a-worker-0"
    assert call[call.index("--") + 1 :] == ["ls", "--pod", "-la"]
    assert run("list", "--", "x").returncode == 2
