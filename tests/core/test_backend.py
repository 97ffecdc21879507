"""Backend selection: --backend / $RUNAI_TUI_BACKEND, $RUNAI_TUI_RUNAI, PATH, the local cluster."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from runai_tui.runai import backend as backend_module
from runai_tui.runai.backend import Backend, find_local, select_backend
from runai_tui.shapes.errors import ErrorKind, RunaiError, UsageError
from tests.fakes import FakeRunai


@pytest.fixture
def no_runai_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.fixture
def local_ok(monkeypatch: pytest.MonkeyPatch) -> None:
    # The local cluster lands separately; these tests fix its availability either way.
    monkeypatch.setattr(backend_module, "local_available", lambda: True)


def test_explicit_runai_from_env_path(
    make_fake: Callable[..., FakeRunai], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = make_fake([])
    monkeypatch.setenv("RUNAI_TUI_RUNAI", str(fake.path))
    chosen = select_backend("runai")
    assert chosen == Backend("runai", [str(fake.path)])
    assert not chosen.is_local
    assert chosen.label == "runai"


def test_runai_found_on_path_by_name(
    make_fake: Callable[..., FakeRunai], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = make_fake([])
    monkeypatch.setenv("PATH", str(fake.bin_dir))
    assert select_backend("auto").executable == [str(fake.path)]
    monkeypatch.setenv("RUNAI_TUI_RUNAI", "runai")  # a name is looked up on PATH too
    assert select_backend(None).executable == [str(fake.path)]


@pytest.mark.usefixtures("no_runai_on_path")
def test_explicit_runai_missing_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RunaiError) as info:
        select_backend("runai")
    assert info.value.kind is ErrorKind.NOT_INSTALLED
    assert info.value.message == "runai is not installed or not on PATH"
    assert "RUNAI_TUI_RUNAI" in info.value.hint and "--backend local" in info.value.hint


@pytest.mark.usefixtures("no_runai_on_path")
def test_runai_env_pointing_nowhere_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RUNAI_TUI_RUNAI", str(tmp_path / "nope" / "runai"))
    with pytest.raises(RunaiError) as info:
        select_backend("runai")
    assert info.value.kind is ErrorKind.NOT_INSTALLED
    assert "RUNAI_TUI_RUNAI=" in info.value.message


@pytest.mark.usefixtures("no_runai_on_path", "local_ok")
def test_auto_falls_back_to_local(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = select_backend(None)
    assert chosen.kind == "local" and chosen.is_local and chosen.label == "LOCAL"
    assert chosen.executable == find_local()


@pytest.mark.usefixtures("local_ok")
def test_env_backend_local_wins_over_installed_runai(
    make_fake: Callable[..., FakeRunai], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = make_fake([])
    monkeypatch.setenv("PATH", str(fake.bin_dir))
    monkeypatch.setenv("RUNAI_TUI_BACKEND", "local")
    assert select_backend(None).is_local
    assert select_backend("runai").executable == [str(fake.path)]  # an explicit choice wins


@pytest.mark.usefixtures("no_runai_on_path")
def test_local_unavailable_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend_module, "local_available", lambda: False)
    for choice in ("local", "auto"):
        with pytest.raises(RunaiError) as info:
            select_backend(choice)
        assert info.value.kind is ErrorKind.NOT_INSTALLED
        assert "local cluster is not available" in info.value.message


@pytest.mark.parametrize("choice", ["cloud", "", "runai-local"])
def test_invalid_choice_is_a_usage_error(choice: str) -> None:
    with pytest.raises(UsageError) as info:
        select_backend(choice)
    assert repr(choice) in info.value.message
    assert info.value.hint == "use one of: auto, runai, local"


def test_invalid_env_choice_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNAI_TUI_BACKEND", "Kubernetes")
    with pytest.raises(UsageError) as info:
        select_backend(None)
    assert "RUNAI_TUI_BACKEND" in info.value.message and "'Kubernetes'" in info.value.message


def test_choice_is_case_insensitive(
    make_fake: Callable[..., FakeRunai], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNAI_TUI_RUNAI", str(make_fake([]).path))
    assert select_backend(" RunAI ").kind == "runai"


def test_find_local_prefers_the_venv_script(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    python = venv_bin / "python"
    python.write_text("")
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert find_local() == [str(python), "-m", "runai_local.cli"]
    script = venv_bin / "runai-local"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert find_local() == [str(script)]


def test_label_shows_a_known_version() -> None:
    assert Backend("runai", ["runai"], version="2.25.3").label == "runai 2.25.3"
    assert Backend("local", ["runai-local"], version="0.1.0").label == "LOCAL"
