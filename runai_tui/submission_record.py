"""The submission record: which profile a job was submitted from, with which `--set` overrides,
and the resolved profile that was sent, so that `resubmit` rebuilds exactly what was submitted.

The submit sequence (runai/submission.py) adds it to the submit as one pod annotation,
`runai-tui.io/submission`, whose value is compact JSON. Why an annotation: it is the one place
that travels with the job on both backends without a second write. The local cluster keeps it in
the job's `spec.json`, next to the job (describe's `spec.annotations`), and removes it with the
job; on Run:ai it is part of the workload, and describe's JSON shows it where that CLI version
shows the pod annotations. A job's run directory on the PVC is out of reach of the submitting
machine, and a file kept on that machine would outlive the job and miss jobs submitted
elsewhere. A job without the record (submitted by hand with `runai`) is rebuilt from describe's
submit argv where it has one.

Shared by the plumbing (which writes it) and the knowledge (which reads it back from describe).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runai_tui.profiles import ProfileError, validate_data
from runai_tui.profiles.schema import make_profile

if TYPE_CHECKING:
    from runai_tui.profiles import Profile

ANNOTATION = "runai-tui.io/submission"
VERSION = 1


@dataclass(frozen=True)
class Record:
    """`profile`: the profile's name; `sets`: every `--set` applied, in order; `data`: the
    resolved profile after them (what was submitted)."""

    profile: str
    sets: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)

    def encode(self) -> str:
        doc = {"v": VERSION, "profile": self.profile, "sets": list(self.sets), "data": self.data}
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def decode(text: str) -> Record:
    """The record from its annotation value; ValueError names what is wrong with it."""
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("v") != VERSION:
        raise ValueError(f"not a version {VERSION} submission record")
    profile, sets, data = doc.get("profile"), doc.get("sets"), doc.get("data")
    if not isinstance(profile, str) or not profile:
        raise ValueError("the record names no profile")
    if not isinstance(sets, list) or not all(isinstance(s, str) for s in sets):
        raise ValueError("the record's sets are not a list of FIELD=VALUE")
    if not isinstance(data, dict):
        raise ValueError("the record's profile is not a mapping")
    return Record(profile, tuple(sets), data)


def find(document: Any) -> str | None:
    """The annotation's value anywhere in describe's JSON (`spec.annotations` on the local
    cluster; Run:ai versions nest pod annotations differently): None when absent."""
    if isinstance(document, dict):
        notes = document.get("annotations")
        if isinstance(notes, dict) and isinstance(notes.get(ANNOTATION), str):
            return str(notes[ANNOTATION])
        children: list[Any] = list(document.values())
    elif isinstance(document, list):
        children = document
    else:
        return None
    for child in children:
        found = find(child)
        if found is not None:
            return found
    return None


def profile_of(record: Record, label: str) -> Profile:
    """The recorded profile, validated through the field table again (a record written by an
    older runai-tui may hold a field this one refuses: ProfileError names it, under `label`)."""

    data, problems = validate_data(record.data, lambda path: (label, None))
    if problems:
        raise ProfileError(problems)
    return make_profile(record.profile, None, data, None, {})
