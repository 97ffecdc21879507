"""Settings: the default backend, project and TUI refresh interval, and where each came from.

Precedence, highest first: the command-line flag, the environment variable, the config file
`$XDG_CONFIG_HOME/runai-tui/config.toml`, the built-in default:

    backend = "local"    # --backend        RUNAI_TUI_BACKEND   auto | runai | local (default auto)
    project = "team-a"   # -p/--project     RUNAI_TUI_PROJECT   (default: the CLI's own default)
    refresh = 5          # --refresh        RUNAI_TUI_REFRESH   seconds, 0 = off (default 2)
    notify = false       #                  RUNAI_TUI_NOTIFY    ring the terminal when a job ends
    runai_cli = "2.19"   #                  RUNAI_TUI_RUNAI_CLI what the runai CLI accepts, when its
                         #                  --help cannot be read: v2-early, v2.2x or a version
    gpu_hour_price = 2.5 #                  RUNAI_TUI_GPU_HOUR_PRICE  what a GPU-hour costs: `report`
                         #                  turns GPU-hours into cost (default: unset, no cost)

A bad value is a usage error (exit 2) naming the file and line (or the variable or flag), the
key, the value and the fix.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

from runai_tui.shapes.cli_generations import parse_override
from runai_tui.shapes.errors import UsageError
from runai_tui.util import paths
from runai_tui.util.duration import DurationError, read_seconds

# The backend's choices and variable live here, with the other settings, and backend.py imports
# them: the settings are read on every headless start, the backend module only when it runs.
BACKEND_CHOICES = ("auto", "runai", "local")
ENV_BACKEND = "RUNAI_TUI_BACKEND"
ENV_PROJECT = "RUNAI_TUI_PROJECT"
ENV_REFRESH = "RUNAI_TUI_REFRESH"
ENV_NOTIFY = "RUNAI_TUI_NOTIFY"
ENV_RUNAI_CLI = "RUNAI_TUI_RUNAI_CLI"
ENV_GPU_HOUR_PRICE = "RUNAI_TUI_GPU_HOUR_PRICE"
_PROJECT_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_TOML_LINE_RE = re.compile(r"at line (\d+)")  # where tomllib's error message says it is


T = TypeVar("T")


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One setting's `name`, `value` and where it came from (`source`): `flag --backend`,
    `env RUNAI_TUI_PROJECT`, `config /home/u/.config/runai-tui/config.toml:3` or `default`."""

    name: str
    value: T
    source: str

    @property
    def from_flag(self) -> bool:
        return self.source.startswith("flag ")


@dataclass(frozen=True)
class Settings:
    """Each Setting, and the config `file` consulted (it may not exist)."""

    backend: Setting[str]
    project: Setting[str | None]
    refresh: Setting[float]
    notify: Setting[bool]
    runai_cli: Setting[str | None]
    file: Path
    gpu_hour_price: Setting[float | None] = Setting("gpu_hour_price", None, "default")

    def all(self) -> list[Setting[Any]]:
        return [
            self.backend, self.project, self.refresh, self.notify, self.runai_cli,
            self.gpu_hour_price,
        ]  # fmt: skip


def _backend(value: Any) -> str:
    if isinstance(value, str) and value.strip().lower() in BACKEND_CHOICES:
        return value.strip().lower()
    raise ValueError(f"expected one of: {', '.join(BACKEND_CHOICES)}")


def _project(value: Any) -> str | None:
    if isinstance(value, str) and _PROJECT_RE.match(value):
        return value
    raise ValueError("expected a project name (lowercase letters, digits and '-', e.g. team-a)")


def _refresh(value: Any) -> float:
    try:
        return read_seconds(value)
    except DurationError as exc:
        raise ValueError(
            f"expected 0 (off) or a positive number of seconds such as 2 or 2s ({exc})"
        ) from None


def _notify(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "on"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "0", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _price(value: Any) -> float:
    """A price per GPU-hour: a number, 0 or more (in the currency you think in)."""
    if not isinstance(value, bool):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if math.isfinite(number) and number >= 0:
            return number
    raise ValueError("expected a price per GPU-hour, a number 0 or more (e.g. 2.5)")


def _runai_cli(value: Any) -> str:
    parse_override(value)  # ValueError says what is expected
    return str(value).strip()


class _Key(NamedTuple):
    """A setting's value `check`, its `env` variable, its `flag`, `default` and config `example`."""

    check: Callable[[Any], Any]
    env: str
    flag: str | None  # None: no command-line flag (config file and environment only)
    default: Any
    example: str


KEYS: dict[str, _Key] = {
    "backend": _Key(_backend, ENV_BACKEND, "--backend", "auto", 'backend = "local"'),
    "project": _Key(_project, ENV_PROJECT, "--project", None, 'project = "team-a"'),
    "refresh": _Key(_refresh, ENV_REFRESH, "--refresh", 2.0, "refresh = 5"),
    "notify": _Key(_notify, ENV_NOTIFY, None, True, "notify = false"),
    "runai_cli": _Key(_runai_cli, ENV_RUNAI_CLI, None, None, 'runai_cli = "2.19"'),
    "gpu_hour_price": _Key(_price, ENV_GPU_HOUR_PRICE, None, None, "gpu_hour_price = 2.5"),
}


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _line_of(text: str, key: str) -> int | None:
    pattern = re.compile(rf"^[ \t]*[\"']?{re.escape(key)}[\"']?\s*=", re.MULTILINE)
    match = pattern.search(text)
    return text.count("\n", 0, match.start()) + 1 if match else None


def read_config_file(path: Path) -> tuple[dict[str, Any], dict[str, int | None]]:
    """The settings in `path` (none when it does not exist) and the line of each; UsageError
    for a file that is not TOML or holds an unknown key."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, {}
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(
            f"{path}: cannot read the config file: {reason}", f"fix or remove {path}"
        ) from None
    if sys.version_info >= (3, 11):
        import tomllib  # only when config.toml exists: off the dry run (docs/performance.md)
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # as above
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_LINE_RE.search(str(exc))
        where = f"{path}:{found.group(1)}" if found else str(path)
        raise UsageError(
            f"{where}: not valid TOML: {exc}",
            f"fix the file, e.g. {KEYS['refresh'].example}",
        ) from None
    lines = {key: _line_of(text, key) for key in data}
    for key in data:
        if key not in KEYS:
            import difflib  # only for a misspelt key (docs/performance.md)

            close = difflib.get_close_matches(key, KEYS, n=1)
            line = lines[key]
            where = f"{path}:{line}" if line else str(path)
            raise UsageError(
                f"{where}: {key}: unknown setting"
                + (f" (did you mean {close[0]!r}?)" if close else ""),
                f"known settings: {', '.join(KEYS)}",
            )
    return data, lines


def load_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    path: Path | None = None,
) -> Settings:
    """Resolve every setting: `flags` (name -> value or None when not given) > environment >
    config file > default."""
    flags = dict(flags or {})
    env = os.environ if environ is None else environ
    path = path or paths.config_file()
    data, lines = read_config_file(path)
    resolved: dict[str, Setting[Any]] = {}
    for name, key in KEYS.items():
        if flags.get(name) is not None:
            raw, source = flags[name], f"flag {key.flag}"
            shown = f"{raw:g}" if isinstance(raw, float) else raw
            example = key.example.split(" = ")[1].strip('"')
            where, fix = f"{key.flag} {shown}", f"e.g. runai-tui {key.flag} {example}"
        elif env.get(key.env):
            raw, source = env[key.env], f"env {key.env}"
            where, fix = f"{key.env}={raw}", f"fix or unset {key.env}"
        elif name in data:
            line = lines.get(name)
            raw = data[name]
            source = f"config {path}:{line}" if line else f"config {path}"
            where = (
                f"{path}:{line}: {name}: {_show(raw)}" if line else f"{path}: {name}: {_show(raw)}"
            )
            fix = f"fix it in {path}, e.g. {key.example}"
        else:
            resolved[name] = Setting(name, key.default, "default")
            continue
        try:
            value = key.check(raw)
        except ValueError as exc:
            raise UsageError(f"{where}: {exc}", fix) from None
        resolved[name] = Setting(name, value, source)
    return Settings(
        backend=resolved["backend"],
        project=resolved["project"],
        refresh=resolved["refresh"],
        notify=resolved["notify"],
        runai_cli=resolved["runai_cli"],
        file=path,
        gpu_hour_price=resolved["gpu_hour_price"],
    )
