"""Two runs side by side: what was submitted, what the trainer recorded, how fast it went.

Pure: each side is a RunSide (gathered by knowledge/run_sources.py from a job or a saved run
directory); this module lines them up field by field, differences first, and sums up the
trainer's records. A submit argv is read into `--flag value` pairs by the submission reader
(knowledge/submitted.py: the field table's flags, the trainer's flag table).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from runai_tui.json_types import JSONObject
from runai_tui.knowledge.progress import job_totals, rank_figures, tflops_text
from runai_tui.knowledge.submitted import (
    command_pairs,
    is_flag,
    runai_pairs,
    split_submit_argv,
)
from runai_tui.submission_record import ANNOTATION as RECORD_ANNOTATION

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
    key: str
    a: str
    b: str

    @property
    def same(self) -> bool:
        return self.a == self.b


@dataclass
class Comparison:
    a: RunSide
    b: RunSide
    submission: list[Row]
    run_json: list[Row]
    metrics: list[Row]

    def to_dict(self) -> dict[str, object]:
        def rows(items: list[Row]) -> list[dict[str, object]]:
            return [{"key": r.key, "a": r.a, "b": r.b, "same": r.same} for r in items]

        return {
            "a": {"label": self.a.label, "argv_source": self.a.argv_source, "lacks": self.a.lacks},
            "b": {"label": self.b.label, "argv_source": self.b.argv_source, "lacks": self.b.lacks},
            "submission": rows(self.submission),
            "run_json": rows(self.run_json),
            "metrics": rows(self.metrics),
        }


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


def _rows(a: list[tuple[str, str]], b: list[tuple[str, str]]) -> list[Row]:
    """Every key of either side, differences first, each group in first-seen order."""
    da, db = dict(a), dict(b)
    keys = list(dict.fromkeys([k for k, _ in a] + [k for k, _ in b]))
    rows = [Row(k, da.get(k, MISSING), db.get(k, MISSING)) for k in keys]
    return [r for r in rows if not r.same] + [r for r in rows if r.same]


def argv_diff(before: list[str], after: list[str]) -> list[Row]:
    """The submission rows that differ between two submit argvs (compare's field-by-field view):
    what `resubmit` shows before it submits."""
    return [r for r in _rows(submission_fields(before), submission_fields(after)) if not r.same]


def render_rows(rows: list[Row], a: str = "A", b: str = "B") -> list[str]:
    """KEY / A / B lines with `≠` on differences (the tables of `render`)."""
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
    `data.topology.world_size`, `data.seed`…), the identifying parts only (no start time)."""
    out: list[tuple[str, str]] = []
    for key in _RUN_KEYS:
        if key in info:
            out += _flat(info[key], key)
    return out


# --- the records ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricSummary:
    records: int
    last_step: int | None
    world_size: int | None
    img_s_per_rank: float | None  # the median over train records, divided by the world size
    img_s_total: float | None
    data_time: float | None  # median seconds per step waiting for data
    data_share: float | None  # median data_time over median step_time
    step_time: float | None
    final_loss: float | None
    best_map: float | None
    best_map_step: int | None
    finished: str


def _number(record: Mapping[str, object], key: str) -> float | None:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize(records: Sequence[Mapping[str, object]], world_size: int | None) -> MetricSummary:
    train = [r for r in records if r.get("kind") == "train"]
    evals = [r for r in records if r.get("kind") == "eval" and _number(r, "map") is not None]
    img_s = _median([v for r in train if (v := _number(r, "images_per_sec")) is not None])
    data_time = _median([v for r in train if (v := _number(r, "data_time")) is not None])
    step_time = _median([v for r in train if (v := _number(r, "step_time")) is not None])
    best = max(evals, key=lambda r: _number(r, "map") or 0.0) if evals else None
    steps = [int(s) for r in records if (s := _number(r, "step")) is not None]
    finished = next(
        (str(r["kind"]) for r in reversed(records) if r.get("kind") in ("done", "stopped")), ""
    )
    losses = [v for r in train if (v := _number(r, "loss")) is not None]
    return MetricSummary(
        records=len(records),
        last_step=max(steps) if steps else None,
        world_size=world_size,
        img_s_per_rank=img_s / world_size if img_s is not None and world_size else None,
        img_s_total=img_s,
        data_time=data_time,
        data_share=data_time / step_time if data_time is not None and step_time else None,
        step_time=step_time,
        final_loss=losses[-1] if losses else None,
        best_map=_number(best, "map") if best else None,
        best_map_step=int(_number(best, "step") or 0) if best else None,
        finished=finished or ("running or cut short" if records else MISSING),
    )


def world_size_of(side: RunSide) -> int | None:
    info = side.run_info or {}
    size = info.get("world_size")
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


def _fmt(value: float | None, spec: str, unit: str = "") -> str:
    return MISSING if value is None else f"{value:{spec}}{unit}"


def metric_fields(summary: MetricSummary) -> list[tuple[str, str]]:
    per_rank = _fmt(summary.img_s_per_rank, ".1f")
    if summary.img_s_per_rank is None and summary.img_s_total is not None:
        per_rank = "- (world size unknown: no run.json)"
    best = _fmt(summary.best_map, ".4f")
    if summary.best_map is not None:
        best += f" (step {summary.best_map_step})"
    return [
        ("median img/s per rank", per_rank),
        ("median img/s (all ranks)", _fmt(summary.img_s_total, ".1f")),
        ("world size", MISSING if summary.world_size is None else str(summary.world_size)),
        ("median step time", _fmt(summary.step_time, ".3f", " s")),
        ("median data wait", _fmt(summary.data_time, ".3f", " s/step")),
        (
            "data wait share",
            _fmt(None if summary.data_share is None else summary.data_share * 100, ".1f", " %"),
        ),
        ("final loss", _fmt(summary.final_loss, ".4f")),
        ("best mAP", best),
        ("last step", MISSING if summary.last_step is None else str(summary.last_step)),
        ("records", str(summary.records)),
        ("ended", summary.finished),
    ]


# --- the comparison ---------------------------------------------------------------------------


def records_lack(side: RunSide) -> str | None:
    """What a side without trainer records lacks, in words (None when it has some): a job that
    failed before its first step is the one a resubmit replaces, so this is said, not fatal."""
    if side.records:
        return None
    return f"trainer metric records ({side.records_source or 'no source'}): it never logged a step"


def compare(a: RunSide, b: RunSide) -> Comparison:
    """Line up two runs. Sides may lack their argv, run.json or trainer records (each says so
    in `lacks`); what both have is still lined up."""
    for side in (a, b):
        lack = records_lack(side)
        if lack is not None and lack not in side.lacks:
            side.lacks.append(lack)
    submission = _rows(
        submission_fields(a.argv) if a.argv else [], submission_fields(b.argv) if b.argv else []
    )
    run_json = _rows(
        run_json_fields(a.run_info) if a.run_info else [],
        run_json_fields(b.run_info) if b.run_info else [],
    )
    metrics = [
        Row(key, va, vb)
        for (key, va), (_, vb) in zip(
            metric_fields(summarize(a.records, world_size_of(a))),
            metric_fields(summarize(b.records, world_size_of(b))),
            strict=True,
        )
    ]
    return Comparison(a, b, submission, run_json, metrics)


def render(result: Comparison, same_rows: bool = True) -> list[str]:
    """Plain text lines: three sections, each a KEY / A / B table with `≠` on differences."""
    a, b = result.a, result.b
    lines = [f"A: {a.label}", f"B: {b.label}"]
    for side, tag in ((a, "A"), (b, "B")):
        lines += [f"{tag} lacks {what}" for what in side.lacks]
    for title, rows in (
        ("metrics", result.metrics),
        (
            f"submission (A: {a.argv_source or 'none'}; B: {b.argv_source or 'none'})",
            result.submission,
        ),
        ("run.json", result.run_json),
    ):
        lines.append("")
        differing = sum(not r.same for r in rows)
        lines.append(f"== {title}: {differing} of {len(rows)} differ")
        lines += render_rows(rows if same_rows else [r for r in rows if not r.same])
    return lines


# --- many runs, one column each -----------------------------------------------------------------

LOWER = "lower"
HIGHER = "higher"
NEVER_LOGGED = "never logged a step"


@dataclass(frozen=True)
class TableRow:
    """One row of the N-way table: a cell per run, in the runs' order. `better` says which way
    the best value lies (metric rows; None where no value is better); `best` the columns that
    hold it (every column of a tie; none where fewer than two runs have the figure)."""

    section: str  # "grid", "settings", "run.json" or "metrics"
    key: str
    cells: tuple[str, ...]
    better: str | None = None
    best: tuple[int, ...] = ()
    numbers: tuple[float | None, ...] = ()  # a metric row's figures unrounded (for --json)


@dataclass
class RunTable:
    """Many runs side by side: the grid's values (a sweep's combinations) first, then the
    settings that differ, then each run's figures with the best of each row marked."""

    sides: list[RunSide]
    rows: list[TableRow]
    sweep: str | None = None

    @property
    def labels(self) -> list[str]:
        return [side.label for side in self.sides]

    def to_dict(self) -> dict[str, object]:
        labels = self.labels
        return {
            "sweep": self.sweep,
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
                    "better": row.better,
                    "best": [labels[i] for i in row.best],
                }
                | ({"numbers": dict(zip(labels, row.numbers, strict=True))} if row.numbers else {})
                for row in self.rows
            ],
        }


@dataclass(frozen=True)
class RunFigures:
    """What the table's metric rows say of one run, from its trainer records."""

    final_loss: float | None
    best_loss: float | None
    img_s: float | None  # the median over train records, all ranks
    tflops: float | None  # the median of the job's model TFLOP/s (every rank's summed)
    best_map: float | None
    last_step: int | None
    ended: str


def _job_tflops(record: Mapping[str, object]) -> float | None:
    ranks = rank_figures(record)
    return job_totals(ranks).tflops if ranks else _number(record, "tflops")


def run_figures(records: Sequence[Mapping[str, object]]) -> RunFigures:
    summary = summarize(records, None)
    train = [r for r in records if r.get("kind") == "train"]
    losses = [v for r in train if (v := _number(r, "loss")) is not None]
    finite = [v for v in losses if math.isfinite(v)]  # min() is undefined with a nan among them
    tflops = _median([v for r in train if (v := _job_tflops(r)) is not None])
    return RunFigures(
        final_loss=summary.final_loss,
        best_loss=min(finite) if finite else (losses[-1] if losses else None),
        img_s=summary.img_s_total,
        tflops=tflops,
        best_map=summary.best_map,
        last_step=summary.last_step,
        ended=summary.finished if records else NEVER_LOGGED,
    )


def _best(values: list[float | None], better: str) -> tuple[int, ...]:
    """The columns of the best value; a nan or inf (a diverged run) is compared against but is
    never the best."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite or sum(v is not None for v in values) < 2:  # one figure alone is no "best"
        return ()
    top = min(finite) if better == LOWER else max(finite)
    return tuple(i for i, v in enumerate(values) if v == top)


def _metric_row(
    key: str, values: list[float | None], text: Callable[[float | None], str], better: str
) -> TableRow:
    cells = tuple(text(v) for v in values)
    # A diverged run's nan or inf is shown as such, never as a JSON number (JSON has none).
    finite = tuple(v if v is not None and math.isfinite(v) else None for v in values)
    return TableRow("metrics", key, cells, better, _best(values, better), finite)


def _fixed(spec: str) -> Callable[[float | None], str]:
    return lambda value: _fmt(value, spec)


def _differing(
    section: str, per_side: list[list[tuple[str, str]]], grid: set[tuple[str, ...]]
) -> list[TableRow]:
    """The keys whose values are not the same on every side, in first-seen order; a row whose
    cells repeat a grid row's (the grid's `trainer.lr` as `args --lr`) is left out."""
    maps = [dict(pairs) for pairs in per_side]
    keys = list(dict.fromkeys(k for pairs in per_side for k, _ in pairs))
    rows = []
    for key in keys:
        cells = tuple(m.get(key, MISSING) for m in maps)
        if len(set(cells)) > 1 and cells not in grid:
            rows.append(TableRow(section, key, cells))
    return rows


def run_table(sides: list[RunSide], sweep: str | None = None) -> RunTable:
    """Line up many runs, one column each. A run that never logged a step keeps its column:
    its figures are `-` and its `ended` row says so. `sweep`: the sweep compared, else the one
    every run belongs to, if they all belong to one."""
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
    grid_cells = {row.cells for row in rows}
    submissions = [
        [p for p in submission_fields(side.argv) if p[0] != "name"] if side.argv else []
        for side in sides
    ]
    rows += _differing("settings", submissions, grid_cells)
    infos = [run_json_fields(side.run_info) if side.run_info else [] for side in sides]
    rows += _differing("run.json", infos, grid_cells)
    figures = [run_figures(side.records) for side in sides]
    rows += [
        _metric_row("final loss", [f.final_loss for f in figures], _fixed(".4f"), LOWER),
        _metric_row("best loss", [f.best_loss for f in figures], _fixed(".4f"), LOWER),
        _metric_row(
            "images/s (median, all ranks)", [f.img_s for f in figures], _fixed(".1f"), HIGHER
        ),
    ]
    if any(f.tflops is not None for f in figures):
        rows.append(
            _metric_row("TFLOP/s (median, model)", [f.tflops for f in figures], tflops_text, HIGHER)
        )
    if any(f.best_map is not None for f in figures):
        rows.append(_metric_row("best mAP", [f.best_map for f in figures], _fixed(".4f"), HIGHER))
    rows += [
        TableRow(
            "metrics",
            "last step",
            tuple(MISSING if f.last_step is None else str(f.last_step) for f in figures),
        ),
        TableRow("metrics", "ended", tuple(f.ended for f in figures)),
    ]
    return RunTable(sides, rows, sweep)


SECTION_TITLES = {
    "grid": "the sweep's grid",
    "settings": "submitted settings that differ",
    "run.json": "run.json fields that differ",
    "metrics": "figures (* best; BEST: which way)",
}
BEST_MARK = "*"
_CELL_WIDTH = 28  # a longer value or name is cut with `…` (--json has it whole)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def table_cells(row: TableRow) -> list[str]:
    """The row's cells as shown: the best ones carry BEST_MARK."""
    return [f"{c} {BEST_MARK}" if i in row.best else c for i, c in enumerate(row.cells)]


def render_table(table: RunTable) -> list[str]:
    """Plain text lines: a header of the runs, what each lacks, then each section's rows."""
    head = f"{len(table.sides)} runs" + (f" of sweep {table.sweep}" if table.sweep else "")
    lines = [f"compare {head}: {', '.join(table.labels)}"]
    lines += [f"{side.label} lacks {what}" for side in table.sides for what in side.lacks]
    if not table.rows:
        return lines
    shown = [[_cut(c, _CELL_WIDTH) for c in table_cells(row)] for row in table.rows]
    labels = [_cut(label, _CELL_WIDTH) for label in table.labels]
    key_width = min(max(len(row.key) for row in table.rows), 40)
    widths = [
        max([len(labels[i])] + [len(cells[i]) for cells in shown]) for i in range(len(labels))
    ]

    def line(key: str, cells: list[str], last: str) -> str:
        body = "  ".join(f"{c:<{w}}" for c, w in zip(cells, widths, strict=True))
        return f"{_cut(key, 40):<{key_width}}  {body}  {last}".rstrip()

    lines += ["", line("", labels, "BEST")]
    section = ""
    for row, cells in zip(table.rows, shown, strict=True):
        if row.section != section:
            section = row.section
            lines.append(f"== {SECTION_TITLES[section]}")
        lines.append(line(row.key, cells, row.better or ""))
    return lines


@dataclass(frozen=True)
class RunCurves:
    """What the N-way curves plot of one run, against step: loss, and images/s (all ranks)."""

    label: str
    loss: list[tuple[int, float]]
    img_s: list[tuple[int, float]]


def run_curves(side: RunSide) -> RunCurves:
    loss: list[tuple[int, float]] = []
    img_s: list[tuple[int, float]] = []
    for record in side.records:
        step = _number(record, "step")
        if record.get("kind") != "train" or step is None:
            continue
        if (value := _number(record, "loss")) is not None:
            loss.append((int(step), value))
        if (value := _number(record, "images_per_sec")) is not None:
            img_s.append((int(step), value))
    return RunCurves(side.label, loss, img_s)
