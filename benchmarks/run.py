#!/usr/bin/env python3
"""The benchmark suite: where runai-tui stands against what users would otherwise use.

Every figure is a ratio against a yardstick measured in the same run (interleaved, medians),
because absolute times on a shared machine are noise. Writes a JSON report and prints a table.

    python benchmarks/run.py                        # every figure but the trainer's
    python benchmarks/run.py --only cli --only job-table
    python benchmarks/run.py --reference-dir ~/vision/references/detection   # + the trainer
    python benchmarks/run.py --quick                # tiny sizes: checks the harness, not speed

Figures: cli, tui-paint, log-view, job-table, diagnose, loss, suite-cpu (the whole test suite's
CPU-seconds against the last recorded run); opt-in: trainer (needs --reference-dir), trainer-cpu. Each module's docstring (benchmarks/fig_*.py) says what it measures and how.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import REPO, Figure

# name -> "module:function"; each function takes the parsed options as keywords.
FIGURES = {
    "cli": "benchmarks.fig_cli:measure",
    "tui-paint": "benchmarks.fig_tui_paint:measure",
    "log-view": "benchmarks.fig_log_view:measure",
    "job-table": "benchmarks.fig_job_table:measure",
    "diagnose": "benchmarks.fig_diagnose:measure",
    "loss": "benchmarks.fig_loss:measure",
    "suite-cpu": "benchmarks.fig_suite_cpu:measure",
    "trainer": "benchmarks.fig_trainer:measure",
    "trainer-cpu": "benchmarks.fig_trainer:measure_cpu_options",
    "flight-recorder": "benchmarks.fig_flight_recorder:measure",
}
# Minutes of CPU each: only with --only (trainer also runs by default given --reference-dir).
OPT_IN = {"trainer", "trainer-cpu", "flight-recorder"}


def compile_size(text: str) -> str:
    """--trainer-compile-size, checked when the options are parsed."""
    from benchmarks.fig_trainer import parse_compile_size

    try:
        parse_compile_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", action="append", choices=sorted(FIGURES), help="this figure only (repeatable)"
    )
    parser.add_argument(
        "--out", type=Path, default=REPO / "out" / "bench" / "report.json", help="JSON report"
    )
    parser.add_argument(
        "--doc",
        type=Path,
        action="append",
        default=[],
        help="after a whole run (no --only, no --quick), rewrite this file's figures blocks "
        "(repeatable; make bench: docs/performance.md and README.md)",
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes and repeats")
    parser.add_argument(
        "--repeat", type=int, default=None, help="samples per side (default: per figure)"
    )
    parser.add_argument(
        "--reference-dir",
        type=Path,
        default=None,
        help="a checkout of torchvision's references/detection (the trainer figure needs it)",
    )
    parser.add_argument(
        "--reference-commit", default="", help="the commit of --reference-dir (for the report)"
    )
    parser.add_argument("--diagnose-mb", type=int, default=1024, help="size of the generated log")
    parser.add_argument("--trainer-iters", type=int, default=10, help="iterations per trainer run")
    parser.add_argument("--trainer-workers", type=int, default=0, help="loader workers, both")
    parser.add_argument("--trainer-threads", type=int, default=2, help="OMP threads, both")
    parser.add_argument(
        "--trainer-compile-size",
        default="",
        type=compile_size,
        metavar="MIN/MAX",
        help="the trainer figure's compiled rows at this resize, each against our eager run at "
        "the same size (default: 800/1333, against the reference); none: no compiled rows",
    )
    return parser.parse_args(argv)


def machine() -> dict[str, object]:
    model = platform.processor() or ""
    flags: list[str] = []
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "Model name":
                model = value.strip()
            elif key.strip() == "Flags":
                flags = value.split()
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "bf16": any(f in flags for f in ("avx512_bf16", "amx_bf16")),
        "python": platform.python_version(),
        "load_avg": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s" and value < 1:
        return f"{value * 1000:.1f} ms"
    if unit == "lines/s":
        return f"{value / 1000:.0f}k/s"
    if unit == "img/s":
        return f"{value:.2f} img/s"
    if unit in ("s", "MB"):
        return f"{value:.2f} {unit}"
    return f"{value:.3g} {unit}".strip()


def table(figures: list[Figure]) -> str:
    rows = [("figure", "ours", "yardstick", "ratio", "target", "met?")]
    for fig in figures:
        ratio = "-" if fig.ratio is None else f"{fig.ratio:.2f}x"
        met = {True: "yes", False: "NO", None: "-"}[fig.met]
        rows.append(
            (
                fig.name,
                fmt(fig.ours, fig.unit),
                fmt(fig.yardstick, fig.unit),
                ratio,
                fig.target,
                met,
            )
        )
        for key, sub in fig.details.get("extra_rows", {}).items():
            sub_ratio = "-" if sub.get("ratio") is None else f"{sub['ratio']:.2f}x"
            sub_met = {True: "yes", False: "NO", None: "-"}[sub.get("met")]
            rows.append(
                (
                    "  " + key,
                    sub.get("ours", "-"),
                    sub.get("yardstick", "-"),
                    sub_ratio,
                    sub.get("target", ""),
                    sub_met,
                )
            )
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"{fig.name}: {fig.note}" for fig in figures if fig.note]
    return "\n".join(lines + ([""] + notes if notes else []))


DOC_BEGIN = "<!-- bench:begin (generated by: make bench, from its report) -->"
DOC_END = "<!-- bench:end -->"


def doc_cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def doc_block(report: dict[str, Any]) -> str:
    """The figures block of docs/performance.md: the report's machine, then one table row per
    figure (and per extra row), as the printed table has them."""
    m = report["machine"]
    head = (
        f"`make bench`, {m['date']}: {m['nproc']} CPUs ({m['cpu']}), Python {m['python']}, "
        f"load {m['load_avg'][0]:.1f} at the end."
    )
    rows = ["| figure | ours | yardstick | ratio | target | met |", "|---|---|---|---|---|---|"]
    for fig in report["figures"]:
        met = {True: "yes", False: "**no**", None: "-"}[fig["met"]]
        ratio = "-" if fig["ratio"] is None else f"{fig['ratio']:.2f}x"
        cells = [f"`{fig['name']}`: {fig['title']}", fmt(fig["ours"], fig["unit"])]
        cells += [fmt(fig["yardstick"], fig["unit"]), ratio, fig["target"], met]
        rows.append("| " + " | ".join(doc_cell(c) for c in cells) + " |")
        for key, sub in fig["details"].get("extra_rows", {}).items():
            sub_ratio = "-" if sub.get("ratio") is None else f"{sub['ratio']:.2f}x"
            sub_met = {True: "yes", False: "**no**", None: "-"}[sub.get("met")]
            label = key if key.startswith(fig["name"]) else f"{fig['name']} {key}"
            cells = [f"`{label}`", sub.get("ours", "-"), sub.get("yardstick", "-")]
            cells += [sub_ratio, sub.get("target", ""), sub_met]
            rows.append("| " + " | ".join(doc_cell(c) for c in cells) + " |")
    notes = [f"- `{f['name']}`: {doc_cell(f['note'])}" for f in report["figures"] if f["note"]]
    return "\n".join([head, "", *rows] + (["", *notes] if notes else []))


SUMMARY_BEGIN = "<!-- bench-summary:begin (generated by: make bench, from its report) -->"
SUMMARY_END = "<!-- bench-summary:end -->"


def _measured(ours: str, ratio: float | None, target: str) -> str:
    """A figure as the README's table gives it: the ratio where the target is one, else ours."""
    relative = "ratio" in target or "x" in target.replace("max", "")
    return f"{ratio:.2f}x" if ratio is not None and relative else ours


def summary_block(report: dict[str, Any]) -> str:
    """The README's rows of the last `make bench`: every judged figure (not the load-dependent
    or unjudged extra rows), what it measured, its target and whether it met it."""
    m = report["machine"]
    rows = [
        f"| figure (`make bench`, {m['date']}, {m['nproc']} CPUs, {m['cpu']}) | measured | "
        "target | met |",
        "|---|---|---|---|",
    ]
    for fig in report["figures"]:
        subs = [(f"`{fig['name']}`: {fig['title']}", fmt(fig["ours"], fig["unit"]), fig)]
        subs += [
            (
                f"`{key if key.startswith(fig['name']) else fig['name'] + ' ' + key}`",
                sub.get("ours", "-"),
                sub,
            )
            for key, sub in fig["details"].get("extra_rows", {}).items()
        ]
        for title, ours, row in subs:
            if row.get("met") is None:  # not judged, load-dependent, or not measured
                continue
            met = "yes" if row["met"] else "**no**"
            measured = _measured(str(ours), row.get("ratio"), str(row.get("target", "")))
            cells = [title, measured, row.get("target", ""), met]
            rows.append("| " + " | ".join(doc_cell(c) for c in cells) + " |")
    return "\n".join(rows)


def write_doc(path: Path, report: dict[str, Any]) -> None:
    """Replace the figures blocks that path holds (between DOC_BEGIN and DOC_END: the whole
    table, docs/performance.md; between SUMMARY_BEGIN and SUMMARY_END: the README's rows)."""
    text = path.read_text(encoding="utf-8")
    for begin, end_mark, make in (
        (DOC_BEGIN, DOC_END, doc_block),
        (SUMMARY_BEGIN, SUMMARY_END, summary_block),
    ):
        if begin in text:
            start, end = text.index(begin) + len(begin), text.index(end_mark)
            text = text[:start] + "\n" + make(report) + "\n" + text[end:]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names = args.only or [
        n for n in FIGURES if n not in OPT_IN or (n == "trainer" and args.reference_dir)
    ]
    figures: list[Figure] = []
    for name in names:
        module_name, function = FIGURES[name].split(":")
        measure = getattr(importlib.import_module(module_name), function)
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            fig = measure(**vars(args))
        except Exception as exc:  # one broken figure must not hide the others
            traceback.print_exc()
            fig = Figure(name, name, "", note=f"not measured: {type(exc).__name__}: {exc}")
        fig.details["bench_seconds"] = round(time.perf_counter() - start, 1)
        figures.append(fig)
    report = {"machine": machine(), "figures": [f.to_json() for f in figures]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, args.out)
    m = report["machine"]
    print(f"{m['date']}  {m['nproc']} CPUs  {m['cpu']}  load {m['load_avg'][0]:.1f}")
    print(table(figures))
    print(f"report: {args.out}")
    for doc in args.doc:
        if args.only or args.quick:
            print(f"{doc} left as it is: only a whole run (no --only, no --quick) writes it")
        else:
            write_doc(doc, report)
            print(f"figures written to {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
