"""`port-forward`: a local port forwarded to a job's pod until Ctrl-C."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from runai_tui.cli.common import client_for
from runai_tui.runai.client import Forwarding
from runai_tui.shapes.errors import UsageError
from runai_tui.util.text import literal


def add_port_forward_arguments(pf: argparse.ArgumentParser) -> None:
    pf.epilog = (
        "e.g. runai-tui port-forward JOB 6006 (TensorBoard), or 8080:6006, or 0:6006 for "
        "any free local port. On the local cluster the pod's port is already local."
    )
    pf.add_argument("job")
    pf.add_argument("ports", metavar="[LOCAL:]REMOTE", help="the pod's port, optionally LOCAL:")
    pf.add_argument("--pod", help="pod name (default: the master)")


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


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "port-forward": cmd_port_forward,
}

ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "port-forward": add_port_forward_arguments,
}
