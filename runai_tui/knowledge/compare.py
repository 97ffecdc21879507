"""Two runs side by side: what was submitted, what the trainer recorded, how fast it went.

Pure: each side is a RunSide (gathered by knowledge/run_sources.py from a job or a saved run
directory); this module lines them up field by field, differences first, and sums up the
trainer's records. It knows no runai flag spelling: a submit argv is split generically into
`--flag value` pairs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from runai_tui.submission_record import ANNOTATION as RECORD_ANNOTATION

MISSING = "-"


@dataclass
class RunSide:
    """What is known of one run. `lacks` says, in words, what could not be found and why."""

    label: str  # the job name or the run directory
    argv: list[str] | None = None  # the resolved submission, when recorded
    argv_source: str = ""  # where `argv` came from
    run_info: dict[str, Any] | None = None  # the trainer's run.json
    records: list[dict[str, Any]] = field(default_factory=list)  # the trainer's metric records
    records_source: str = ""
    lacks: list[str] = field(default_factory=list)


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

    def to_dict(self) -> dict[str, Any]:
        def rows(items: list[Row]) -> list[dict[str, Any]]:
            return [{"key": r.key, "a": r.a, "b": r.b, "same": r.same} for r in items]

        return {
            "a": {"label": self.a.label, "argv_source": self.a.argv_source, "lacks": self.a.lacks},
            "b": {"label": self.b.label, "argv_source": self.b.argv_source, "lacks": self.b.lacks},
            "submission": rows(self.submission),
            "run_json": rows(self.run_json),
            "metrics": rows(self.metrics),
        }


# --- the submission, field by field -----------------------------------------------------------


def _is_flag(word: str) -> bool:
    return word.startswith("-") and len(word) > 1 and not word[1:2].isdigit()


def _pairs(words: list[str], prefix: str = "") -> list[tuple[str, str]]:
    """`--flag value`, `--switch`, `--flag=value`, `-e K=V` (key `-e K`) as (key, value)."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not _is_flag(word):
            out.append((f"{prefix}(word)", word))
            continue
        name, eq, value = word.partition("=")
        if not eq:
            if i < len(words) and not _is_flag(words[i]):
                value = words[i]
                i += 1
            else:
                value = "(set)"
        key = f"{prefix}{name}"
        sub, sep, rest = value.partition("=")
        if sep and sub and " " not in sub:  # -e K=V, --label k=v, --annotation k=v
            key, value = f"{key} {sub}", rest
        out.append((key, value))
    return out


def split_submit_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """A submit argv as (its name and flags after `submit`, the command after `--`)."""
    words = list(argv)
    if "submit" in words:
        words = words[words.index("submit") + 1 :]
    tail: list[str] = []
    if "--" in words:
        cut = words.index("--")
        words, tail = words[:cut], words[cut + 1 :]
    return words, tail


def submission_fields(argv: list[str]) -> list[tuple[str, str]]:
    """A submit argv as ordered (field, value) pairs: `name`, each flag, then the command after
    `--` (`command`) and its own flags (`args --epochs`). Repeated keys get `#2`, `#3`."""
    words, tail = split_submit_argv(argv)
    fields: list[tuple[str, str]] = []
    if words and not _is_flag(words[0]):
        fields.append(("name", words[0]))
        words = words[1:]
    # The submission record (runai-tui's own annotation) says how, not what, was submitted.
    fields += [p for p in _pairs(words) if p[0] != f"--annotation {RECORD_ANNOTATION}"]
    if tail:
        fields.append(("command", tail[0]))
        fields += _pairs(tail[1:], "args ")
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


def _flat(value: Any, prefix: str) -> list[tuple[str, str]]:
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


def _text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    return str(value)


def run_json_fields(info: dict[str, Any]) -> list[tuple[str, str]]:
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


def _number(record: dict[str, Any], key: str) -> float | None:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize(records: list[dict[str, Any]], world_size: int | None) -> MetricSummary:
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
