"""What a job was submitted with, read back from describe: one reader for the submission record,
the submit argv and the pod's command, used by `resubmit`, `compare`, diagnose and preflight.

The profile a job was submitted with comes, in order, from the submission record
(runai_tui/profiles/submission_record.py: the profile's name, its overrides and the resolved profile, as
the `runai-tui.io/submission` annotation); else the submit argv describe shows (the local
cluster's `spec.submitArgv`), read back into profile fields through the field table; else
nothing, and the RuntimeFailure says what cannot be known.

A submit argv is read here, word by word (`flag_pairs`): into profile fields (`data_from_argv`)
and, by compare, field by field. The local cluster's own parser (local/flags.py) stays its own:
it is the emulated CLI.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from runai_tui.profiles import FIELDS, Profile, ProfileError, ProfileStore, submission_record
from runai_tui.profiles.fields import Field
from runai_tui.shapes.errors import RuntimeFailure, UsageError
from runai_tui.shapes.models import JobDetail
from runai_tui.trainer_flags import is_flag, tokens

# `runai … submit` words before the job name, and flags that are not profile fields but that a
# resubmit may drop without changing the job (the project is chosen again; the record is new).
_PREFIX = ("runai", "runai-local", "training", "pytorch", "submit")
_DROPPED = {"-p", "--project"}
_RECORD = f"{submission_record.ANNOTATION}="
_AGAIN = "submit it again from a profile: runai-tui submit --profile NAME --name NEW"

SWITCH, VALUE, GUESS = "switch", "value", "guess"


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


def _strings(value: object) -> list[str] | None:
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    return None


@dataclass(frozen=True)
class JobSubmission:
    """What describe shows of a job's submission: its jobspec (`spec`), the submit argv the
    cluster kept (`argv`, the local cluster's `spec.submitArgv`; None on a cluster), the
    submission record's text (`record`, None when runai-tui did not submit it) and the master
    pod's command (`pod_command`, empty when describe shows none)."""

    job: str
    spec: dict[str, Any]
    argv: list[str] | None
    record: str | None
    pod_command: list[str]

    @property
    def working_dir(self) -> str:
        return str(self.spec.get("workingDir") or "")

    def shown_argv(self) -> tuple[list[str] | None, str]:
        """The submission as an argv and where it came from: the submit argv, else the master
        pod's command after `--` (a cluster's describe keeps no argv), else None."""
        if self.argv:
            return self.argv, "the submit argv the cluster recorded (describe spec.submitArgv)"
        if self.pod_command:
            return (
                ["--", *self.pod_command],
                "the master pod's command (describe; no submit argv kept)",
            )
        return None, ""

    def decoded_record(self) -> submission_record.Record | None:
        """The submission record decoded; None when the job has none or an unreadable one
        (`rebuild` says which)."""
        if self.record is None:
            return None
        try:
            return submission_record.decode(self.record)
        except ValueError:
            return None

    def sweep_of(self) -> tuple[str | None, dict[str, str]]:
        """The ID of the sweep the job belongs to and its combination of the grid (FIELD ->
        VALUE), from its submission record; (None, {}) for a job of no sweep, or a record that
        cannot be read."""
        record = self.decoded_record()
        if record is None or record.sweep is None:
            return None, {}
        return record.sweep, dict(record.values)

    def rebuild(self) -> Submitted:
        """The profile the job was submitted with; RuntimeFailure (one line) says what cannot be
        known."""
        if self.record is not None:
            return self._from_record(self.record)
        if self.argv is None:
            raise RuntimeFailure(
                f"job {self.job} was not submitted by runai-tui and describe shows no submit "
                "argv: its image, resources and env cannot be known",
                _AGAIN,
            )
        try:
            data = data_from_argv(self.argv)
        except ValueError as exc:
            raise RuntimeFailure(
                f"job {self.job}: its submit argv cannot be read back into a profile: {exc}",
                _AGAIN,
            ) from None
        record = submission_record.Record(self.job, (), data)
        try:
            profile, _ = submission_record.profile_of(record, f"job {self.job}'s submit argv")
        except ProfileError as exc:
            raise RuntimeFailure(
                f"job {self.job}: its submit argv does not make a valid profile: {exc.message}",
                _AGAIN,
            ) from None
        return Submitted(profile, (), "describe's submit argv (no submission record)")

    def _from_record(self, text: str) -> Submitted:
        label = f"job {self.job}'s recorded submission"
        try:
            record = submission_record.decode(text)
            current = _current_env(record) if record.redacted else {}
            profile, unknown = submission_record.profile_of(record, label, current)
        except (ValueError, ProfileError) as exc:
            reason = exc.message if isinstance(exc, UsageError) else str(exc)
            raise RuntimeFailure(
                f"job {self.job}: its submission record ({submission_record.ANNOTATION}) is "
                f"unreadable: {reason}",
                "submit it again from its profile: runai-tui submit --profile NAME --name NEW",
            ) from None
        how = f"the recorded submission (profile {record.profile}, {len(record.sets)} override(s))"
        borrowed = tuple(k for k in record.redacted if k in current)
        return Submitted(profile, record.sets, how, borrowed, unknown)


def read_submission(detail: JobDetail) -> JobSubmission:
    """The job's submission as describe's raw document shows it."""
    raw = detail.raw or {}
    spec = raw.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    pods = raw.get("pods")
    commands = [
        command
        for pod in (pods if isinstance(pods, list) else [])
        if isinstance(pod, dict) and (command := _strings(pod.get("command")))
    ]
    return JobSubmission(
        job=detail.job.name,
        spec=spec,
        argv=_strings(spec.get("submitArgv")),
        record=submission_record.find(raw),
        pod_command=commands[0] if commands else [],
    )


# --- reading a submit argv --------------------------------------------------------------------


def split_submit_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """A submit argv as (its name and flags after `submit`, the command after `--`)."""
    words = list(argv)
    if "submit" in words:
        words = words[words.index("submit") + 1 :]
    tail: list[str] = []
    if "--" in words:
        cut = words.index("--")
        words, tail = words[:cut], words[cut + 1 :]
    return words, tail


def flag_pairs(words: Sequence[str], kind: Callable[[str], str]) -> list[tuple[str, str | None]]:
    """Words as (flag, value) in order: `--flag value`, `--flag=value`, a switch (value None), a
    word that is no flag's value (flag ""). `kind(flag)` says whether a flag is a SWITCH, takes
    a VALUE (the next word, whatever it looks like; None at the end) or is unknown (GUESS: the
    next word when it is no flag)."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not is_flag(word):
            out.append(("", word))
            continue
        flag, eq, inline = word.partition("=")
        if eq:
            out.append((flag, inline))
            continue
        how = kind(flag)
        if i < len(words) and (how == VALUE or (how == GUESS and not is_flag(words[i]))):
            out.append((flag, words[i]))
            i += 1
        else:
            out.append((flag, None))
    return out


# The field table by runai flag: a field's own flag, and the flags of a field's parts (`--cpu`
# of `cpu.request`).
_BY_FLAG = {row.flag: row for row in FIELDS if row.flag and not row.sub}
_BY_SUB = {s.flag: (row, s) for row in FIELDS for s in row.sub}


def _field_of(flag: str) -> Field | None:
    return _BY_FLAG.get("-e" if flag == "--environment-variable" else flag)


def _runai_kind(flag: str) -> str:
    """A runai submit flag's kind, from the field table."""
    if flag == "--command":
        return SWITCH
    row = _field_of(flag)
    if row is not None:
        return SWITCH if row.emit == "switch" else VALUE
    return VALUE if flag in _BY_SUB or flag in _DROPPED else GUESS


def runai_pairs(words: Sequence[str]) -> list[tuple[str, str | None]]:
    """The flags of a submit argv (after the job name, before `--`) as (flag, value)."""
    return flag_pairs(words, _runai_kind)


def command_pairs(words: Sequence[str]) -> list[tuple[str, str | None]]:
    """The command's words after its program as (flag, value): the trainer's flags as its
    table says, other programs' flags guessed (trainer_flags.tokens)."""
    return [(token.flag, token.raw) for token in tokens(words)]


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


def data_from_argv(argv: Sequence[str]) -> dict[str, Any]:
    """A submit argv read back into profile data, flag by flag through the field table (the
    reverse of runai/command.py). ValueError names a flag no profile field has."""
    words = list(argv)
    while words and words[0] in _PREFIX:
        words.pop(0)
    words, tail = split_submit_argv(words)
    data: dict[str, Any] = {}
    if words and not is_flag(words[0]):
        data["job_name"] = words.pop(0)
    command = False
    for flag, value in runai_pairs(words):
        if flag == "--command":
            command = True
            continue
        if not flag:
            raise ValueError(f"{value!r} is no flag's value")
        row = _field_of(flag)
        if row is not None and row.emit == "switch":
            data[row.name] = True
            continue
        if value is None and (row is not None or flag in _BY_SUB or flag in _DROPPED):
            raise ValueError(f"{flag}: no value after it")
        if flag in _DROPPED or (flag == "--annotation" and str(value).startswith(_RECORD)):
            continue  # the record says how, not what, was submitted
        if flag in _BY_SUB:
            parent, sub = _BY_SUB[flag]
            data.setdefault(parent.name, {})[sub.name] = _scalar(str(value), False)
            continue
        if row is None or value is None:
            raise ValueError(f"{flag} is not a profile field")
        _put(data, row.name, row.emit, row.kind, row.text, value)
    if command and tail:
        data["command"] = tail
    elif tail:
        data["args"] = tail
    return data


def _put(data: dict[str, Any], name: str, emit: str, kind: str, text: bool, value: str) -> None:
    """One flag's value into the profile data field `name`."""
    if emit == "repeat" and kind == "mapping":
        key, _, item = value.partition("=")
        data.setdefault(name, {})[key] = item
    elif emit == "repeat" and name == "pvcs":
        parts = dict(p.partition("=")[::2] for p in value.split(","))
        data.setdefault("pvcs", []).append(
            {"claim": parts.get("claimname", ""), "path": parts.get("path", "")}
        )
    elif emit == "repeat":
        data.setdefault(name, []).append(value)
    else:
        data[name] = _scalar(value, text)


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
    """The job's submission rebuilt into a profile; RuntimeFailure (one line) says what cannot
    be known."""
    return read_submission(detail).rebuild()
