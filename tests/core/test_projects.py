"""The project list: parsing the shapes `runai project list --json` may have, the client over the
fake `runai` and over the real local cluster, and `runai-tui projects`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from runai_tui.cli import main
from runai_tui.runai.backend import Backend, find_local
from runai_tui.runai.client import RunaiClient
from runai_tui.runai.parse import parse_project_list
from runai_tui.shapes.errors import ErrorKind, RunaiError
from tests.fakes import FakeRunai, rule

NOTICE = "A new version (v2.25.3) is available. Updating now...\n"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ('[{"name": "team-a"}, {"name": "team-b", "id": 3}]', ["team-a", "team-b"]),
        ('{"projects": [{"name": "team-a", "default": true}]}', ["team-a"]),
        ('{"items": [{"projectName": "x"}, {"projectName": "x"}]}', ["x"]),
        (NOTICE + '["a", "b"]\n', ["a", "b"]),
        ("No projects found\n", []),
        ("", []),
    ],
)
def test_parse_project_list_shapes(text: str, names: list[str]) -> None:
    assert parse_project_list(text) == names


@pytest.mark.parametrize(
    ("argv", "override", "expected"),
    [
        (["submit", "j", "--command", "--", "x", "-p", "z"], False,
         ["submit", "j", "-p", "P", "--command", "--", "x", "-p", "z"]),
        (["submit", "j", "--", "a"], False, ["submit", "j", "-p", "P", "--", "a"]),
        (["submit", "j", "--project", "own", "--", "a"], False,
         ["submit", "j", "--project", "own", "--", "a"]),
        (["submit", "j", "--project", "own", "--", "a"], True,
         ["submit", "j", "--project", "P", "--", "a"]),
        (["submit", "j", "-p", "own"], True, ["submit", "j", "-p", "P"]),
        (["submit", "j", "--project=own"], True, ["submit", "j", "--project=P"]),
    ],
)  # fmt: skip
def test_with_project(argv: list[str], override: bool, expected: list[str]) -> None:
    from runai_tui.runai.client import with_project

    assert with_project(argv, "P", override=override) == expected
    assert with_project(argv, None, override=override) == argv


def test_unparseable_project_list_is_one_line() -> None:
    with pytest.raises(RunaiError) as info:
        parse_project_list("PROJECT  QUOTA\nteam-a   4\n")
    assert info.value.kind is ErrorKind.OTHER
    assert info.value.message == "could not parse the project list: PROJECT  QUOTA"


def test_client_projects_never_passes_the_current_project(
    make_fake: Callable[..., FakeRunai], client_for: Callable[..., RunaiClient]
) -> None:
    fake = make_fake([rule("project", "list", stdout='[{"name": "team-a"}, {"name": "team-b"}]')])
    assert client_for(fake, project="team-a").projects() == ["team-a", "team-b"]
    assert fake.calls() == [["project", "list", "--json"]]


def test_client_projects_not_logged_in(
    make_fake: Callable[..., FakeRunai], client_for: Callable[..., RunaiClient]
) -> None:
    fake = make_fake([rule("project", stdout="You are currently not logged in to Run:AI\n")])
    with pytest.raises(RunaiError) as info:
        client_for(fake).projects()
    assert info.value.kind is ErrorKind.NOT_LOGGED_IN


def test_the_local_cluster_lists_its_default_project_and_those_with_jobs() -> None:
    client = RunaiClient(Backend("local", find_local()), timeout=60)
    assert client.projects() == ["local"]
    other = RunaiClient(Backend("local", find_local()), project="team-x", timeout=60)
    argv = ["runai", "training", "pytorch", "submit", "quick", "-i", "img", "--command", "--",
            sys.executable, "-c", "pass"]  # fmt: skip
    other.submit(argv)
    try:
        assert client.projects() == ["local", "team-x"]
        assert [job.name for job in other.list_jobs()] == ["quick"]
    finally:
        other.delete("quick")


def test_runai_tui_projects(tmp_path: Path, capsys, monkeypatch) -> None:
    from tests.fakes import fake_runai

    fake = fake_runai(tmp_path, [rule("project", "list", stdout='[{"name": "a"}, {"name": "b"}]')])
    for key, value in fake.env().items():
        monkeypatch.setenv(key, value)
    assert main(["-p", "b", "projects"]) == 0
    assert capsys.readouterr().out == "a\nb  (current)\n"
    assert main(["projects", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"name": "a", "current": False},
        {"name": "b", "current": False},
    ]
