"""Resource commands: `top` (per pod CPU, memory against its limit, GPUs; runai_tui/knowledge/probes/resources.py)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

from runai_tui.cli.common import client_for, print_json
from runai_tui.knowledge.probes import resources
from runai_tui.runai import runner
from runai_tui.util.duration import seconds_arg
from runai_tui.workflows.pod_probes import top_job


def add_arguments(tp: argparse.ArgumentParser) -> None:
    tp.add_argument("job")
    tp.add_argument("--pod", help="only this pod")
    tp.add_argument(
        "--json", action="store_true", help='{"job", "pods": [...]} (one per line with --watch)'
    )
    tp.add_argument("--watch", action="store_true", help="read again and again until Ctrl-C")
    tp.add_argument(
        "--every",
        type=seconds_arg(positive=True),
        default=2.0,
        metavar="SECONDS",
        help="with --watch: pause between readings (default 2; each reading takes ~1 s)",
    )


def cmd_top(args: argparse.Namespace) -> int:
    client = client_for(args)
    while True:
        report = runner.run_sync(top_job(client, args.job, pod=args.pod))
        if args.json and args.watch:
            sys.stdout.write(json.dumps(report.to_dict()) + "\n")
        elif args.json:
            print_json(report.to_dict())
        else:
            if args.watch:
                print(time.strftime("%H:%M:%S"), args.job)
            print(resources.render_text(report))
        sys.stdout.flush()
        if not args.watch:
            return report.exit_code
        time.sleep(args.every)
        if not args.json:
            print()


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"top": cmd_top}


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"top": add_arguments}
