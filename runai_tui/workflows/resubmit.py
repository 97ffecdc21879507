"""The resubmit sequence, one for `runai-tui resubmit` and the TUI's `R`: a job's submission
rebuilt, its findings' remedies and the user's overrides applied, the next free name, and the
argv difference against the first submission.

It joins the plumbing (runai/submission.py builds and submits) and the knowledge (the record read
back, diagnose, remedies, compare's argv diff), as the faces do; neither of those imports the
other. `plan` is async and reads the cluster (describe, the logs, the job list); `submit` sends the
plan through the one submit sequence, which records it again.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runai_tui.knowledge.compare import Row, argv_diff, render_rows
from runai_tui.knowledge.findings import Finding
from runai_tui.knowledge.remedies import attach_for_job, overrides, set_words
from runai_tui.knowledge.submitted import Submitted, read_submission
from runai_tui.knowledge.trainer_facts import trainer_args
from runai_tui.profiles import check_job_name
from runai_tui.profiles.overrides import set_key
from runai_tui.runai import submission
from runai_tui.shapes.errors import RuntimeFailure
from runai_tui.shapes.models import Phase
from runai_tui.trainer_flags import DEFAULT_OUTPUT_DIR, value_of
from runai_tui.workflows.diagnose_job import diagnose_job

if TYPE_CHECKING:
    from runai_tui.profiles.submission_record import Record
    from runai_tui.runai.backend import Backend
    from runai_tui.runai.client import RunaiClient, SubmitResult
    from runai_tui.shapes.models import JobDetail

_SUFFIX = re.compile(r"^(.*?)-(\d{1,3})$")

# The phases in which a job's trainer may run, and so hold its output dir (the trainer's run.lock:
# one live run per output dir): the ones suspend stops, and the ones already on their way out.
LIVE = frozenset(p for p in Phase if p.can_suspend) | {
    Phase.STOPPING,
    Phase.SUSPENDING,
    Phase.TERMINATING,
    Phase.DELETING,
}
SUSPEND_WAIT = 300.0  # seconds a suspended job's pods have to go before nothing is submitted
_GONE = frozenset({Phase.STOPPED, Phase.COMPLETED, Phase.FAILED})  # pods that hold nothing


@dataclass(frozen=True)
class Step:
    """What has to happen before the new job is submitted, because the original still runs in
    the same output dir: suspend it (`suspend`), or refuse (`line` and the fix in `hint`)."""

    suspend: bool
    line: str
    hint: str = ""


@dataclass(frozen=True)
class Holder:
    """The job resubmitted, as the new one's trainer would meet it: its phase, and the output dir
    its run writes (absolute against its working dir)."""

    job: str
    phase: Phase
    output_dir: str
    working_dir: str = ""

    def dir_of(self, argv: Sequence[str]) -> str:
        """The trainer's --output-dir the argv gives, absolute as `output_dir` is."""
        where = value_of(argv, "output-dir") or DEFAULT_OUTPUT_DIR
        base = self.working_dir
        return os.path.normpath(os.path.join(base, where) if base else where)

    def step(self, new: str, argv: Sequence[str]) -> Step | None:
        """None when the new job's trainer would not meet this job's run (it has ended, or the
        new one writes elsewhere); else suspend it first, or refuse when it cannot be."""
        if self.phase not in LIVE or self.dir_of(argv) != self.output_dir:
            return None
        said = f"{self.job} is still {self.phase.value} and its run holds {self.output_dir}"
        if self.phase.can_suspend:
            return Step(True, f"{said}: it is suspended before {new} is submitted")
        return Step(
            False,
            f"{said}, and a {self.phase.value} job cannot be suspended: {new}'s trainer would "
            "refuse that output dir; nothing submitted",
            f"resubmit once runai-tui describe {self.job} says Stopped, or give {new} its own: "
            f"--set trainer.output-dir=DIR",
        )


def holder(job: str, detail: JobDetail, argv: Sequence[str]) -> Holder:
    """`job` as a resubmit meets it: its phase, and the output dir its submission's `argv` gives
    (compared with the new submission's argv: like with like, never with the pod's command,
    which a cluster may rewrite)."""
    base = read_submission(detail).working_dir
    probe = Holder(job, detail.job.phase, "", base)
    return Holder(job, detail.job.phase, probe.dir_of(argv), base)


@dataclass(frozen=True)
class Override:
    """One override of the new submission: `item` (FIELD=VALUE), who proposes it (`source`:
    "remedy" or "--set"), and for a remedy its finding's code, pod and why."""

    item: str
    source: str
    code: str = ""
    pod: str = ""
    why: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"set": self.item, "from": self.source, "code": self.code, "why": self.why}


@dataclass
class Plan:
    """What a resubmit would do: the job, the new name, where the submission came from, every
    override in order (remedies, then yours), the remedies your --set replaced (`beaten`), the
    argv of the first submission and the new one, their difference, and notes."""

    job: str
    name: str
    how: str
    overrides: list[Override]
    beaten: list[tuple[Override, str]]  # (the remedy, the --set that wins over it)
    before: list[str]
    prepared: submission.Submission
    diff: list[Row]
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # --apply-remedies found no remedy at all (none applied, none replaced by a --set): nothing is
    # submitted, and the first note says why.
    no_remedy: bool = False
    # The job resubmitted, live or not, and the output dir its run holds (see `step`).
    holder: Holder | None = None

    def step(self, prepared: submission.Submission | None = None) -> Step | None:
        """What must happen before `prepared` (the plan's own, or the TUI form's) is submitted:
        the original suspended, or nothing submitted (Holder.step)."""
        prepared = prepared or self.prepared
        if self.holder is None or trainer_args(prepared.profile) is None:  # no trainer, no lock
            return None
        return self.holder.step(prepared.name or self.name, prepared.argv)

    @property
    def remedies(self) -> list[Override]:
        return [o for o in self.overrides if o.source == "remedy"]

    def all_notes(self, prepared: submission.Submission | None = None) -> list[str]:
        """The notes, then what happens to the original before `prepared` is submitted (the
        plan's own, or the TUI form's), when anything does."""
        step = self.step(prepared)
        return self.notes + ([step.line] if step is not None else [])

    def lines(self, prepared: submission.Submission | None = None) -> list[str]:
        """The plan in words, as `resubmit` prints it and the TUI's `f` and submit form show it:
        where the submission comes from, every override and who proposes it, what a --set
        replaced, the original suspended first, and the argv difference (compare's rows)."""
        lines = [f"resubmit {self.job} as {self.name}, from {self.how}"]
        if self.overrides:
            lines.append("overrides:")
            shown = [" ".join(set_words([o.item])) for o in self.overrides]
            width = max(len(words) for words in shown)
            for words, o in zip(shown, self.overrides, strict=True):
                said = (
                    f"remedy of {o.code}" + (f" ({o.pod})" if o.pod else "") if o.code else "yours"
                )
                lines.append(f"  {words:<{width}}  {said}" + (f": {o.why}" if o.why else ""))
        else:
            lines.append("overrides: none (the same submission under a new name)")
        lines += [f"note: {note}" for note in self.all_notes(prepared)]
        lines.append(f"== command line: {len(self.diff)} difference(s) ({self.job} → {self.name})")
        return lines + render_rows(self.diff)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "name": self.name,
            "from": self.how,
            "overrides": [o.to_dict() for o in self.overrides],
            "replaced_remedies": [{**remedy.to_dict(), "by": item} for remedy, item in self.beaten],
            "diff": [{"key": r.key, "before": r.a, "after": r.b} for r in self.diff],
            "argv": self.prepared.argv,
            "notes": self.all_notes(),
        }


def root_of(job: str, record: Record | None) -> str | None:
    """The first job of `job`'s chain as its record says: its `root`, else `job` itself for a
    first submission; None for an attempt recorded before records named their root."""
    if record is not None and record.root:
        return record.root
    return job if record is None or record.parent is None else None


def renamed(
    prepared: submission.Submission, name: str, backend: Backend, root: str | None = None
) -> submission.Submission:
    """`prepared` under another name, its record too (naming `root` as the chain's first job
    when given); everything else as it was (the overrides already applied are recorded once:
    effective_sets)."""
    record = prepared.record
    return submission.prepare(
        prepared.profile, backend=backend, name=name, project=prepared.project,
        project_explicit=prepared.project_explicit, prior_sets=prepared.sets,
        sweep=record.sweep if record else None, values=record.values if record else None,
        parent=record.parent if record else None, attempt=record.attempt if record else None,
        root=root or (record.root if record else None),
    )  # fmt: skip


def base_name(job: str) -> str:
    """`sweep-3` → `sweep`: a resubmit of a resubmit counts on from the first name."""
    m = _SUFFIX.match(job)
    return m.group(1) if m and m.group(1) else job


def next_free(job: str, taken: Sequence[str]) -> str:
    """The first of NAME-2, NAME-3, … that no job has."""
    base, used = base_name(job), set(taken)
    n = 2
    while f"{base}-{n}" in used:
        n += 1
    return f"{base}-{n}"


_key = set_key  # trainer.batch_size and trainer.batch-size are one flag


def _conflicts(a: str, b: str) -> bool:
    """Two overrides touch the same field (`env` and `env.X` do; a trainer flag lives in the
    command or args, so `trainer.X` and `args` do)."""
    words = {a.partition(".")[0], b.partition(".")[0]}
    if "trainer" in words and words & {"args", "command"}:
        return True
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _check_secrets(job: str, found: Submitted, sets: Sequence[str]) -> None:
    """Refuse (RuntimeFailure) when a secret's value the record left out (`env.NAME`) is neither
    in the profile of that name now nor given by a --set."""
    given = {_key(item) for item in sets}
    lost = []
    for path in found.unknown:
        field_name, _, name = path.partition(".")
        covers = {field_name, path}
        if field_name == "env":  # a Secret reference replaces the literal value
            covers |= {"env_secrets", f"env_secrets.{name}"}
        if not given & covers:
            lost.append(path)
    if lost:
        first = lost[0]
        hint = f"give it: --set {first}=VALUE"
        if first.startswith("env."):
            secret = f"--set env_secrets.{first[4:]}=SECRET,key=KEY"
            hint += f", or better from a Kubernetes Secret: {secret}"
        raise RuntimeFailure(
            f"job {job}'s record leaves out the value of {', '.join(lost)} (a secret is never "
            f"recorded) and profile {found.profile.name} no longer sets it: nothing submitted",
            hint,
        )


async def plan(
    client: RunaiClient,
    job: str,
    *,
    apply_remedies: bool = False,
    sets: Sequence[str] = (),
    name: str | None = None,
    project: str | None = None,
    project_explicit: bool = False,
    detail: JobDetail | None = None,
    findings: list[Finding] | None = None,
) -> Plan:
    """The resubmit of `job`, recorded as the next attempt of its chain (its record names `job`
    as its parent, and its number). `detail` and `findings` (remedies attached): describe and
    the diagnosis when the caller has them. Raises RunaiError (unknown job), RuntimeFailure
    (nothing to rebuild from, a taken name), ProfileError/UsageError (a bad --set or name)."""
    if detail is None:
        detail = await client.adescribe(job)
    described = read_submission(detail)
    found = described.rebuild()
    first = described.decoded_record()
    if apply_remedies and findings is None:
        findings = (await diagnose_job(client, job, detail=detail)).findings
        attach_for_job(findings, detail, local=client.backend.is_local, found=found)
    findings = findings if apply_remedies and findings is not None else []
    chosen, beaten = _choose(findings, sets)
    new = await _new_name(client, job, name)
    _check_secrets(job, found, [o.item for o in chosen])
    prepared = submission.prepare(
        found.profile,
        [o.item for o in chosen],
        backend=client.backend,
        name=new,
        project=project,
        project_explicit=project_explicit,
        prior_sets=found.sets,
        parent=job,
        attempt=(first.attempt_number if first else 1) + 1,
        root=root_of(job, first),
    )
    # The argv the cluster kept, else the recorded submission's, rebuilt.
    before = described.argv or (
        submission.prepare(
            found.profile,
            backend=client.backend,
            name=job,
            project=project,
            project_explicit=project_explicit,
        ).argv
    )
    result = Plan(
        job, new, found.how, chosen, beaten, before, prepared, argv_diff(before, prepared.argv)
    )
    result.findings = findings
    if trainer_args(found.profile) is not None:  # its run holds the output dir (run.lock)
        result.holder = holder(job, detail, before)
    result.no_remedy = apply_remedies and not result.remedies and not beaten
    result.notes = _notes(result, found, detail)
    return result


def _choose(
    findings: list[Finding], sets: Sequence[str]
) -> tuple[list[Override], list[tuple[Override, str]]]:
    """Every override in order (the remedies, then the --set ones), and the remedies a --set on
    the same field replaces, with that --set."""
    chosen: list[Override] = []
    beaten: list[tuple[Override, str]] = []
    for item, finding in overrides(findings):
        why = finding.remedy.why if finding.remedy else ""
        proposed = Override(item, "remedy", finding.code, finding.pod, why)
        winner = next((s for s in sets if _conflicts(_key(s), _key(item))), None)
        if winner is not None:
            beaten.append((proposed, winner))
        else:
            chosen.append(proposed)
    return chosen + [Override(item, "--set") for item in sets], beaten


async def _new_name(client: RunaiClient, job: str, name: str | None) -> str:
    """The --name given (checked, and refused when a job has it), else the next free NAME-N."""
    taken = [j.name for j in await client.alist_jobs()]
    if name is None:
        return next_free(job, taken)
    check_job_name(name)
    if name in taken:
        raise RuntimeFailure(
            f"job name {name!r} is taken: nothing submitted",
            f"pick another --name, or leave it out for {next_free(job, taken)}",
        )
    return name


def _notes(planned: Plan, found: Submitted, detail: JobDetail) -> list[str]:
    """What the plan says besides its overrides: why nothing is fixed (first, when so), the
    secrets taken from the profile as it is now, the remedies a --set replaced, and a job that
    still holds its pods."""
    job, notes = planned.job, []
    if planned.no_remedy:
        codes = ", ".join(dict.fromkeys(f.code for f in planned.findings if f.severity != "info"))
        notes.append(
            f"no remedy to apply: {job}'s findings ({codes}) have none; nothing submitted"
            if codes
            else f"no remedy to apply: diagnose finds nothing wrong with {job}; nothing submitted"
        )
    if found.borrowed:
        notes.append(
            f"{', '.join(found.borrowed)}: never recorded (a secret); the value is profile "
            f"{found.profile.name}'s as it is now"
        )
    for lost, item in planned.beaten:
        notes.append(f"--set {item} wins over the remedy {lost.item} ({lost.code})")
    if (
        planned.step() is None and detail.job.phase.is_active
    ):  # a hung job keeps its pods (and GPUs) until deleted
        notes.append(
            f"{job} is still {detail.job.phase.value}: delete it once {planned.name} runs "
            f"(runai-tui delete {job})"
        )
    return notes


def check(planned: Plan, prepared: submission.Submission | None = None) -> None:
    """Refuse (RuntimeFailure, the fix in its hint) when the original still runs in the new
    job's output dir and cannot be suspended."""
    step = planned.step(prepared)
    if step is not None and not step.suspend:
        raise RuntimeFailure(step.line, step.hint)


async def asubmit(
    client: RunaiClient,
    planned: Plan,
    prepared: submission.Submission | None = None,
    *,
    wait: float = SUSPEND_WAIT,
) -> SubmitResult:
    """Submit the plan (or `prepared`, the TUI form's edit of it) through the one submit
    sequence (CLI generation check, record). When the original still runs in the same output
    dir, it is suspended first (its record and logs stay, for compare and diagnose) and the new
    job is submitted once its pods are gone; refused (nothing submitted) when it cannot be."""
    prepared = prepared or planned.prepared
    check(planned, prepared)
    if planned.step(prepared) is not None:
        await client.asuspend(planned.job)
        await _until_stopped(client, planned, prepared.name or planned.name, wait)
    return await submission.asubmit(client, prepared)


async def _until_stopped(client: RunaiClient, planned: Plan, new: str, wait: float) -> None:
    """Wait (at most `wait` seconds) until the suspended job is Stopped with no pod left running;
    RuntimeFailure, nothing submitted, when it is not by then."""
    deadline, pause = time.monotonic() + wait, 0.5
    while True:
        detail = await client.adescribe(planned.job)
        left = [p for p in detail.pods if p.phase not in _GONE]
        if detail.job.phase in _GONE and not left:
            return
        if time.monotonic() >= deadline:
            still = f"{len(left)} pod(s) still running" if left else detail.job.phase.value
            raise RuntimeFailure(
                f"{planned.job} was suspended but is {still} after {wait:g} s: {new} not submitted",
                f"resubmit once runai-tui describe {planned.job} says Stopped",
            )
        await asyncio.sleep(pause)
        pause = min(pause * 2, 5.0)
