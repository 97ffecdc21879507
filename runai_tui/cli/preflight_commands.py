"""`preflight`: a read-only probe in each running pod of a job, read into a checklist (the
knowledge: runai_tui/knowledge/probes/preflight.py; the pass: runai_tui/workflows/preflight.py)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from runai_tui.cli.common import client_for, print_json
from runai_tui.knowledge.probes import preflight
from runai_tui.knowledge.remedies import attach_for_job
from runai_tui.runai import runner
from runai_tui.shapes.errors import RuntimeFailure
from runai_tui.workflows.preflight import preflight_job


def add_preflight_arguments(pf: argparse.ArgumentParser) -> None:
    """`preflight` (logic: runai_tui/knowledge/probes/preflight.py)."""
    pf.add_argument("job")
    pf.add_argument("--pod", help="only this pod")
    pf.add_argument("--json", action="store_true", help='{"pods": [{"pod", "items": [...]}]}')


def cmd_preflight(args: argparse.Namespace) -> int:
    client = client_for(args)
    detail = client.describe(args.job)
    report = runner.run_sync(preflight_job(client, args.job, pod=args.pod, detail=detail))
    if not report.pods:
        raise RuntimeFailure(f"job {args.job!r} has no pods", "wait until it is Running")
    attach_for_job(report.faults(), detail, local=client.backend.is_local)  # once per fault
    if args.json:
        print_json(report.to_dict())
    else:
        print(preflight.render_text(report))
    return report.exit_code


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"preflight": cmd_preflight}

ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "preflight": add_preflight_arguments,
}
