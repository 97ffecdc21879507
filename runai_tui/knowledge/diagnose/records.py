"""The trainer's records in a pod's log (JSON lines, runai_tui.knowledge.records.progress): the newest
are kept as raw lines while the log is read, and decoded once at the end into what the
data-starved and stalled detectors need."""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from runai_tui.knowledge.records.progress import parse_metric_line
from runai_tui.trainer_flags import records

RECORD_MARK = records.KIND_MARK  # every trainer record line holds it (trainer/records.py)
B_RECORD = RECORD_MARK.encode()
RECORDS_KEPT = 200  # the newest record lines kept per pod: data-starved and stalled read them
RECORD_LINE_MAX = 1 << 16  # a longer "record" line is not the trainer's and is not kept
INTERVALS_KEPT = 64  # recent record intervals kept for the usual interval (their median)


@dataclass
class TrainerRecords:
    """What the trainer's newest records say, read in order."""

    data_sum: float = 0.0  # data wait, summed over train records (the first left out)
    step_sum: float = 0.0  # step time, likewise
    worst: tuple[float, int, str] | None = None  # the worst data/step ratio: (ratio, line, text)
    last_time: float | None = None  # the newest record's `time`
    last_record: tuple[int, str] | None = None  # the newest record: (line, text)
    intervals: deque[float] = field(default_factory=lambda: deque(maxlen=INTERVALS_KEPT))
    finished: bool = False  # a "done"/"stopped" record and no train record after it

    @classmethod
    def of(cls, lines: Iterable[tuple[int, bytes]], first_is_start: bool) -> TrainerRecords:
        """`lines`: (line number, raw line), oldest first. `first_is_start`: they begin at the
        log's start, so the first train record (the DataLoader's start-up) is left out of the
        step-time statistics."""
        out = cls()
        skip_first = first_is_start
        for number, raw in lines:
            line = decode(raw)
            record = parse_metric_line(line)
            if record is None:
                continue
            kind = record.get(records.KIND)
            stamp = number_or_none(record.get("time"))
            if stamp is not None:
                if out.last_time is not None and kind == records.TRAIN and stamp > out.last_time:
                    out.intervals.append(stamp - out.last_time)
                out.last_time = stamp
            out.last_record = (number, line)
            if kind in records.FINISHED:
                out.finished = True
                continue
            if kind != records.TRAIN:
                continue
            out.finished = False  # a new run (a resume) after an earlier one
            if skip_first:
                skip_first = False
                continue
            data = number_or_none(record.get("data_time"))
            step = number_or_none(record.get("step_time"))
            if data is None or step is None or step <= 0:
                continue
            out.data_sum += data
            out.step_sum += step
            ratio = data / step
            if out.worst is None or ratio > out.worst[0]:
                out.worst = (ratio, number, line)
        return out

    def usual_interval(self) -> float | None:
        """The median time between train records (None before two of them)."""
        return statistics.median(self.intervals) if self.intervals else None


def records_in(
    block: bytes, lo: int, hi: int, lines: int, keep: int = RECORDS_KEPT
) -> tuple[list[tuple[int, bytes]], bool]:
    """The newest `keep` record lines of block[lo:hi] (found from its end by rfind), newest
    first, numbered back from `lines` (its last line's number); and whether older record lines
    are left in it."""
    found: list[tuple[int, bytes]] = []
    end, number = hi, lines + 1
    newer = hi  # newlines from `newer` on are already counted
    while len(found) < keep:
        hit = block.rfind(B_RECORD, lo, end)
        if hit < 0:
            break
        start = block.rfind(b"\n", lo, hit) + 1 or lo
        stop = block.find(b"\n", hit, hi)
        number -= block.count(b"\n", stop, newer)
        newer = stop
        if stop - start <= RECORD_LINE_MAX:
            found.append((number, block[start:stop]))
        end = start
    return found, len(found) == keep and block.rfind(B_RECORD, lo, end) >= 0


def decode(raw: bytes) -> str:
    """A raw log line as text (bad UTF-8 replaced), without its line end."""
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


def number_or_none(value: object) -> float | None:
    """A finite JSON number as a float, else None (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None
