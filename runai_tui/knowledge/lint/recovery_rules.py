"""Lint rules on how a long job comes back from a fault: a restart policy that brings a failed
pod back, and checkpoints close enough that a restart or a preemption costs minutes, not hours.

Listed in lint/registry.py's RULE_MODULES, after checks.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from runai_tui.knowledge.lint.checks import Facts, RuleBook, RuleFinding

BOOK = RuleBook()
rule = BOOK.rule

# A job that runs longer than this without a way back loses the night to one fault; checkpoints
# further apart than this lose that much work to each. Step time: the plan's measured one where
# lint is given it (`Facts.step_time`), else ASSUMED_STEP_SECONDS, as the finding says.
LONG_RUN_MINUTES = 30
CHECKPOINT_MINUTES = 30
ASSUMED_STEP_SECONDS = 1.0


def _run_minutes(f: Facts) -> float | None:
    """The planned run in minutes (None: unbounded by --max-steps, so long)."""
    if f.trainer is None or not f.trainer.max_steps:
        return None
    return f.trainer.max_steps * _step_seconds(f)[0] / 60


def _step_seconds(f: Facts) -> tuple[float, str]:
    if f.step_time:
        return f.step_time, f"{f.step_time:.2g} s a step, measured"
    return ASSUMED_STEP_SECONDS, f"at an assumed {ASSUMED_STEP_SECONDS:g} s a step"


def _long(f: Facts) -> bool:
    minutes = _run_minutes(f)
    return f.trainer is not None and (minutes is None or minutes > LONG_RUN_MINUTES)


@rule(
    "no-way-back",
    "warning",
    "restart_policy",
    "a long training job that nothing restarts",
    fields="`restart_policy`, `backoff_limit`",
    means=(
        f"a trainer job longer than {LONG_RUN_MINUTES} minutes of steps (unbounded, or "
        "`--max-steps` at the step time) with `restart_policy` unset or `Never`, or "
        "`backoff_limit: 0`: the first pod that fails (a node lost, an eviction) ends the job, "
        "where a restart would resume it from its checkpoint"
    ),
    fix=(
        "`--set restart_policy=OnFailure --set backoff_limit=3` (runai's `--restart-policy`, "
        "`--backoff-limit`): the pod starts again and the trainer resumes (`--resume auto`)"
    ),
    example=("restart_policy=Never",),
)
def _no_way_back(f: Facts) -> Iterable[RuleFinding]:
    p = f.profile
    never = p.restart_policy in (None, "Never")
    if not _long(f) or not (never or p.backoff_limit == 0):
        return
    why = "restart_policy Never" if p.restart_policy else "no restart_policy (runai's: Never)"
    if not never:
        why = "backoff_limit 0"
    yield RuleFinding(
        f"{why}: a pod that fails ends this long job; a restart would resume it from its "
        "newest checkpoint",
        "--set restart_policy=OnFailure --set backoff_limit=3",
        field="restart_policy" if never else "backoff_limit",
    )


@rule(
    "checkpoint-interval",
    "warning",
    "args",
    f"checkpoints more than {CHECKPOINT_MINUTES} minutes of steps apart",
    fields="`args` (`--checkpoint-every`)",
    means=(
        f"a long trainer job whose `--checkpoint-every` steps take more than "
        f"{CHECKPOINT_MINUTES} minutes (at the measured step time, else "
        f"{ASSUMED_STEP_SECONDS:g} s a step), or 0 (only at the end): each restart or "
        "preemption trains that much again"
    ),
    fix="a `--checkpoint-every` that saves every few minutes of steps",
    example=("trainer.checkpoint-every=0",),
)
def _checkpoint_interval(f: Facts) -> Iterable[RuleFinding]:
    if f.trainer is None or not _long(f):
        return
    every = f.trainer.checkpoint_every
    seconds, how = _step_seconds(f)
    if every and every * seconds <= CHECKPOINT_MINUTES * 60:
        return
    steps = max(1, int(CHECKPOINT_MINUTES * 60 / seconds / 2))
    apart = (
        "only at the end"
        if not every
        else f"every {every} steps, {every * seconds / 60:.0f} min apart"
    )
    yield RuleFinding(
        f"--checkpoint-every {every}: checkpoints {apart} ({how}); a restart or a preemption "
        "trains again everything since the last one",
        f"--set trainer.checkpoint-every={steps} (about {steps * seconds / 60:.0f} minutes of steps)",
    )
