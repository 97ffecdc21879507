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

What it holds (version 2): the profile's name, the `--name` and every `--set` given, and the
resolved profile's fields (without `extends` and `description`, which the command does not
carry), which is what `resubmit` rebuilds from; `compare` reads the submit argv and leaves the
record out. An `env` (or `master_env`) value lint's `secret-in-env` matcher flags
(runai_tui/util/redaction.py's `literal_secret`) is never copied: its name stays, in place, with
REDACTED as its value, and `redacted` lists it (`env.NAME`); a rebuild takes the value from
the profile of that name as it is now, else says it is missing. A job of a sweep (runai_tui/workflows/sweep.py) also carries the sweep's ID (`sweep`) and its
own combination of the grid's values (`values`, FIELD -> VALUE as given); both are optional keys
of version 2, which a reader that predates them ignores. A job submitted again from another
(`resubmit`, or the watcher's next attempt) also names that job (`parent`) and its number in
the chain (`attempt`; the first submission, which has neither, is attempt 1) and the chain's first job
(`root`; absent from records written before it, whose chain is then found by their parents), so
the chain of attempts is read from the cluster alone; its `sets` are the ones still in force, one per field
(profiles/overrides.effective_sets), so the record does not grow with attempts. The record is bounded: BUDGET bytes
(key and value, as Kubernetes counts them), a small share of the 256 KiB that all of an object's
annotations may take (docs/contracts.md); a larger one is refused before anything runs.

Shared by the plumbing (which writes it) and the knowledge (which reads it back from describe).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from runai_tui.profiles import ProfileError, validate_data
from runai_tui.profiles.schema import make_profile
from runai_tui.shapes.errors import UsageError
from runai_tui.util.redaction import REDACTED, literal_secret

if TYPE_CHECKING:
    from runai_tui.profiles import Profile

ANNOTATION = "runai-tui.io/submission"
VERSION = 2
READABLE = (1, 2)  # version 1: the same without `name` and `redacted` (secrets copied as given)
# Kubernetes refuses an object whose annotations, keys and values together, exceed 256 KiB
# (TotalAnnotationSizeLimitB, k8s.io/apimachinery/pkg/api/validation/objectmeta.go). The record
# goes to the workload, the PyTorchJob and every pod, next to annotations others add (Multus's
# network status, Run:ai's own, a `kubectl apply` copy of the whole object): 16 KiB keeps it a
# sixteenth of the limit, and some 15 times the record of a shipped profile (about 1 KB).
K8S_ANNOTATIONS_LIMIT = 256 * 1024
BUDGET = 16 * 1024
_DROPPED = ("extends", "description")  # not in the command: nothing to rebuild from them
ENV_FIELDS = ("env", "master_env")  # where a secret's value is never recorded


class RecordTooLarge(UsageError):
    """The record would pass its budget: nothing is submitted (exit 2)."""


@dataclass(frozen=True)
class Record:
    """`profile`: the profile's name; `sets`: every `--set` applied, in order (a secret's value
    redacted); `data`: the resolved profile after them; `name`: the `--name` given; `redacted`:
    the `env.NAME` / `master_env.NAME` whose values `data` and `sets` leave out; `sweep`: the
    sweep's ID for a job of a sweep, with `values`, its combination of the grid (FIELD -> VALUE)."""

    profile: str
    sets: tuple[str, ...] = ()
    data: dict[str, object] = field(default_factory=dict)
    name: str | None = None
    redacted: tuple[str, ...] = ()
    sweep: str | None = None
    values: dict[str, str] = field(default_factory=dict)
    parent: str | None = None
    attempt: int | None = None
    root: str | None = None

    @property
    def attempt_number(self) -> int:
        """This submission's number in its chain: 1 for a first submission."""
        return self.attempt if self.attempt is not None else 1

    def encode(self) -> str:
        doc: dict[str, object] = {"v": VERSION, "profile": self.profile}
        if self.name is not None:
            doc["name"] = self.name
        doc |= {"sets": list(self.sets), "data": self.data}
        if self.redacted:
            doc["redacted"] = list(self.redacted)
        if self.sweep is not None:
            doc |= {"sweep": self.sweep, "values": self.values}
        if self.parent is not None:
            doc |= {"parent": self.parent, "attempt": self.attempt_number}
            if self.root is not None:
                doc["root"] = self.root
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def _redact_set(item: str, redacted: Sequence[str]) -> str:
    """`env.HF_TOKEN=hf_…` as `env.HF_TOKEN=<redacted>`; a whole `env={…}` holding a redacted
    name as `env=<redacted>` (the recorded sets are the history; `data` is what is rebuilt)."""
    key, _, value = item.partition("=")
    key = key.strip()
    field_name, dot, name = key.partition(".")
    if field_name not in ENV_FIELDS:
        return item
    if (dot and literal_secret(name, value)) or (
        not dot and any(p.partition(".")[2] in value for p in redacted if p.startswith(key + "."))
    ):
        return f"{key}={REDACTED}"
    return item


def make(
    profile: Profile,
    sets: Sequence[str] = (),
    name: str | None = None,
    sweep: str | None = None,
    values: Mapping[str, str] | None = None,
    parent: str | None = None,
    attempt: int | None = None,
    root: str | None = None,
) -> Record:
    """The record of a submission of `profile` (overrides applied) under `name`; `sweep` and
    `values` for a job of a sweep; `parent`, `attempt` and the chain's first job (`root`) for a
    job submitted again."""
    data = {k: v for k, v in profile.data.items() if k not in _DROPPED}
    redacted: list[str] = []
    for field_name in ENV_FIELDS:
        env = data.get(field_name)
        if not isinstance(env, dict):
            continue
        secret = [k for k, v in env.items() if literal_secret(str(k), str(v))]
        if secret:
            data[field_name] = {k: REDACTED if k in secret else v for k, v in env.items()}
            redacted += [f"{field_name}.{k}" for k in secret]
    recorded = tuple(_redact_set(item, redacted) for item in sets)
    shown = {
        k: _redact_set(f"{k}={v}", redacted).partition("=")[2] for k, v in (values or {}).items()
    }
    return Record(
        profile.name, recorded, data, name, tuple(redacted), sweep, shown, parent, attempt,
        root if parent is not None else None,
    )  # fmt: skip


def annotation_value(record: Record) -> str:
    """The record as its annotation's value; RecordTooLarge (one line: the size, the budget, the
    largest field and the fix) past BUDGET."""
    value = record.encode()
    size = len(ANNOTATION.encode()) + len(value.encode())
    if size > BUDGET:
        sizes = {
            k: len(json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode())
            for k, v in record.data.items()
        }
        largest = max(sizes, key=lambda k: sizes[k]) if sizes else "sets"
        raise RecordTooLarge(
            f"the submission record ({ANNOTATION}) would be {size} bytes, over its "
            f"{BUDGET}-byte budget (all annotations of a Kubernetes object share "
            f"{K8S_ANNOTATIONS_LIMIT}): nothing submitted; shorten the largest field, "
            f"{largest} ({sizes.get(largest, 0)} bytes), e.g. move long values into a file on "
            "the PVC"
        )
    return value


def decode(text: str) -> Record:
    """The record from its annotation value; ValueError names what is wrong with it."""
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("v") not in READABLE:
        raise ValueError(f"not a version {' or '.join(map(str, READABLE))} submission record")
    profile, sets, data = doc.get("profile"), doc.get("sets"), doc.get("data")
    name, redacted = doc.get("name"), doc.get("redacted", [])
    sweep, values = doc.get("sweep"), doc.get("values", {})
    parent, attempt, root = doc.get("parent"), doc.get("attempt"), doc.get("root")
    if not isinstance(profile, str) or not profile:
        raise ValueError("the record names no profile")
    if not isinstance(sets, list) or not all(isinstance(s, str) for s in sets):
        raise ValueError("the record's sets are not a list of FIELD=VALUE")
    if not isinstance(data, dict):
        raise ValueError("the record's profile is not a mapping")
    if name is not None and not isinstance(name, str):
        raise ValueError("the record's name is not text")
    if not isinstance(redacted, list) or not all(isinstance(r, str) for r in redacted):
        raise ValueError("the record's redacted names are not a list of env.NAME paths")
    if sweep is not None and not isinstance(sweep, str):
        raise ValueError("the record's sweep is not text")
    if not isinstance(values, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in values.items()
    ):
        raise ValueError("the record's sweep values are not a mapping of FIELD to VALUE")
    if parent is not None and not isinstance(parent, str):
        raise ValueError("the record's parent is not a job name")
    if attempt is not None and (isinstance(attempt, bool) or not isinstance(attempt, int)):
        raise ValueError("the record's attempt is not a whole number")
    if root is not None and not isinstance(root, str):
        raise ValueError("the record's root is not a job name")
    return Record(profile, tuple(sets), data, name, tuple(redacted), sweep, dict(values), parent,
                  attempt, root)  # fmt: skip


def find(document: object) -> str | None:
    """The annotation's value anywhere in describe's JSON (`spec.annotations` on the local
    cluster; Run:ai versions nest pod annotations differently): None when absent."""
    if isinstance(document, dict):
        notes = document.get("annotations")
        if isinstance(notes, dict) and isinstance(notes.get(ANNOTATION), str):
            return str(notes[ANNOTATION])
        children: list[object] = list(document.values())
    elif isinstance(document, list):
        children = document
    else:
        return None
    for child in children:
        found = find(child)
        if found is not None:
            return found
    return None


def profile_of(
    record: Record, label: str, secrets: Mapping[str, str] | None = None
) -> tuple[Profile, tuple[str, ...]]:
    """The recorded profile, validated through the field table again (a record written by an
    older runai-tui may hold a field this one refuses: ProfileError names it, under `label`),
    and the redacted values it lacks (`env.NAME` paths). A redacted value comes from `secrets`
    (by path: the profile of that name as it is now); one `secrets` lacks is left out, never
    sent as REDACTED."""

    data = dict(record.data)
    known = secrets or {}
    missing: list[str] = []
    for path in record.redacted:
        field_name, _, key = path.partition(".")
        env = data.get(field_name)
        if field_name not in ENV_FIELDS or not isinstance(env, dict) or key not in env:
            continue
        if path in known:
            data[field_name] = {k: known[path] if k == key else v for k, v in env.items()}
        else:
            data[field_name] = {k: v for k, v in env.items() if k != key}
            missing.append(path)
    validated, problems = validate_data(data, lambda path: (label, None))
    if problems:
        raise ProfileError(problems)
    return make_profile(record.profile, None, validated, None, {}), tuple(missing)
