"""Profile YAML: read a file (size, binary and encoding checks), parse it keeping the line of every
field, reject duplicate keys; merge a child over its parent; dump resolved data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from runai_tui.profiles.schema import Problem, ProfileError

MAX_PROFILE_BYTES = 256 * 1024
# libyaml's parser when PyYAML was built with it (it gives the same nodes, marks and errors,
# worded by libyaml): parsing a profile is then ~5x faster, a headless start's cost.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Document:
    """Parsed YAML: `data`, the 1-based line of every field path in `lines` (("env", "X") -> 3)
    and the file's `path` (a label)."""

    data: dict[str, object]
    lines: dict[tuple[str, ...], int]
    path: str


def read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ProfileError([Problem(str(path), None, "", f"cannot read: {exc.strerror}")]) from exc
    if size > MAX_PROFILE_BYTES:
        raise ProfileError(
            [
                Problem(
                    str(path),
                    None,
                    "",
                    f"file is {size} bytes; a profile is at most {MAX_PROFILE_BYTES} bytes",
                )
            ]
        )
    raw = path.read_bytes()
    return decode(raw, str(path))


def decode(raw: bytes, label: str) -> str:
    if b"\x00" in raw:
        raise ProfileError(
            [Problem(label, None, "", "binary file (NUL bytes); expected YAML text")]
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ProfileError(
            [Problem(label, line, "", "not UTF-8 text; expected a YAML file")]
        ) from exc


def parse_document(text: str, label: str) -> Document:
    """Parse YAML text into plain data plus the line of every field; reject duplicate keys."""
    if len(text.encode("utf-8", "replace")) > MAX_PROFILE_BYTES:
        raise ProfileError([Problem(label, None, "", f"larger than {MAX_PROFILE_BYTES} bytes")])
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark else None
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ProfileError(
            [Problem(label, line, "", f"malformed YAML: {what}; fix the syntax at this line")]
        ) from exc
    finally:
        loader.dispose()
    if node is None:
        return Document({}, {}, label)
    if not isinstance(node, yaml.MappingNode):
        raise ProfileError(
            [
                Problem(
                    label,
                    node.start_mark.line + 1,
                    "",
                    "the file is not a mapping; expected 'field: value' lines such as 'image: ...'",
                )
            ]
        )
    lines: dict[tuple[str, ...], int] = {}
    problems: list[Problem] = []
    data = _construct(loader, node, (), lines, problems, label)
    if problems:
        raise ProfileError(problems)
    assert isinstance(data, dict)  # a mapping node constructs a dict
    return Document(data, lines, label)


def _construct(
    loader: yaml.SafeLoader,
    node: yaml.Node,
    path: tuple[str, ...],
    lines: dict[tuple[str, ...], int],
    problems: list[Problem],
    label: str,
) -> object:
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out: dict[str, object] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            key = key if isinstance(key, str) else str(key)
            sub = (*path, key)
            if key in out:
                problems.append(
                    Problem(
                        label,
                        key_node.start_mark.line + 1,
                        ".".join(sub),
                        f"duplicate key (first at line {lines[sub]}); keep one of them",
                    )
                )
                continue
            lines[sub] = key_node.start_mark.line + 1
            out[key] = _construct(loader, value_node, sub, lines, problems, label)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_construct(loader, item, path, lines, problems, label) for item in node.value]
    return loader.construct_object(node, deep=True)


def merge(parent: Mapping[str, object], child: Mapping[str, object]) -> dict[str, object]:
    """Mappings merge recursively, lists and scalars replace, a `null` in the child deletes."""
    out = dict(parent)
    for key, value in child.items():
        old = out.get(key)
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(old, dict):
            out[key] = merge(old, value)
        else:
            out[key] = value
    return out


def to_yaml(data: Mapping[str, object]) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
