"""The work a job did twice: the steps trained again after a resume (a restart in place, a
preemption, a watcher's next attempt), and the seconds first spent on them. The one count of
steps lost: `runai-tui report` (every run of a chain) and describe (knowledge/records/recovery.py, one
job's master log) both read it here.

Read from the trainer's records (trainer/records.py), in the order they were written across every
run of one job or chain of attempts: its train records (`{"kind": "train", "step": N, "time": T}`,
rank 0) and its resume records (`{"kind": "resume", "step": C, "lost": N, "resumes": R,
"lost_total": L}`: the steps its metrics.jsonl had past the checkpoint it resumed from, and the
run's totals so far). After a resume from step C, the steps C+1 up to the furthest step reached
before it are trained again: that many steps are lost (the resume record's own count), and the
seconds the earlier run spent on them (the time of its furthest record less the time of its
record at C) are work redone. Where a log lacks the resume record, the step of the first record
after the step sequence went back stands for C+1 (exact with --log-every 1). The newest resume
record's totals count the resumes whose logs are gone too: the figures are never below them.

Core: lines in, figures out; `runai-tui report`, the describe screen and `list` may share it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from runai_tui.knowledge.records.progress import TimeToTarget, parse_metric_line
from runai_tui.trainer_flags import records


@dataclass
class Redone:
    """`steps` trained again, the `seconds` first spent on them, and the `resumes`; `best_loss`
    and `best_map` seen; `last_step` reached; the newest `target` record (--target-map), a
    resumed run's last word on its target."""

    steps: int = 0
    seconds: float = 0.0
    resumes: int = 0
    best_loss: float | None = None
    best_map: float | None = None
    last_step: int | None = None
    target: TimeToTarget | None = None
    _furthest: int | None = None
    _position: int | None = None  # the step the run is at: its last train or resume record's
    _times: list[tuple[int, float]] = field(default_factory=list)  # this run's (step, time)

    def feed(self, line: str) -> None:
        record = parse_metric_line(line)
        if record is None:
            return
        kind, step = record.get(records.KIND), record.get("step")
        if kind == records.RESUME and isinstance(step, int):
            self._resume(step, record)
        elif kind == records.TARGET:
            self.target = TimeToTarget.from_record(record) or self.target
        elif kind == records.EVAL and isinstance(found := record.get("map"), (int, float)):
            value = float(found)
            self.best_map = value if self.best_map is None else max(self.best_map, value)
        elif kind == records.TRAIN and isinstance(step, int):
            self._train(step, record.get("time"), record.get("loss"))

    def _resume(self, step: int, record: Mapping[str, object]) -> None:
        """A resume from the checkpoint at `step`: its steps lost (the record's count, else the
        furthest step before it less `step`) and the seconds first spent on them; the run's
        totals the record carries are a floor for the figures."""
        lost = _count(record.get(records.RESUME_LOST))
        if lost is None:
            lost = max((self._furthest or step) - step, 0)
        self._count_resume(step, lost)
        self.steps = max(self.steps, _count(record.get(records.RESUME_LOST_TOTAL)) or 0)
        self.resumes = max(self.resumes, _count(record.get(records.RESUME_COUNT)) or 0)
        self._position = step

    def _count_resume(self, start: int, lost: int) -> None:
        self.steps += lost
        self.seconds += self._seconds_after(start)
        self.resumes += 1
        self._times = []

    def _train(self, step: int, when: object, loss: object) -> None:
        if self._position is not None and step <= self._position and self._furthest is not None:
            # Went back without a resume record: log-every 1's exact figure.
            self._count_resume(step - 1, max(self._furthest - (step - 1), 0))
        if isinstance(when, (int, float)):
            self._times.append((step, float(when)))
        if isinstance(loss, (int, float)):
            self.best_loss = float(loss) if self.best_loss is None else min(self.best_loss, loss)
        self._furthest = step if self._furthest is None else max(self._furthest, step)
        self._position = self.last_step = step

    def _seconds_after(self, start: int) -> float:
        """The time this run spent past step `start`: its last record's time less the time of
        its record at `start` (its first record when none is that early)."""
        if not self._times:
            return 0.0
        before = [t for s, t in self._times if s <= start]
        since = before[-1] if before else self._times[0][1]
        return max(0.0, self._times[-1][1] - since)

    def feed_all(self, lines: Iterable[str]) -> Redone:
        for line in lines:
            self.feed(line)
        return self


def redone(lines: Iterable[str]) -> Redone:
    """The figures of `lines`, read in order (every run of one job or chain, oldest first)."""
    return Redone().feed_all(lines)


def _count(value: object) -> int | None:
    """A non-negative JSON integer, None for anything else (a bool included)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
