"""`diagnose`: a job's pods' logs, saved logs or Flight Recorder dumps read into findings (the
knowledge: runai_tui/knowledge/diagnose/)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from runai_tui.cli.common import client_for, print_json
from runai_tui.knowledge import diagnose
from runai_tui.shapes.errors import UsageError


def add_diagnose_arguments(dg: argparse.ArgumentParser) -> None:
    """`diagnose` (logic: runai_tui/knowledge/diagnose/)."""
    dg.add_argument("job", nargs="?", help="the job (or give --log FILE instead)")
    dg.add_argument("--pod", help="only this pod")
    dg.add_argument(
        "--log",
        dest="logs",
        action="append",
        default=[],
        metavar="FILE",
        help="read a saved log instead (the pod is the file name without extension; repeatable)",
    )
    dg.add_argument(
        "--flight-recorder",
        metavar="DIR",
        help="read a local copy of the job's Flight Recorder dumps (rank-N files): the rank that hung",
    )
    dg.add_argument("--json", action="store_true", help='{"pods": [...], "findings": [...]}')


def cmd_diagnose(args: argparse.Namespace) -> int:
    if args.flight_recorder:
        if args.job or args.logs:
            raise UsageError(
                "diagnose takes a JOB, --log FILE... or --flight-recorder DIR, one of them",
                "runai-tui diagnose --flight-recorder DIR",
            )
        return _diagnose_dumps(Path(args.flight_recorder), args.json)
    if args.logs:
        if args.job or args.pod:
            raise UsageError(
                "diagnose takes a JOB or --log FILE..., not both",
                "runai-tui diagnose JOB [--pod POD], or runai-tui diagnose --log FILE",
            )
        paths = [Path(p) for p in args.logs]
        for path in paths:
            if not path.is_file():
                raise UsageError(f"--log {path}: no such file", "give the path of a saved log")
        try:
            report = diagnose.diagnose_files(paths)
        except OSError as exc:
            raise UsageError(f"--log {exc.filename}: {exc.strerror}", "check the file") from None
    elif args.job:
        # a job's pass only, off `diagnose --log` (a waited path): the event loop, the remedies
        # with the profiles and YAML
        from runai_tui.knowledge.remedies import attach_for_job
        from runai_tui.runai import runner
        from runai_tui.workflows.diagnose_job import diagnose_job

        client = client_for(args)
        detail = client.describe(args.job)
        report = runner.run_sync(diagnose_job(client, args.job, pod=args.pod, detail=detail))
        note = attach_for_job(report.findings, detail, local=client.backend.is_local)
        if note and any(f.severity != "info" for f in report.findings) and not args.json:
            print(note, file=sys.stderr)
    else:
        raise UsageError("diagnose needs a JOB or --log FILE", "see: runai-tui diagnose --help")
    if args.json:
        print_json(report.to_dict())
    else:
        print(diagnose.render_text(report, args.job))
    return report.exit_code


def _diagnose_dumps(directory: Path, as_json: bool) -> int:
    # off `diagnose --log`: the dump reader (pickle, its dataclasses)
    from runai_tui.knowledge.records import flight_recorder as fr

    try:
        judgement = fr.judge(fr.read_dir(directory))
    except fr.DumpProblem as problem:
        raise UsageError(problem.message, problem.hint) from None
    except OSError as exc:
        raise UsageError(f"--flight-recorder {exc.filename}: {exc.strerror}", "check it") from None
    reported = fr.findings(judgement)
    if as_json:
        print_json(
            {
                "ranks": [
                    {"rank": d.rank, "file": d.name, "entered": d.entered, "completed": d.completed}
                    for d in judgement.dumps
                ],
                "missing_ranks": judgement.missing,
                "hangs": [h.to_dict() for h in judgement.hangs],
                "findings": [{**vars(r), "severity": "error"} for r in reported],
            }
        )
    else:
        print(fr.render_text(judgement, reported))
    return 1 if reported else 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "diagnose": cmd_diagnose,
}


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "diagnose": add_diagnose_arguments,
}
