"""The profile store: shipped profiles, then the user's; `extends` resolved with the origin of every
field; validated loads; atomic, validated saves."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from runai_tui.profiles.document import Document, merge, parse_document, read_text, to_yaml
from runai_tui.profiles.overrides import apply_sets
from runai_tui.profiles.schema import (
    Problem,
    Profile,
    ProfileError,
    did_you_mean,
    make_profile,
    validate_data,
)
from runai_tui.profiles.validators import DNS1123_LABEL, PROFILE_NAME, Invalid, dns_label, show
from runai_tui.shapes.errors import UsageError
from runai_tui.util import paths
from runai_tui.util.atomic import atomic_write

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# The shipped profiles are package data (pyproject.toml), so a wheel install has them. In a source
# tree `runai_tui/shipped_profiles` is a symlink to the project's `profiles/`, where they live.
SHIPPED_DIR = Path(__file__).resolve().parents[1] / "shipped_profiles"


@dataclass(frozen=True)
class ProfileEntry:
    """One listed profile: `name`, `path`, `origin` ("project" or "user"), its `description`,
    the shipped profile it hides (`shadows`) and why it does not load (`error`, None when it
    does)."""

    name: str
    path: Path
    origin: str
    description: str = ""
    shadows: Path | None = None
    error: str | None = None


def default_dirs() -> list[Path]:
    """Shipped profiles first, then the user's (a later directory shadows an earlier one)."""
    return [shipped_profiles_dir(), user_profiles_dir()]


def shipped_profiles_dir() -> Path:
    """Where the shipped profiles are: `<project>/profiles` in a source tree (the symlink resolved,
    so messages show the file you edit), `runai_tui/shipped_profiles` in an installed wheel."""
    if SHIPPED_DIR.is_dir():
        return SHIPPED_DIR.resolve()
    return PROJECT_ROOT / "profiles"  # a checkout without symlinks


def is_shipped(path: str | Path) -> bool:
    """Whether `path` (a profile's origin: the file that set a field) is a shipped profile."""
    origin = Path(path)  # a `--set X` label is no absolute path
    try:
        return origin.is_absolute() and origin.resolve().parent == shipped_profiles_dir()
    except (OSError, ValueError):
        return False


def user_profiles_dir() -> Path:
    return paths.user_profiles_dir()


class ProfileStore:
    def __init__(self, dirs: list[Path] | None = None) -> None:
        self.dirs = list(dirs) if dirs is not None else default_dirs()
        self.user_dir = self.dirs[-1]

    # -- discovery --------------------------------------------------------------------------

    def _files(self) -> dict[str, tuple[Path, str, Path | None]]:
        found: dict[str, tuple[Path, str, Path | None]] = {}
        for index, directory in enumerate(self.dirs):
            origin = "user" if directory == self.user_dir else "project"
            if not directory.is_dir():
                continue
            for path in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")]):
                previous = found.get(path.stem)
                shadows = previous[0] if previous and index > 0 else None
                found[path.stem] = (path, origin, shadows)
        return found

    def names(self) -> list[str]:
        return sorted(self._files())

    def entries(self) -> list[ProfileEntry]:
        out = []
        for name, (path, origin, shadows) in sorted(self._files().items()):
            try:
                described = {"description": self.load(name).description}
            except UsageError as exc:
                described = {"error": str(exc)}
            out.append(ProfileEntry(name, path, origin, shadows=shadows, **described))
        return out

    def path(self, name: str) -> Path:
        files = self._files()
        if name not in files:
            known = ", ".join(sorted(files)) or "none"
            hint = did_you_mean(name, files).lstrip("; ")
            raise UsageError(
                f"unknown profile '{name}'" + (f"; {hint}" if hint else ""),
                f"known profiles: {known} (see: runai-tui profiles list)",
            )
        return files[name][0]

    def raw_text(self, name: str) -> str:
        return read_text(self.path(name))

    # -- loading ----------------------------------------------------------------------------

    def _resolve(
        self, doc: Document, name: str, chain: tuple[str, ...]
    ) -> tuple[dict[str, object], dict[tuple[str, ...], tuple[str, int | None]]]:
        """Merge the parents of doc into one mapping; record which file and line set each path."""
        origins: dict[tuple[str, ...], tuple[str, int | None]] = {}
        parent_data: dict[str, object] = {}
        parent_name = doc.data.get("extends")
        if parent_name is not None:
            line = doc.lines.get(("extends",))
            if not isinstance(parent_name, str) or not parent_name:
                raise ProfileError(
                    [Problem(doc.path, line, "extends", f"{show(parent_name)}: expected a name")]
                )
            if parent_name in chain or parent_name == name:
                cycle = " -> ".join((*chain, name, parent_name))
                raise ProfileError(
                    [
                        Problem(
                            doc.path,
                            line,
                            "extends",
                            f"'{parent_name}': cycle {cycle}; remove one 'extends'",
                        )
                    ]
                )
            try:
                parent_path = self.path(parent_name)
            except UsageError:
                known = ", ".join(self.names()) or "none"
                raise ProfileError(
                    [
                        Problem(
                            doc.path,
                            line,
                            "extends",
                            f"'{parent_name}': no such profile; expected one of: {known}",
                        )
                    ]
                ) from None
            parent_doc = parse_document(read_text(parent_path), str(parent_path))
            parent_data, origins = self._resolve(parent_doc, parent_name, (*chain, name))
            parent_data.pop("extends", None)
        merged = merge(parent_data, doc.data)
        for path, line in doc.lines.items():
            origins[path] = (doc.path, line)
        return merged, origins

    def _build(self, doc: Document, name: str, overrides: list[str] | None = None) -> Profile:
        merged, origins = self._resolve(doc, name, ())
        if overrides:
            merged = apply_sets(merged, overrides, origins)

        def where(path: tuple[str, ...]) -> tuple[str, int | None]:
            for n in range(len(path), 0, -1):
                if path[:n] in origins:
                    return origins[path[:n]]
            return (doc.path, None)

        data, problems = validate_data(merged, where)
        if "image" not in data and not problems:
            problems.append(
                Problem(doc.path, None, "image", "missing; expected e.g. 'image: repo/name:tag'")
            )
        if problems:
            raise ProfileError(problems)
        data.pop("extends", None)
        parent = doc.data.get("extends")  # a name: _resolve has checked it
        return make_profile(
            name, Path(doc.path), data, parent if isinstance(parent, str) else None, origins
        )

    def load(self, name: str, overrides: list[str] | None = None) -> Profile:
        path = self.path(name)
        return self._build(parse_document(read_text(path), str(path)), name, overrides)

    def load_path(self, path: Path) -> Profile:
        """Validate a file that may live outside the search path (its `extends` use the store)."""
        return self._build(parse_document(read_text(path), str(path)), path.stem)

    def validate_text(self, name: str, text: str, label: str | None = None) -> Profile:
        return self._build(parse_document(text, label or f"{name}.yaml"), name)

    def resolved_yaml(self, name: str) -> str:
        return to_yaml(self.load(name).data)

    # -- writing ----------------------------------------------------------------------------

    def save_text(self, name: str, text: str) -> Path:
        """Validate then write atomically into the user dir. An invalid text is never saved."""
        _check_profile_name(name)
        target = self.user_dir / f"{name}.yaml"
        self.validate_text(name, text, str(target))
        atomic_write(target, text)
        return target

    def new(self, name: str, base: str | None = None) -> Path:
        _check_profile_name(name)
        if name in self._files() and (self.user_dir / f"{name}.yaml").exists():
            raise UsageError(f"profile '{name}' already exists", "choose another name")
        if base is not None:
            self.path(base)  # unknown base -> clear error
            text = (
                f"description: {name} (based on {base})\n"
                f"extends: {base}\n"
                "# Set only what differs from the parent; `null` removes an inherited key.\n"
            )
            if DNS1123_LABEL.match(name) and len(name) <= 63:
                text += f"job_name: {name}\n"
        else:
            job = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:63] or "job"
            text = (
                f"description: {name}\n"
                f"job_name: {job}\n"
                "image: nvcr.io/nvidia/pytorch:26.02-py3\n"
                "workers: 1\n"
                "gpus: 1\n"
                "command: [python, train.py]\n"
            )
        return self.save_text(name, text)

    def duplicate(self, name: str, new_name: str) -> Path:
        text = self.raw_text(name)
        if (self.user_dir / f"{new_name}.yaml").exists():
            raise UsageError(f"profile '{new_name}' already exists", "choose another name")
        return self.save_text(new_name, text)


def check_job_name(name: str) -> str:
    """Raise UsageError unless name is a valid job name (a DNS-1123 label)."""
    try:
        return dns_label(name)
    except Invalid as bad:
        raise UsageError(f"job name {name!r}: {bad.expected}") from None


def _check_profile_name(name: str) -> None:
    if not PROFILE_NAME.match(name):
        raise UsageError(
            f"invalid profile name {name!r}",
            "use letters, digits, '.', '_' or '-' (at most 100), e.g. retinanet-big",
        )
