"""config.toml: precedence flag > env > config > default, one-line validation errors (exit 2),
and `runai-tui info` saying where each setting came from."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runai_tui.cli import main
from runai_tui.shapes.config import load_settings
from runai_tui.shapes.errors import UsageError
from tests.fakes import fake_runai, rule


def config_file(text: str) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_without_a_file() -> None:
    settings = load_settings({})
    assert [(s.name, s.value, s.source) for s in settings.all()] == [
        ("backend", "auto", "default"),
        ("project", None, "default"),
        ("refresh", 2.0, "default"),
        ("notify", True, "default"),
        ("runai_cli", None, "default"),
        ("gpu_hour_price", None, "default"),
    ]


def test_precedence_flag_env_config_default(monkeypatch) -> None:
    path = config_file('# mine\nbackend = "local"\nproject = "team-c"\nrefresh = 7\n')
    settings = load_settings({})
    assert (settings.backend.value, settings.backend.source) == ("local", f"config {path}:2")
    assert (settings.project.value, settings.project.source) == ("team-c", f"config {path}:3")
    assert (settings.refresh.value, settings.refresh.source) == (7.0, f"config {path}:4")
    monkeypatch.setenv("RUNAI_TUI_PROJECT", "team-e")
    monkeypatch.setenv("RUNAI_TUI_REFRESH", "0")
    settings = load_settings({"project": "team-f"})
    assert (settings.project.value, settings.project.source) == ("team-f", "flag --project")
    assert (settings.refresh.value, settings.refresh.source) == (0.0, "env RUNAI_TUI_REFRESH")
    assert settings.backend.source == f"config {path}:2"


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        ("backend = 'lokal'\n", ":1: backend: 'lokal': expected one of: auto, runai, local",
         "e.g. backend = \"local\""),
        ("\n\nrefresh = -3\n", ":3: refresh: -3: expected 0 (off) or a positive number",
         "e.g. refresh = 5"),
        ("refresh = true\n", ":1: refresh: True: expected 0 (off)", "refresh = 5"),
        ("refresh = nan\n", ":1: refresh: nan: expected 0 (off)", "refresh = 5"),
        ("refresh = inf\n", ":1: refresh: inf: expected 0 (off)", "refresh = 5"),
        ("refresh = 'soon'\n", ":1: refresh: 'soon': expected 0 (off)", "refresh = 5"),
        ('project = "Team A"\n', ":1: project: 'Team A': expected a project name", "team-a"),
        ("refesh = 5\n", ":1: refesh: unknown setting (did you mean 'refresh'?)",
         "known settings: backend, project, refresh"),
        ("backend = \n", ":1: not valid TOML: ", "fix the file"),
    ],
)  # fmt: skip
def test_bad_config_values_are_one_line_errors_exit_2(
    capsys, text: str, message: str, hint: str
) -> None:
    path = config_file(text)
    with pytest.raises(UsageError) as info:
        load_settings({})
    assert str(info.value).startswith(str(path) + message)
    assert hint in info.value.hint
    assert main(["list"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"error: {info.value}" and err[1].startswith("hint: ") and len(err) == 2


def test_a_bad_environment_value_names_the_variable(monkeypatch) -> None:
    monkeypatch.setenv("RUNAI_TUI_REFRESH", "soon")
    with pytest.raises(UsageError) as info:
        load_settings({})
    assert (
        str(info.value)
        == "RUNAI_TUI_REFRESH=soon: expected 0 (off) or a positive number of seconds such as 2"
        " or 2s (expected digits and a unit)"
    )
    assert info.value.hint == "fix or unset RUNAI_TUI_REFRESH"


def test_the_config_file_chooses_backend_and_project_for_commands(tmp_path: Path, capsys) -> None:
    fake = fake_runai(tmp_path, [rule("training", "list", stdout='{"workloads": []}')])
    config_file('backend = "runai"\nproject = "team-c"\n')
    os.environ["RUNAI_TUI_RUNAI"] = str(fake.path)  # restored by the root conftest
    assert main(["list", "--json"]) == 0
    assert fake.calls() == [["training", "list", "--json", "-p", "team-c"]]
    assert main(["-p", "team-d", "list", "--json"]) == 0
    assert fake.calls()[-1] == ["training", "list", "--json", "-p", "team-d"]


def test_info_shows_where_each_setting_came_from(monkeypatch, capsys) -> None:
    path = config_file('backend = "local"\nrefresh = 5\n')
    monkeypatch.setenv("RUNAI_TUI_PROJECT", "team-e")
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"config file: {path}\n" in out
    assert f"  backend: local  (from config {path}:1)\n" in out
    assert "  project: team-e  (from env RUNAI_TUI_PROJECT)\n" in out
    assert f"  refresh: 5 s  (from config {path}:2)\n" in out
    assert "backend: local  (LOCAL)" in out and "version: runai-local " in out
    assert main(["--refresh", "1", "info", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["settings"] == {
        "backend": {"value": "local", "source": f"config {path}:1"},
        "project": {"value": "team-e", "source": "env RUNAI_TUI_PROJECT"},
        "refresh": {"value": 1.0, "source": "flag --refresh"},
        "notify": {"value": True, "source": "default"},
        "runai_cli": {"value": None, "source": "default"},
        "gpu_hour_price": {"value": None, "source": "default"},
    }
    assert data["config_file"] == {"path": str(path), "exists": True}
    assert data["backend"]["kind"] == "local" and data["backend"]["version"].startswith(
        "runai-local"
    )
    # The embedded cluster answers --help from its 2.25 flag table, as a real runai does.
    detected = data["runai_cli"]
    assert detected["decided_by"] == "help"
    rows = {row["capability"]: row for row in detected["capabilities"]}
    assert rows["verb suspend"] == {
        "capability": "verb suspend",
        "available": True,
        "source": "help",
    }
    assert rows["list --next-token"]["available"] is True
    assert rows["list --limit"]["available"] is False


def test_runai_cli_override_from_env_or_file_and_bad_values(monkeypatch, capsys) -> None:
    monkeypatch.setenv("RUNAI_TUI_RUNAI_CLI", "2.19")
    settings = load_settings({})
    assert (settings.runai_cli.value, settings.runai_cli.source) == (
        "2.19",
        "env RUNAI_TUI_RUNAI_CLI",
    )
    assert main(["--backend", "local", "info"]) == 0
    out = capsys.readouterr().out
    assert (
        "runai CLI: runai 2.19 (CLI v2 ≤ 2.20), from runai_cli (env RUNAI_TUI_RUNAI_CLI)"
        "  (decided by override)\n"
    ) in out
    assert "  verb suspend: no  (from override)\n" in out
    assert "  list --offset: yes  (from override)\n" in out
    monkeypatch.setenv("RUNAI_TUI_RUNAI_CLI", "banana")
    with pytest.raises(UsageError) as caught:
        load_settings({})
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith("RUNAI_TUI_RUNAI_CLI=banana: expected a CLI v2 generation")
    monkeypatch.delenv("RUNAI_TUI_RUNAI_CLI")
    path = config_file('runai_cli = "1.9"\n')
    with pytest.raises(UsageError) as caught:
        load_settings({})
    assert str(caught.value) == (
        f"{path}:1: runai_cli: '1.9': CLI v1 is not supported: runai-tui needs the runai CLI v2"
    )
    config_file('runai_cli = "v2.2x"\n')
    assert load_settings({}).runai_cli.value == "v2.2x"


def test_submit_dry_run_shows_the_project_that_will_be_used(capsys) -> None:
    config_file('project = "team-c"\n')
    assert main(["submit", "--profile", "retinanet-tcp", "--dry-run", "--json"]) == 0
    argv = json.loads(capsys.readouterr().out)["argv"]
    assert argv[argv.index("-p") + 1] == "team-c" and argv.index("-p") < argv.index("--command")
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles" / "own.yaml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("extends: retinanet-tcp\nproject: team-own\n")
    assert main(["submit", "--profile", "own", "--dry-run", "--json"]) == 0
    argv = json.loads(capsys.readouterr().out)["argv"]
    assert "team-own" in argv and "team-c" not in argv  # the profile's own project wins
    assert main(["-p", "team-d", "submit", "--profile", "own", "--dry-run", "--json"]) == 0
    argv = json.loads(capsys.readouterr().out)["argv"]
    assert "team-d" in argv and "team-own" not in argv  # ...but not over an explicit -p


def test_notify_false_in_the_file_and_a_bad_value(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("refresh = 5\nnotify = false\n")
    settings = load_settings({}, environ={}, path=path)
    assert (settings.notify.value, settings.notify.source) == (False, f"config {path}:2")
    assert load_settings({}, environ={"RUNAI_TUI_NOTIFY": "0"}, path=path).notify.value is False
    path.write_text('notify = "loud"\n')
    with pytest.raises(UsageError) as caught:
        load_settings({}, environ={}, path=path)
    assert caught.value.message == f"{path}:1: notify: 'loud': expected true or false"
    assert caught.value.hint == f"fix it in {path}, e.g. notify = false"


def test_a_price_per_gpu_hour_is_a_number_of_zero_or_more(monkeypatch) -> None:
    path = config_file("gpu_hour_price = 2.5\n")
    settings = load_settings({})
    assert (settings.gpu_hour_price.value, settings.gpu_hour_price.source) == (
        2.5, f"config {path}:1")  # fmt: skip
    monkeypatch.setenv("RUNAI_TUI_GPU_HOUR_PRICE", "-1")
    with pytest.raises(UsageError, match="RUNAI_TUI_GPU_HOUR_PRICE=-1: expected a price per"):
        load_settings({})
