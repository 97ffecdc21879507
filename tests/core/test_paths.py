"""One module computes every XDG path; each follows $XDG_*_HOME at call time, else the default."""

from __future__ import annotations

from pathlib import Path

import pytest

from runai_local import config as local_config
from runai_local import state
from runai_tui.profiles import ProfileStore
from runai_tui.util import paths


def test_every_path_follows_its_xdg_variable(tmp_path: Path, monkeypatch) -> None:
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(var, str(tmp_path / var))
    assert paths.config_file() == tmp_path / "XDG_CONFIG_HOME/runai-tui/config.toml"
    assert paths.user_profiles_dir() == tmp_path / "XDG_CONFIG_HOME/runai-tui/profiles"
    assert ProfileStore().user_dir == paths.user_profiles_dir()
    assert local_config.config_path() == tmp_path / "XDG_CONFIG_HOME/runai-tui/local.yaml"
    assert state.state_root() == tmp_path / "XDG_STATE_HOME/runai-tui/local"
    assert local_config.load_config().pvc_root == tmp_path / "XDG_DATA_HOME/runai-tui/local/pvc"
    assert paths.cache_dir() == tmp_path / "XDG_CACHE_HOME/runai-tui"


@pytest.mark.parametrize(
    ("var", "default"),
    [
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CACHE_HOME", ".cache"),
    ],
)
@pytest.mark.parametrize("value", [None, ""])
def test_unset_or_empty_means_the_default(
    tmp_path: Path, monkeypatch, var: str, default: str, value: str | None
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    if value is None:
        monkeypatch.delenv(var)
    else:
        monkeypatch.setenv(var, value)
    assert paths.xdg_home(var) == tmp_path / default
