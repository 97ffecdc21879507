"""The work a job did twice: the steps trained again after a resume (a restart in place, a
preemption, a watcher's next attempt), and the seconds first spent on them.

Read from the trainer's own lines, in the order they were written across every run of one job
or chain of attempts: its train records (`{"kind": "train", "step": N, "time": T}`, rank 0), its
resume record (`{"kind": "resume", "step": C, "lost": N}`: the steps its metrics.jsonl had past
the checkpoint it resumed from) and its resume line (`trainer: resumed from PATH: step C, …`).
After a resume from step C, the steps C+1 up to the furthest step reached before it are trained
again: that many steps are lost (the resume record's own count where it has one), and the
seconds the earlier run spent on them (the time of its furthest record less the time of its
record at C) are work redone. Where neither was kept, the step of the first record after the
step sequence went back stands for C+1 (exact with --log-every 1).

Core: lines in, figures out; `runai-tui report`, the describe screen and `list` may share it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from runai_tui.knowledge.records.progress import TimeToTarget, parse_metric_line

RESUMED = re.compile(r"\btrainer: resumed from .*?: step (\d+)\b")


@dataclass
class Redone:
    """`steps` trained again, the `seconds` first spent on them, and the `resumes` that lost
    any; `best_loss` and `best_map` seen; `last_step` reached; the newest `target` record
    (--target-map), a resumed run's last word on its target."""

    steps: int = 0
    seconds: float = 0.0
    resumes: int = 0
    best_loss: float | None = None
    best_map: float | None = None
    last_step: int | None = None
    target: TimeToTarget | None = None
    _furthest: int | None = None
    _pending: int | None = None  # the step the newest resume line or record named
    _pending_lost: int | None = None  # the resume record's count of steps lost
    _times: list[tuple[int, float]] = field(default_factory=list)  # this run's (step, time)

    def feed(self, line: str) -> None:
        resumed = RESUMED.search(line)
        if resumed is not None:
            self._pending = int(resumed.group(1))
            return
        record = parse_metric_line(line)
        if record is None:
            return
        kind, step = record.get("kind"), record.get("step")
        if kind == "resume" and isinstance(step, int):
            lost = record.get("lost")
            self._pending = step
            self._pending_lost = lost if isinstance(lost, int) and lost >= 0 else None
            return
        if kind == "target":
            self.target = TimeToTarget.from_record(record) or self.target
            return
        if kind == "eval" and isinstance(record.get("map"), (int, float)):
            value = float(record["map"])  # type: ignore[arg-type]
            self.best_map = value if self.best_map is None else max(self.best_map, value)
        if kind != "train" or not isinstance(step, int):
            return
        self._train(step, record.get("time"), record.get("loss"))

    def _train(self, step: int, when: object, loss: object) -> None:
        furthest = self._furthest
        start = self._pending
        if start is None and self.last_step is not None and step <= self.last_step:
            start = step - 1  # went back without a resume line: log-every 1's exact figure
        lost = self._pending_lost
        if lost is None and start is not None and furthest is not None:
            lost = max(furthest - start, 0)
        if start is not None and lost:
            self.steps += lost
            self.seconds += self._seconds_after(start)
            self.resumes += 1
            self._times = []
        self._pending = self._pending_lost = None
        if isinstance(when, (int, float)):
            self._times.append((step, float(when)))
        if isinstance(loss, (int, float)):
            self.best_loss = float(loss) if self.best_loss is None else min(self.best_loss, loss)
        self._furthest = step if furthest is None else max(furthest, step)
        self.last_step = step

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
