"""Runs side by side, two or more: what was submitted, what the trainer recorded, how fast it went.

Pure: each side is a RunSide (gathered by workflows/run_sources.py from a job or a saved run
directory); `run_table` lines them up in one table, one column per run: the sweep's grid, the
submitted settings and run.json fields (the ones that differ first; `differences_only` hides
the rest), then each run's figures with the best of each row marked. The figures' rows are
METRICS, one entry each. A submit argv is read into `--flag value` pairs by the submission
reader (knowledge/submitted.py: the field table's flags, the trainer's flag table).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from runai_tui.knowledge.records.progress import (
    TimeToTarget,
    job_totals,
    rank_figures,
    span_text,
    tflops_text,
)
from runai_tui.knowledge.submitted import (
    command_pairs,
    is_flag,
    runai_pairs,
    split_submit_argv,
)
from runai_tui.profiles.submission_record import ANNOTATION as RECORD_ANNOTATION
from runai_tui.shapes.json_types import JSONObject
from runai_tui.trainer_flags import records as schema
from runai_tui.util.redaction import redact_argv, redact_document

MISSING = "-"


@dataclass
class RunSide:
    """What is known of one run. `lacks` says, in words, what could not be found and why."""

    label: str  # the job name or the run directory
    argv: list[str] | None = None  # the resolved submission, when recorded
    argv_source: str = ""  # where `argv` came from
    run_info: JSONObject | None = None  # the trainer's run.json
    records: list[JSONObject] = field(default_factory=list)  # the trainer's metric records
    records_source: str = ""
    lacks: list[str] = field(default_factory=list)
    values: dict[str, str] = field(default_factory=dict)  # a sweep's combination, by grid field
    sweep: str | None = None  # the sweep's ID, for a job of a sweep


@dataclass(frozen=True)
class Row:
    """One field of a submit argv before and after (resubmit's command-line difference)."""

    key: str
    a: str
    b: str

    @property
    def same(self) -> bool:
        return self.a == self.b


# --- the submission, field by field -----------------------------------------------------------


def _keyed(pairs: list[tuple[str, str | None]], prefix: str = "") -> list[tuple[str, str]]:
    """(flag, value) pairs of the submission reader as (key, value): a switch is `(set)`, a word
    no flag takes is `(word)`, and `-e K=V` is keyed `-e K` (so are --label and --annotation)."""
    out: list[tuple[str, str]] = []
    for flag, value in pairs:
        if not flag:
            out.append((f"{prefix}(word)", value or ""))
            continue
        key, text = f"{prefix}{flag}", "(set)" if value is None else value
        sub, sep, rest = text.partition("=")
        if sep and sub and " " not in sub:
            key, text = f"{key} {sub}", rest
        out.append((key, text))
    return out


def submission_fields(argv: list[str]) -> list[tuple[str, str]]:
    """A submit argv as ordered (field, value) pairs: `name`, each flag, then the command after
    `--` (`command`) and its own flags (`args --epochs`). Repeated keys get `#2`, `#3`."""
    words, tail = split_submit_argv(argv)
    fields: list[tuple[str, str]] = []
    if words and not is_flag(words[0]):
        fields.append(("name", words[0]))
        words = words[1:]
    # The submission record (runai-tui's own annotation) says how, not what, was submitted.
    record = f"--annotation {RECORD_ANNOTATION}"
    fields += [p for p in _keyed(runai_pairs(words)) if p[0] != record]
    if tail:
        fields.append(("command", tail[0]))
        fields += _keyed(command_pairs(tail[1:]), "args ")
    seen: dict[str, int] = {}
    unique = []
    for key, value in fields:
        seen[key] = seen.get(key, 0) + 1
        unique.append((key if seen[key] == 1 else f"{key} #{seen[key]}", value))
    return unique


def argv_diff(before: list[str], after: list[str]) -> list[Row]:
    """The fields that differ between two submit argvs, in first-seen order: what `resubmit`
    shows before it submits, a secret's value redacted (a changed one said so)."""
    old, new = dict(submission_fields(before)), dict(submission_fields(after))
    shown_old = dict(submission_fields(redact_argv(before)))
    shown_new = dict(submission_fields(redact_argv(after)))
    rows = []
    for k in dict.fromkeys([*old, *new]):
        if old.get(k, MISSING) == new.get(k, MISSING):
            continue
        a, b = shown_old.get(k, MISSING), shown_new.get(k, MISSING)
        rows.append(Row(k, a, f"{b} (changed)" if a == b else b))
    return rows


def render_rows(rows: list[Row], a: str = "A", b: str = "B") -> list[str]:
    """KEY / BEFORE / AFTER lines with `≠` on differences."""
    if not rows:
        return []
    width = min(max(len(r.key) for r in rows), 40)
    col = min(max(len(r.a) for r in rows), 40)
    return [f"{'≠' if not r.same else ' '} {r.key:<{width}}  {r.a:<{col}}  {r.b}" for r in rows]


# --- run.json ---------------------------------------------------------------------------------

# The parts of run.json that say what the run was: config, topology, seed, corpus, versions.
_RUN_KEYS = ("config", "world_size", "backend", "device", "data", "versions", "env", "ranks")


def _flat(value: object, prefix: str) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        out: list[tuple[str, str]] = []
        for key, inner in value.items():
            out += _flat(inner, f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [(prefix, f"{len(value)} entries")] + [
            pair for i, v in enumerate(value) for pair in _flat(v, f"{prefix}[{i}]")
        ]
    return [(prefix, _text(value))]


def _text(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    return str(value)


def run_json_fields(info: Mapping[str, object]) -> list[tuple[str, str]]:
    """run.json flattened to dotted keys (`config.lr`, `data.corpus.manifest_version`,
    `data.topology.world_size`, `data.seed`…), the identifying parts only (no start time), a
    secret's value (its `env`) redacted."""
    shown = redact_document(dict(info))
    out: list[tuple[str, str]] = []
    for key in _RUN_KEYS:
        if isinstance(shown, dict) and key in shown:
            out += _flat(shown[key], key)
    return out


# --- the records ------------------------------------------------------------------------------


def _number(record: Mapping[str, object], key: str) -> float | None:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def world_size_of(side: RunSide) -> int | None:
    info = side.run_info or {}
    size = info.get("world_size")
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


def records_lack(side: RunSide) -> str | None:
    """What a side without trainer records lacks, in words (None when it has some): a job that
    failed before its first step is the one a resubmit replaces, so this is said, not fatal.
    The wire check's record (before the first step) is not a step."""
    if stepped(side.records):
        return None
    return f"trainer metric records ({side.records_source or 'no source'}): it never logged a step"


def stepped(records: Sequence[Mapping[str, object]]) -> bool:
    """Whether the trainer got as far as its steps: a record besides the wire check's `comm`,
    which a job of several pods logs before its first step (and a hung one logs too)."""
    return any(r.get(schema.KIND) != schema.COMM for r in records)


LOWER = "lower"
HIGHER = "higher"
NEVER_LOGGED = "never logged a step"


@dataclass(frozen=True)
class RunFigures:
    """What the table's figure rows say of one run, from its trainer records."""

    final_loss: float | None
    best_loss: float | None
    img_s: float | None  # the median over train records, all ranks
    img_s_per_rank: float | None  # img_s over the world size (run.json's), when known
    step_time: float | None  # median seconds per step
    data_time: float | None  # median seconds per step waiting for data
    data_share: float | None  # data_time over step_time
    tflops: float | None  # the median of the job's model TFLOP/s (every rank's summed)
    best_map: float | None
    best_map_step: int | None
    time_to_target: float | None  # --target-map: wall seconds to it; inf: not reached
    last_step: int | None
    ended: str


def _job_tflops(record: Mapping[str, object]) -> float | None:
    ranks = rank_figures(record)
    return job_totals(ranks).tflops if ranks else _number(record, "tflops")


def _medians(train: list[Mapping[str, object]], key: str) -> float | None:
    return _median([v for r in train if (v := _number(r, key)) is not None])


def run_figures(records: Sequence[Mapping[str, object]], world_size: int | None) -> RunFigures:
    train = [r for r in records if r.get(schema.KIND) == schema.TRAIN]
    evals = [
        r for r in records if r.get(schema.KIND) == schema.EVAL and _number(r, "map") is not None
    ]
    best = max(evals, key=lambda r: _number(r, "map") or 0.0) if evals else None
    losses = [v for r in train if (v := _number(r, "loss")) is not None]
    finite = [v for v in losses if math.isfinite(v)]  # min() is undefined with a nan among them
    steps = [int(s) for r in records if (s := _number(r, "step")) is not None]
    ended = next(
        (str(r[schema.KIND]) for r in reversed(records) if r.get(schema.KIND) in schema.FINISHED),
        "",
    )
    img_s, data_time = _medians(train, "images_per_sec"), _medians(train, "data_time")
    step_time = _medians(train, "step_time")
    return RunFigures(
        final_loss=losses[-1] if losses else None,
        best_loss=min(finite) if finite else (losses[-1] if losses else None),
        img_s=img_s,
        img_s_per_rank=img_s / world_size if img_s is not None and world_size else None,
        step_time=step_time,
        data_time=data_time,
        data_share=data_time / step_time if data_time is not None and step_time else None,
        tflops=_median([v for r in train if (v := _job_tflops(r)) is not None]),
        best_map=_number(best, "map") if best else None,
        best_map_step=int(_number(best, "step") or 0) if best else None,
        time_to_target=_time_to_target(records),
        last_step=max(steps) if steps else None,
        ended=(ended or "running or cut short") if stepped(records) else NEVER_LOGGED,
    )


def _time_to_target(records: Sequence[Mapping[str, object]]) -> float | None:
    """The last target record's wall seconds; inf when it says not reached (never the best)."""
    record = next((r for r in reversed(records) if r.get(schema.KIND) == schema.TARGET), None)
    target = TimeToTarget.from_record(record) if record else None
    if target is None:
        return None
    return target.wall_time if target.reached else math.inf


def _span(value: float | None) -> str:
    return "not reached" if value == math.inf else MISSING if value is None else span_text(value)


def _fmt(value: float | None, spec: str, unit: str = "") -> str:
    return MISSING if value is None else f"{value:{spec}}{unit}"


def _fixed(spec: str, unit: str = "") -> Callable[[float | None], str]:
    return lambda value: _fmt(value, spec, unit)


def _percent(value: float | None) -> str:
    return _fmt(None if value is None else value * 100, ".1f", " %")


def _whole(value: float | None) -> str:
    return MISSING if value is None else str(int(value))


@dataclass(frozen=True)
class Metric:
    """One figure row of the table: its name, how a run's figures give it, how it is shown, and
    which way is better (None: no best is marked). `always`: shown even when no run has it."""

    key: str
    value: Callable[[RunFigures], float | None]
    text: Callable[[float | None], str]
    better: str | None
    always: bool = False


# The figure rows, in order: a new figure is a field of RunFigures and one entry here.
METRICS: tuple[Metric, ...] = (
    Metric("final loss", lambda f: f.final_loss, _fixed(".4f"), LOWER, always=True),
    Metric("best loss", lambda f: f.best_loss, _fixed(".4f"), LOWER, always=True),
    Metric("images/s (median, all ranks)", lambda f: f.img_s, _fixed(".1f"), HIGHER, always=True),
    Metric("images/s per rank (median)", lambda f: f.img_s_per_rank, _fixed(".1f"), HIGHER),
    Metric("step time (median)", lambda f: f.step_time, _fixed(".3f", " s"), None),
    Metric("data wait (median)", lambda f: f.data_time, _fixed(".3f", " s/step"), None),
    Metric("data wait share", lambda f: f.data_share, _percent, LOWER),
    Metric("TFLOP/s (median, model)", lambda f: f.tflops, tflops_text, HIGHER),
    Metric("best mAP", lambda f: f.best_map, _fixed(".4f"), HIGHER),
    Metric("best mAP at step", lambda f: f.best_map_step, _whole, None),
    Metric("time to target", lambda f: f.time_to_target, _span, LOWER),
    Metric("last step", lambda f: f.last_step, _whole, None, always=True),
)


# --- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableRow:
    """One row of the table: a cell per run, in the runs' order. `better` says which way the
    best value lies (figure rows; None where no value is better); `best` the columns that hold
    it (every column of a tie; none where fewer than two runs have the figure)."""

    section: str  # "grid", "settings", "run.json" or "metrics"
    key: str
    cells: tuple[str, ...]
    better: str | None = None
    best: tuple[int, ...] = ()
    numbers: tuple[float | None, ...] = ()  # a figure row's figures unrounded (for --json)

    @property
    def same(self) -> bool:
        return len(set(self.cells)) <= 1


# Sections whose rows that are the same on every run `differences_only` hides.
HIDEABLE = ("settings", "run.json")


@dataclass
class RunTable:
    """Runs side by side: the grid's values (a sweep's combinations) first, then the submitted
    settings and run.json fields (those that differ first), then each run's figures with the
    best of each row marked."""

    sides: list[RunSide]
    rows: list[TableRow]
    sweep: str | None = None

    @property
    def labels(self) -> list[str]:
        return [side.label for side in self.sides]

    def shown(self, differences_only: bool = True) -> list[TableRow]:
        """The rows to show: with differences_only, a setting or run.json field that is the
        same on every run is left out."""
        if not differences_only:
            return list(self.rows)
        return [row for row in self.rows if row.section not in HIDEABLE or not row.same]

    def counts(self, section: str) -> tuple[int, int]:
        """(rows that differ, rows) of a section."""
        rows = [row for row in self.rows if row.section == section]
        return sum(not row.same for row in rows), len(rows)

    def to_dict(self, differences_only: bool = True) -> dict[str, object]:
        """The JSON of `runai-tui compare --json` (docs/cli.md has its shape)."""
        labels = self.labels
        return {
            "sweep": self.sweep,
            "differences_only": differences_only,
            "jobs": [
                {
                    "label": side.label,
                    "values": dict(side.values),
                    "argv_source": side.argv_source,
                    "records_source": side.records_source,
                    "lacks": list(side.lacks),
                }
                for side in self.sides
            ],
            "rows": [
                {
                    "section": row.section,
                    "key": row.key,
                    "cells": dict(zip(labels, row.cells, strict=True)),
                    "same": row.same,
                    "better": row.better,
                    "best": [labels[i] for i in row.best],
                }
                | ({"numbers": dict(zip(labels, row.numbers, strict=True))} if row.numbers else {})
                for row in self.shown(differences_only)
            ],
        }


def _best(values: list[float | None], better: str | None) -> tuple[int, ...]:
    """The columns of the best value; a nan or inf (a diverged run) is compared against but is
    never the best."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if better is None or not finite or sum(v is not None for v in values) < 2:
        return ()  # one figure alone is no "best"
    top = min(finite) if better == LOWER else max(finite)
    return tuple(i for i, v in enumerate(values) if v == top)


def metric_rows(figures: list[RunFigures]) -> list[TableRow]:
    """METRICS' rows for these runs (a row no run has is left out unless `always`), then how
    each run ended."""
    rows = []
    for metric in METRICS:
        values = [metric.value(f) for f in figures]
        if not metric.always and all(v is None for v in values):
            continue
        cells = tuple(metric.text(v) for v in values)
        # A diverged run's nan or inf is shown as such, never as a JSON number (JSON has none).
        finite = tuple(v if v is not None and math.isfinite(v) else None for v in values)
        best = _best(values, metric.better)
        rows.append(TableRow("metrics", metric.key, cells, metric.better, best, finite))
    return [*rows, TableRow("metrics", "ended", tuple(f.ended for f in figures))]


def _fields(
    section: str, per_side: list[list[tuple[str, str]]], grid: set[tuple[str, ...]]
) -> list[TableRow]:
    """Every key of any side, those whose values differ first, each group in first-seen order;
    a row whose cells repeat a grid row's (the grid's `trainer.lr` as `args --lr`) is left
    out."""
    maps = [dict(pairs) for pairs in per_side]
    keys = list(dict.fromkeys(k for pairs in per_side for k, _ in pairs))
    rows = [TableRow(section, key, tuple(m.get(key, MISSING) for m in maps)) for key in keys]
    rows = [row for row in rows if row.cells not in grid]
    return [row for row in rows if not row.same] + [row for row in rows if row.same]


def run_table(sides: list[RunSide], sweep: str | None = None) -> RunTable:
    """Line up two or more runs, one column each. A run that never logged a step keeps its
    column: its figures are `-` and its `ended` row says so; each side's `lacks` says what was
    not found. `sweep`: the sweep compared, else the one every run belongs to, if one."""
    if sweep is None and len({side.sweep for side in sides}) == 1:
        sweep = sides[0].sweep
    for side in sides:
        lack = records_lack(side)
        if lack is not None and lack not in side.lacks:
            side.lacks.append(lack)
    grid = list(dict.fromkeys(k for side in sides for k in side.values))
    rows = [
        TableRow("grid", key, tuple(side.values.get(key, MISSING) for side in sides))
        for key in grid
    ]
    grid_cells = {row.cells for row in rows if not row.same}
    submissions = [
        [p for p in submission_fields(redact_argv(side.argv)) if p[0] != "name"]
        if side.argv
        else []
        for side in sides
    ]
    rows += _fields("settings", submissions, grid_cells)
    infos = [run_json_fields(side.run_info) if side.run_info else [] for side in sides]
    rows += _fields("run.json", infos, grid_cells)
    rows += metric_rows([run_figures(side.records, world_size_of(side)) for side in sides])
    return RunTable(sides, rows, sweep)


SECTION_TITLES = {
    "grid": "the sweep's grid",
    "settings": "submitted settings",
    "run.json": "run.json fields",
    "metrics": "figures (* best; BEST: which way)",
}
BEST_MARK = "*"
_CELL_WIDTH = 28  # a longer value or name is cut with `…` (--json has it whole)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def table_cells(row: TableRow) -> list[str]:
    """The row's cells as shown: the best ones carry BEST_MARK."""
    return [f"{c} {BEST_MARK}" if i in row.best else c for i, c in enumerate(row.cells)]


def section_title(table: RunTable, section: str) -> str:
    """A section's title line (without `== `): the settings and run.json fields say how many of
    them differ."""
    if section not in HIDEABLE:
        return SECTION_TITLES[section]
    differ, total = table.counts(section)
    return f"{SECTION_TITLES[section]}: {differ} of {total} differ"


def sectioned(table: RunTable, differences_only: bool = True) -> list[tuple[str, list[TableRow]]]:
    """The shown rows by section, in the table's order; a section with rows, none shown (all
    the same), still has its title."""
    shown = table.shown(differences_only)
    sections = list(dict.fromkeys(row.section for row in table.rows))
    return [(s, [row for row in shown if row.section == s]) for s in sections]


def render_table(table: RunTable, differences_only: bool = True) -> list[str]:
    """Plain text lines: a header of the runs, what each lacks, then each section's rows."""
    head = f"{len(table.sides)} runs" + (f" of sweep {table.sweep}" if table.sweep else "")
    lines = [f"compare {head}: {', '.join(table.labels)}"]
    lines += [f"{side.label} lacks {what}" for side in table.sides for what in side.lacks]
    shown = table.shown(differences_only)
    if not shown:
        return lines
    cells_of = {id(row): [_cut(c, _CELL_WIDTH) for c in table_cells(row)] for row in shown}
    labels = [_cut(label, _CELL_WIDTH) for label in table.labels]
    key_width = min(max(len(row.key) for row in shown), 40)
    widths = [
        max([len(labels[i])] + [len(cells[i]) for cells in cells_of.values()])
        for i in range(len(labels))
    ]

    def line(key: str, cells: list[str], last: str) -> str:
        body = "  ".join(f"{c:<{w}}" for c, w in zip(cells, widths, strict=True))
        return f"{_cut(key, 40):<{key_width}}  {body}  {last}".rstrip()

    lines += ["", line("", labels, "BEST")]
    for section, rows in sectioned(table, differences_only):
        lines.append(f"== {section_title(table, section)}")
        lines += [line(row.key, cells_of[id(row)], row.better or "") for row in rows]
    return lines


@dataclass(frozen=True)
class RunCurves:
    """What the compare screen plots of one run, against step: loss, and images/s (all ranks)."""

    label: str
    loss: list[tuple[int, float]]
    img_s: list[tuple[int, float]]


def run_curves(side: RunSide) -> RunCurves:
    loss: list[tuple[int, float]] = []
    img_s: list[tuple[int, float]] = []
    for record in side.records:
        step = _number(record, "step")
        if record.get(schema.KIND) != schema.TRAIN or step is None:
            continue
        if (value := _number(record, "loss")) is not None:
            loss.append((int(step), value))
        if (value := _number(record, "images_per_sec")) is not None:
            img_s.append((int(step), value))
    return RunCurves(side.label, loss, img_s)
