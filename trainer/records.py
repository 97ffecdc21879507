"""The schema of what the trainer prints: one JSON object a line, on stdout (the pod's log) and in
<output-dir>/metrics.jsonl, each with a "kind"; and where its Flight Recorder dumps go.

One definition for both sides. The trainer writes its records with `record_line`; runai-tui
reads them through this very file (runai_tui/trainer_flags/records.py is a link to it, and the
wheel carries it), so a kind, a per-rank figure or the dump folder renamed here is renamed for
every reader. Standard library only: the headless CLI imports it, and it must never pull torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

KIND = "kind"  # the key every record holds

# The record kinds, in the order a run writes them.
COMM = "comm"  # --comm-check: the wire measured before training (trainer/comm_check.py)
RESUME = "resume"  # a resume: the checkpoint's `step`, the steps `lost` and the run's totals
TRAIN = "train"  # every --log-every steps: losses, rates, every rank's figures ("ranks")
EVAL = "eval"  # an evaluation's mAP
TARGET = "target"  # where --target-map was reached, or "not reached" at the end
STOPPED = "stopped"  # a stop request (SIGTERM): a checkpoint saved to resume from
DONE = "done"  # the run's end
KINDS = (COMM, RESUME, TRAIN, EVAL, TARGET, STOPPED, DONE)
FINISHED = (DONE, STOPPED)  # the last record of a run that ended by itself

# What each train record's "ranks" object lists, one value per global rank: seconds per step,
# seconds of data wait per step, this rank's images/s, seconds per step in the model's forward
# pass, its model TFLOP/s ("tflops", when the model's FLOPs were counted) and its share of the
# chip's bf16 peak ("mfu", when the chip's peak is known); null where a rank has none.
RANK_FIGURES = ("step_time", "data_time", "img_s", "forward_time", "tflops", "mfu")

# A resume record's fields: the steps trained again after this resume, and the run's totals.
RESUME_LOST, RESUME_COUNT, RESUME_LOST_TOTAL = "lost", "resumes", "lost_total"

# The Flight Recorder's dumps: <output-dir>/flight-recorder/rank-N (trainer/flight_recorder.py).
DUMP_DIR = "flight-recorder"
DUMP_FILE_PREFIX = "rank-"

_SEPARATORS = (", ", ": ")


def record_line(record: Mapping[str, Any]) -> str:
    """One record as the trainer prints it (no newline): `{"kind": "train", "step": 40, ...}`."""
    return json.dumps(record, separators=_SEPARATORS)


def kind_mark(kind: str) -> str:
    """The text every printed record of `kind` holds (`"kind": "comm"`): a prefilter for a
    reader that skips other lines before parsing, built the way `record_line` writes it."""
    return record_line({KIND: kind})[1:-1]


KIND_MARK = json.dumps(KIND)  # `"kind"`: every record line holds it


def parse_record_line(line: str) -> dict[str, Any] | None:
    """The record on a log line, or None for any other line. A line may carry a prefix (a
    timestamp, torchrun's `[rank0]:` tag): the object starts at the first `{"`."""
    start = line.find('{"')
    if start < 0 or KIND_MARK not in line:
        return None
    try:
        record = json.loads(line[start:].strip())
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get(KIND), str):
        return None
    return record
