"""Sweeps: a grid of jobs from one profile, and the sweep as one thing afterwards.

A sweep is the Cartesian product of `--grid FIELD=V1,V2,…` (any `--set` field, `trainer.NAME`
among them), one job per combination, named PREFIX-1 … PREFIX-N in the product's order (the first
grid varies slowest), each with its own trainer --output-dir (DIR/NAME). Every combination goes
through the one submit sequence (runai/submission.py), whose submission record carries the
sweep's ID and the job's own values.

The ID is `PREFIX.XXXXXX` (six hex digits, new for each sweep). Why the prefix is in it: neither
`runai list` nor the local cluster's list shows annotations, so the record is read by describing
a job; with the prefix in the ID, only the jobs named PREFIX-<n> are described, and the record
decides, so a later job that happens to be called PREFIX-7 (a resubmit of PREFIX-2, say) is not
taken for one of the sweep's. `sweep_jobs` (`asweep_jobs`) is the one lookup behind
`list/delete/suspend/resume/wait/compare --sweep` and the TUI's mark-the-sweep key.

An action over the plumbing (the client) and the record: no Textual, no torch.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runai_tui.knowledge.submitted import read_submission
from runai_tui.knowledge.trainer_facts import read_trainer_args
from runai_tui.profiles import check_job_name
from runai_tui.runai import runner
from runai_tui.shapes.errors import RunaiError, UsageError
from runai_tui.trainer_flags import FIELD, setting_key
from runai_tui.util.aio import gather_all

if TYPE_CHECKING:
    from runai_tui.profiles import Profile
    from runai_tui.runai.client import RunaiClient
    from runai_tui.shapes.models import Job

# A job name leaves room for the pods' `-worker-NNN` inside Kubernetes' 63-character pod name;
# the local cluster refuses a longer one (runai_local/jobspec.py MAX_NAME, kept equal by a
# test), so the sweep says so before the first job is submitted.
MAX_JOB_NAME = 50
_ID = re.compile(r"^([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.([0-9a-f]{6})$")
DESCRIBES_AT_ONCE = 4  # describes in flight together while finding a sweep's jobs


@dataclass(frozen=True)
class Axis:
    """One `--grid FIELD=V1,V2,…`: the field as given and its values in order."""

    field: str
    values: tuple[str, ...]


def _split_values(text: str) -> list[str]:
    """`0.01,0.02` → ['0.01', '0.02']; a comma inside [...] or {...} belongs to its value
    (`--grid args=[a,b],[c]`)."""
    values, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            values.append(text[start:i])
            start = i + 1
    values.append(text[start:])
    return [v.strip() for v in values]


def parse_grid(items: Sequence[str]) -> list[Axis]:
    """The axes of `--grid FIELD=V1,V2,…` (each repeatable flag one axis). UsageError (exit 2),
    one line naming the item, for a missing `=`, an empty value, a value given twice or a field
    given twice. The values are checked against the field when each combination is prepared."""
    if not items:
        raise UsageError(
            "sweep: give at least one --grid FIELD=V1,V2", "e.g. --grid trainer.lr=0.01,0.02"
        )
    axes: list[Axis] = []
    seen: dict[str, str] = {}
    for item in items:
        field, sep, text = item.partition("=")
        field = field.strip()
        if not sep or not field or not text.strip():
            raise UsageError(
                f"--grid {item!r}: expected FIELD=V1,V2,…", "e.g. --grid trainer.lr=0.01,0.02"
            )
        values = _split_values(text)
        if "" in values:
            raise UsageError(f"--grid {field}: an empty value in {text!r}", "drop the extra comma")
        twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
        if twice is not None:
            raise UsageError(
                f"--grid {field}: value {twice!r} is given twice", "give each value once"
            )
        key = setting_key(field)
        if key in seen:
            raise UsageError(
                f"--grid {field}: the field is already a grid ({seen[key]})",
                f"give all its values in one --grid {field}=V1,V2,…",
            )
        seen[key] = field
        axes.append(Axis(field, tuple(values)))
    return axes


def combinations(axes: Sequence[Axis]) -> list[dict[str, str]]:
    """Every combination of the axes' values (FIELD -> VALUE), the first axis varying slowest."""
    return [
        dict(zip((a.field for a in axes), chosen, strict=True))
        for chosen in itertools.product(*(a.values for a in axes))
    ]


def grid_sets(values: Mapping[str, str]) -> list[str]:
    """A combination as the `--set FIELD=VALUE` overrides that make its job."""
    return [f"{field}={value}" for field, value in values.items()]


def output_dir_sets(profile: Profile, name: str, fields: Sequence[str]) -> list[str]:
    """`trainer.output-dir=DIR/NAME` for a job of a sweep whose profile runs the trainer: the
    jobs of one profile share its --output-dir, and with `--resume auto` each would start from
    the checkpoint another wrote. None when the grid itself varies the output dir."""
    if any(setting_key(f) == f"{FIELD}.output-dir" for f in fields):
        return []
    args = read_trainer_args(profile)
    if args is None:
        return []
    base = args.output_dir.rstrip("/") or "."
    return [f"{FIELD}.output-dir={base}/{name}"]


def names_for(prefix: str, count: int) -> list[str]:
    """PREFIX-1 … PREFIX-count, checked DNS-valid with room for the pods' suffixes (UsageError,
    exit 2, naming the longest)."""
    names = [f"{prefix}-{i}" for i in range(1, count + 1)]
    longest = names[-1] if names else prefix
    check_job_name(longest)
    if len(longest) > MAX_JOB_NAME:
        raise UsageError(
            f"job name {longest!r} is {len(longest)} characters: at most {MAX_JOB_NAME} leave "
            "room for the pods' -worker-NNN inside a 63-character pod name",
            f"a shorter --name (at most {MAX_JOB_NAME - len(longest) + len(prefix)} characters)",
        )
    return names


def check_free(names: Sequence[str], taken: Sequence[str], sweep_prefix: str) -> None:
    """UsageError (exit 2) naming every name a job already has: nothing is submitted."""
    clash = [n for n in names if n in set(taken)]
    if clash:
        raise UsageError(
            f"job name{'s' if len(clash) > 1 else ''} {', '.join(clash)} "
            f"{'are' if len(clash) > 1 else 'is'} taken: nothing submitted",
            f"pick another --name than {sweep_prefix!r}, or delete "
            f"{'them' if len(clash) > 1 else 'it'} first",
        )


def new_id(prefix: str) -> str:
    """A fresh sweep ID, `PREFIX.XXXXXX`."""
    return f"{prefix}.{secrets.token_hex(3)}"


def id_prefix(sweep: str) -> str:
    """The job-name prefix of a sweep ID; UsageError (exit 2) for text that is no sweep ID."""
    m = _ID.match(sweep)
    if m is None:
        raise UsageError(
            f"--sweep {sweep!r} is not a sweep ID (PREFIX.XXXXXX, six hex digits)",
            "the ID is printed when the sweep is submitted; e.g. --sweep lr.3fa9c1",
        )
    return m.group(1)


def _index(prefix: str, name: str) -> int | None:
    head, dash, tail = name.rpartition("-")
    return int(tail) if dash and head == prefix and tail.isdigit() else None


async def asweep_jobs(
    client: RunaiClient, sweep: str, jobs: Sequence[Job] | None = None
) -> list[str]:
    """The names of the jobs of sweep ID `sweep`, in the sweep's order: those named PREFIX-<n>
    whose submission record carries the ID (each described). `jobs`: the job list when the
    caller has it (else it is listed). UsageError for a malformed ID; [] when no job is left."""
    prefix = id_prefix(sweep)
    if jobs is None:
        jobs = await client.alist_jobs()
    found = sorted(
        (index, job.name) for job in jobs if (index := _index(prefix, job.name)) is not None
    )
    gate = asyncio.Semaphore(DESCRIBES_AT_ONCE)

    async def belongs(name: str) -> bool:
        async with gate:
            try:
                detail = await client.adescribe(name)
            except RunaiError:  # deleted between the list and now
                return False
        return read_submission(detail).sweep_of()[0] == sweep

    kept = await gather_all(belongs(name) for _, name in found)
    return [name for (_, name), keep in zip(found, kept, strict=True) if keep]


async def asweep_of_job(
    client: RunaiClient, name: str, jobs: Sequence[Job] | None = None
) -> tuple[str | None, list[str]]:
    """The sweep job `name` belongs to (its record says which) and the sweep's jobs
    (asweep_jobs); (None, []) for a job of no sweep. RunaiError for an unknown job."""
    sweep, _ = read_submission(await client.adescribe(name)).sweep_of()
    return sweep, [] if sweep is None else await asweep_jobs(client, sweep, jobs)


def sweep_jobs(client: RunaiClient, sweep: str, jobs: Sequence[Job] | None = None) -> list[str]:
    """`asweep_jobs` for the headless CLI (blocking)."""
    return runner.run_sync(asweep_jobs(client, sweep, jobs))
