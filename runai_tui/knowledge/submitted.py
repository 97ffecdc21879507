"""What a job was submitted with, read back from describe: the profile `resubmit` starts from and
the one diagnose and preflight compute remedies against.

In order: the submission record (runai_tui/submission_record.py: the profile's name, its
overrides and the resolved profile, as the `runai-tui.io/submission` annotation); else the submit
argv describe shows (the local cluster's `spec.submitArgv`), read back into profile fields through
the field table; else nothing, and `why` says what cannot be known.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runai_tui import submission_record
from runai_tui.errors import RuntimeFailure, UsageError
from runai_tui.knowledge.compare import split_submit_argv
from runai_tui.models import JobDetail
from runai_tui.profiles import FIELDS, Profile, ProfileError, ProfileStore

# `runai … submit` words before the job name, and flags that are not profile fields but that a
# resubmit may drop without changing the job (the project is chosen again; the record is new).
_PREFIX = ("runai", "runai-local", "training", "pytorch", "submit")
_DROPPED = {"-p", "--project"}
_RECORD = f"{submission_record.ANNOTATION}="


@dataclass(frozen=True)
class Submitted:
    """The profile a job was submitted with, the overrides it had (`sets`, recorded ones only),
    the profile's name, and where all this came from (`how`). The record never holds a secret's
    value: `borrowed` names (`env.NAME`) the values taken from the profile of that name as it is
    now, `unknown` those it no longer sets (left out of `profile`)."""

    profile: Profile
    sets: tuple[str, ...]
    how: str
    borrowed: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()


def _spec(detail: JobDetail) -> dict[str, Any]:
    spec = (detail.raw or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def _submit_argv(detail: JobDetail) -> list[str] | None:
    argv = _spec(detail).get("submitArgv")
    if isinstance(argv, list) and argv and all(isinstance(w, str) for w in argv):
        return list(argv)
    return None


def _scalar(text: str, as_text: bool) -> Any:
    """A flag's value as the profile holds it: a number where it reads as one (`--workers 2`),
    else the text."""
    if as_text:
        return text
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def data_from_argv(argv: list[str]) -> dict[str, Any]:
    """A submit argv read back into profile data, flag by flag through the field table (the
    reverse of runai/command.py). ValueError names a flag no profile field has."""
    words = list(argv)
    while words and words[0] in _PREFIX:
        words.pop(0)
    words, tail = split_submit_argv(words)
    data: dict[str, Any] = {}
    if words and not words[0].startswith("-"):
        data["job_name"] = words.pop(0)
    by_flag = {row.flag: row for row in FIELDS if row.flag and not row.sub}
    by_sub = {s.flag: (row, s) for row in FIELDS for s in row.sub}
    command = False
    i = 0
    while i < len(words):
        flag, eq, inline = words[i].partition("=")
        i += 1
        if flag == "--command":
            command = True
            continue
        if flag in _DROPPED:
            i += 0 if eq else 1
            continue
        if flag == "--annotation" and (inline if eq else words[i]).startswith(_RECORD):
            i += 0 if eq else 1  # the record says how, not what, was submitted
            continue
        if flag in by_sub:
            row, sub = by_sub[flag]
            value = inline if eq else words[i]
            i += 0 if eq else 1
            data.setdefault(row.name, {})[sub.name] = _scalar(value, False)
            continue
        found = by_flag.get("-e" if flag == "--environment-variable" else flag)
        if found is None:
            raise ValueError(f"{flag} is not a profile field")
        row = found
        if row.emit == "switch":
            data[row.name] = True
            continue
        value = inline if eq else words[i]
        i += 0 if eq else 1
        if row.emit == "repeat" and row.kind == "mapping":
            key, _, item = value.partition("=")
            data.setdefault(row.name, {})[key] = item
        elif row.emit == "repeat" and row.name == "pvcs":
            parts = dict(p.partition("=")[::2] for p in value.split(","))
            data.setdefault("pvcs", []).append(
                {"claim": parts.get("claimname", ""), "path": parts.get("path", "")}
            )
        elif row.emit == "repeat":
            data.setdefault(row.name, []).append(value)
        else:
            data[row.name] = _scalar(value, row.text)
    if command and tail:
        data["command"] = tail
    elif tail:
        data["args"] = tail
    return data


def _current_env(record: submission_record.Record) -> dict[str, str]:
    """The env values of the record's profile as it is now, by path (`env.NAME`,
    `master_env.NAME`: where the redacted values are taken from); empty when that profile no
    longer loads."""
    try:
        profile = ProfileStore().load(record.profile)
    except UsageError:  # ProfileError among them: a profile gone or broken holds no value
        return {}
    return {
        f"{field}.{name}": value
        for field in submission_record.ENV_FIELDS
        for name, value in getattr(profile, field).items()
    }


def submitted(detail: JobDetail) -> Submitted:
    """The job's submission; RuntimeFailure (one line) says what cannot be known."""
    name = detail.job.name
    label = f"job {name}'s recorded submission"
    text = submission_record.find(detail.raw)
    if text is not None:
        try:
            record = submission_record.decode(text)
            current = _current_env(record) if record.redacted else {}
            profile, unknown = submission_record.profile_of(record, label, current)
        except (ValueError, ProfileError) as exc:
            reason = exc.message if isinstance(exc, UsageError) else str(exc)
            raise RuntimeFailure(
                f"job {name}: its submission record ({submission_record.ANNOTATION}) is "
                f"unreadable: {reason}",
                "submit it again from its profile: runai-tui submit --profile NAME --name NEW",
            ) from None
        how = f"the recorded submission (profile {record.profile}, {len(record.sets)} override(s))"
        borrowed = tuple(k for k in record.redacted if k in current)
        return Submitted(profile, record.sets, how, borrowed, unknown)
    argv = _submit_argv(detail)
    if argv is None:
        raise RuntimeFailure(
            f"job {name} was not submitted by runai-tui and describe shows no submit argv: its "
            "image, resources and env cannot be known",
            "submit it again from a profile: runai-tui submit --profile NAME --name NEW",
        )
    try:
        data = data_from_argv(argv)
    except (ValueError, IndexError) as exc:
        raise RuntimeFailure(
            f"job {name}: its submit argv cannot be read back into a profile: {exc}",
            "submit it again from a profile: runai-tui submit --profile NAME --name NEW",
        ) from None
    record = submission_record.Record(name, (), data)
    try:
        profile, _ = submission_record.profile_of(record, f"job {name}'s submit argv")
    except ProfileError as exc:
        raise RuntimeFailure(
            f"job {name}: its submit argv does not make a valid profile: {exc.message}",
            "submit it again from a profile: runai-tui submit --profile NAME --name NEW",
        ) from None
    return Submitted(profile, (), "describe's submit argv (no submission record)")


def recorded_profile(detail: JobDetail) -> tuple[Profile | None, str]:
    """The submitted profile for remedies, or None and why not (diagnose, preflight)."""
    try:
        found = submitted(detail)
    except RuntimeFailure as exc:
        return None, exc.message
    return found.profile, found.how
