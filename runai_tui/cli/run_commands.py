"""Run commands: `port-forward` (a pod's port on this machine) and `compare` (two runs side by
side: submission, run.json, metrics)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runai_tui.cli.common import client_for, print_json
from runai_tui.errors import UsageError
from runai_tui.text import literal


def add_port_forward_arguments(pf: argparse.ArgumentParser) -> None:
    pf.epilog = (
        "e.g. runai-tui port-forward JOB 6006 (TensorBoard), or 8080:6006, or 0:6006 for "
        "any free local port. On the local cluster the pod's port is already local."
    )
    pf.add_argument("job")
    pf.add_argument("ports", metavar="[LOCAL:]REMOTE", help="the pod's port, optionally LOCAL:")
    pf.add_argument("--pod", help="pod name (default: the master)")


def add_compare_arguments(cp: argparse.ArgumentParser) -> None:
    cp.epilog = (
        "A or B may be a job or a saved run directory (the trainer's --output-dir), "
        "written with a / (./run-a) or with --run-dir."
    )
    cp.add_argument("a", metavar="JOB_A|DIR_A")
    cp.add_argument("b", metavar="JOB_B|DIR_B")
    cp.add_argument(
        "--run-dir", action="store_true", help="A and B are run directories, never job names"
    )
    cp.add_argument("--json", action="store_true")
    cp.add_argument(
        "--differences", action="store_true", help="leave out the rows that are the same"
    )


def parse_ports(text: str) -> tuple[int, int]:
    """`[LOCAL:]REMOTE` -> (local, remote); a bad value is a usage error (exit 2)."""
    local_text, sep, remote_text = text.rpartition(":")
    try:
        remote = int(remote_text)
        local = int(local_text) if sep else remote
    except ValueError:
        raise UsageError(
            f"port {text!r}: expected [LOCAL:]REMOTE numbers",
            "e.g. runai-tui port-forward JOB 6006 or JOB 8080:6006",
        ) from None
    if not (1 <= remote <= 65535 and 0 <= local <= 65535):
        raise UsageError(
            f"port {text!r}: ports are 1-65535 (LOCAL 0 picks any free port)",
            "e.g. runai-tui port-forward JOB 0:6006",
        )
    return local, remote


def cmd_port_forward(args: argparse.Namespace) -> int:
    # lazy: the runai client, asyncio and subprocess stay off the start-up path
    from runai_tui.runai.client import Forwarding

    local, remote = parse_ports(args.ports)
    client = client_for(args)
    for item in client.port_forward(args.job, local, remote, args.pod):
        if isinstance(item, Forwarding):
            pod = args.pod or "the master"
            print(
                f"{item.url} -> {args.job} ({pod}) port {item.remote}; Ctrl-C to stop",
                file=sys.stderr,
                flush=True,
            )
        else:
            print(literal(item), flush=True)
    return 0


def _is_dir(text: str, forced: bool) -> bool:
    """A path has a `/` (`./run-a`, `/mnt/pvc/runs/a`); a job name never does. A bare word is a
    job even when a folder of that name is here (--run-dir says otherwise)."""
    return forced or "/" in text or text in (".", "..")


def _side(args: argparse.Namespace, text: str, client: Any) -> Any:
    # lazy: off the dry-run start-up path; only this command loads it
    from runai_tui.knowledge import run_sources

    if _is_dir(text, args.run_dir):
        path = Path(text)
        if not path.is_dir():
            raise UsageError(f"{text}: no such run directory", "give the trainer's --output-dir")
        return run_sources.read_run_dir(path)
    # lazy: the runai client, asyncio and subprocess stay off the start-up path
    from runai_tui.runai import runner

    return runner.run_sync(run_sources.gather_job(client, text))


def cmd_compare(args: argparse.Namespace) -> int:
    # lazy: off the dry-run start-up path; only this command loads it
    from runai_tui.knowledge.compare import compare, render

    needs_client = not (_is_dir(args.a, args.run_dir) and _is_dir(args.b, args.run_dir))
    client = client_for(args) if needs_client else None
    a, b = _side(args, args.a, client), _side(args, args.b, client)
    result = compare(a, b)
    if args.json:
        print_json(result.to_dict())
        return 0
    for line in render(result, same_rows=not args.differences):
        print(literal(line))
    return 0


COMMANDS = {"port-forward": cmd_port_forward, "compare": cmd_compare}


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "port-forward": add_port_forward_arguments,
    "compare": add_compare_arguments,
}
