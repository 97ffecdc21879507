"""Stragglers: a rank that is slower than the others, or that mostly waits for its data.

Pure functions over the trainer's train records (their "ranks" object: every rank's step time,
data wait and images/s; runai_tui.knowledge.records.progress). The diagnosis turns each result into a
`straggler` finding.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from runai_tui.knowledge.records.progress import RankFigures, parse_metric_line, rank_figures
from runai_tui.trainer_flags import records as schema

SLOW_FACTOR = 1.5  # a rank's median step (or forward) time this many times the others' median
DATA_SHARE = 0.5  # a rank whose median data wait is at least this share of its step time
NEWEST = 20  # the newest train records (with every rank's figures) that are judged
# A slower forward pass counts only when what it adds is at least this share of the rank's step:
# a rank that waits for its data computes while the others sit in a collective and so shows a
# faster forward than theirs; tens of milliseconds in a step of seconds slow no job.
FORWARD_STEP_SHARE = 0.05

SLOW_FIX = (
    "the rank computes slower than the others: check its node for CPU throttling (the pod's "
    "CPU limit, `runai-tui top JOB`), a slower or shared GPU or host, and its NIC (the NCCL "
    "transport and link speed of that node: `runai-tui diagnose JOB`, `runai-tui preflight JOB`)"
)
DATA_FIX = (
    "the rank waits for its data: raise the trainer's --workers (and --prefetch-factor), give "
    "the pod more CPU, and check the read speed of the PVC from that rank's node (a slow or "
    "remote volume; packed shards help)"
)

FIX = f"when it waits for data, {DATA_FIX}; else {SLOW_FIX}"  # the code table's general fix


@dataclass(frozen=True)
class Straggler:
    rank: int
    line: int  # the newest judged record's line in the log
    step_time: float  # this rank's median seconds per step
    others_step_time: float  # the median of the other ranks' medians
    data_time: float  # this rank's median data wait per step
    records: int  # how many records were judged
    slow: bool  # the step-time or the forward-time rule fired
    starved: bool  # the data-wait rule fired
    forward_time: float | None = None  # this rank's median forward seconds per step
    others_forward_time: float | None = None  # the median of the other ranks' medians

    @property
    def evidence(self) -> str:
        ratio = self.step_time / self.others_step_time if self.others_step_time > 0 else 0.0
        share = self.data_time / self.step_time if self.step_time > 0 else 0.0
        forward = ""
        if self.forward_time is not None and self.others_forward_time:
            forward = (
                f"; forward {self.forward_time:.3f} s against {self.others_forward_time:.3f} s "
                f"({self.forward_time / self.others_forward_time:.2f}x)"
            )
        return (
            f"rank {self.rank}: median step {self.step_time:.3f} s against {self.others_step_time:.3f} s "
            f"for the other ranks ({ratio:.2f}x); data wait {self.data_time:.3f} s a step "
            f"({share:.0%} of its step){forward}, over the newest {self.records} records"
        )

    @property
    def fix(self) -> str:
        if self.starved and self.slow:
            return f"{DATA_FIX}; if that is not it, {SLOW_FIX}"
        return DATA_FIX if self.starved else SLOW_FIX

    def to_dict(self) -> dict[str, object]:
        return {
            "rank": self.rank,
            "line": self.line,
            "step_time": self.step_time,
            "others_step_time": self.others_step_time,
            "data_time": self.data_time,
            "records": self.records,
            "slow": self.slow,
            "starved": self.starved,
            "forward_time": self.forward_time,
            "others_forward_time": self.others_forward_time,
        }


def find_stragglers(records: Iterable[tuple[int, Mapping[str, object]]]) -> list[Straggler]:
    """The stragglers among the ranks of the newest NEWEST train records `(line, record)`
    (oldest first) that carry every rank's figures. The newest world size decides: records of
    another world size (a resume on fewer pods) are left out.

    Slow: a median step time, or a median forward time, at least SLOW_FACTOR times the median
    of the other ranks' medians (under synchronous DDP the step times are equal and the forward
    time, which holds no wait for other ranks, is what shows a slower rank, when what it adds is
    at least FORWARD_STEP_SHARE of the rank's step). Starved: a median
    data wait of at least DATA_SHARE of its own median step time."""
    judged: list[tuple[int, list[RankFigures]]] = []
    for line, record in records:
        if record.get(schema.KIND) != schema.TRAIN:
            continue
        figures = rank_figures(record)
        if len(figures) < 2 or any(
            f.step_time is None or f.data_time is None or f.step_time <= 0 for f in figures
        ):
            continue
        judged.append((line, figures))
    if not judged:
        return []
    world = len(judged[-1][1])
    judged = [j for j in judged if len(j[1]) == world][-NEWEST:]
    steps = [_median([rows[r].step_time for _, rows in judged]) for r in range(world)]
    waits = [_median([rows[r].data_time for _, rows in judged]) for r in range(world)]
    forwards = [_median([rows[r].forward_time for _, rows in judged]) for r in range(world)]
    found = []
    for rank in range(world):
        step, wait, forward = steps[rank], waits[rank], forwards[rank]
        assert step is not None and wait is not None  # every judged record has them
        others = _median(steps[:rank] + steps[rank + 1 :]) or 0.0
        others_forward = _median(forwards[:rank] + forwards[rank + 1 :])
        slow = others > 0 and step >= SLOW_FACTOR * others
        if forward is not None and others_forward:
            slow = slow or (
                forward >= SLOW_FACTOR * others_forward
                and forward - others_forward >= FORWARD_STEP_SHARE * step
            )
        starved = wait >= DATA_SHARE * step
        if slow or starved:
            found.append(
                Straggler(
                    rank,
                    judged[-1][0],
                    step,
                    others,
                    wait,
                    len(judged),
                    slow,
                    starved,
                    forward,
                    others_forward,
                )  # fmt: skip
            )
    return found


def _median(values: list[float | None]) -> float | None:
    """The median of the known values (None when none is known)."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def stragglers_in_lines(lines: Iterable[tuple[int, str | bytes]]) -> list[Straggler]:
    """`find_stragglers` over log lines `(line number, text)`, oldest first; other lines are
    skipped."""
    records = []
    for number, raw in lines:
        text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        record = parse_metric_line(text)
        if record is not None:
            records.append((number, record))
    return find_stragglers(records)
