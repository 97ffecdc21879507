"""Where runai-tui keeps its files: the one place that reads the XDG base directories.

Each base is `$XDG_*_HOME` when set and non-empty, else the XDG default under the home
directory; it is read at call time (tests set XDG_* per test). Everything of ours lives in a
`runai-tui` folder inside:

    config  $XDG_CONFIG_HOME/runai-tui/   config.toml, profiles/, local.yaml
    state   $XDG_STATE_HOME/runai-tui/    local/ (the local cluster's jobs)
    data    $XDG_DATA_HOME/runai-tui/     local/pvc/ (the local cluster's PVCs)
    cache   $XDG_CACHE_HOME/runai-tui/
"""

from __future__ import annotations

import os
from pathlib import Path

APP = "runai-tui"

_DEFAULTS = {
    "XDG_CONFIG_HOME": (".config",),
    "XDG_STATE_HOME": (".local", "state"),
    "XDG_DATA_HOME": (".local", "share"),
    "XDG_CACHE_HOME": (".cache",),
}


def xdg_home(variable: str) -> Path:
    """The base directory `variable` names (XDG_CONFIG_HOME, …) or its default."""
    value = os.environ.get(variable)
    if value:
        return Path(value)
    return Path.home().joinpath(*_DEFAULTS[variable])


def config_dir() -> Path:
    return xdg_home("XDG_CONFIG_HOME") / APP


def state_dir() -> Path:
    return xdg_home("XDG_STATE_HOME") / APP


def data_dir() -> Path:
    return xdg_home("XDG_DATA_HOME") / APP


def cache_dir() -> Path:
    return xdg_home("XDG_CACHE_HOME") / APP


def config_file() -> Path:
    """The settings file (config.py): default backend, project, refresh interval."""
    return config_dir() / "config.toml"


def user_profiles_dir() -> Path:
    return config_dir() / "profiles"


def local_config_file() -> Path:
    """The local cluster's settings (local/config.py)."""
    return config_dir() / "local.yaml"


def local_state_dir() -> Path:
    """The local cluster's jobs, locks and logs."""
    return state_dir() / "local"


def local_data_dir() -> Path:
    """The local cluster's data; PVCs default to `pvc/<claim>` inside."""
    return data_dir() / "local"


def local_pvc_root() -> Path:
    return local_data_dir() / "pvc"
