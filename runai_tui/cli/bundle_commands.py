"""`bundle`: a failed job's post-mortem in one archive, secrets redacted (runai_tui/workflows/bundle.py)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from runai_tui.cli.common import client_for
from runai_tui.runai import runner
from runai_tui.shapes.errors import ErrorKind, RunaiError, UsageError
from runai_tui.trainer_flags import records
from runai_tui.util.text import literal
from runai_tui.workflows import bundle


def add_bundle_arguments(bd: argparse.ArgumentParser) -> None:
    bd.epilog = (
        "It holds describe's raw document, every pod's log (and the container's before its last "
        "restart), the events, the diagnosis, the submission record, run.json, the metrics and "
        "the Flight Recorder dumps; every secret value redacted."
    )
    bd.add_argument("job")
    bd.add_argument("-o", "--output", required=True, metavar="FILE.tar.gz", help="the archive")


def writable(path: Path) -> Path:
    """`path`, checked before anything is gathered: UsageError (exit 2) when it cannot be
    written (its folder missing or not writable, or a folder of that name)."""
    folder = path.parent if str(path.parent) else Path(".")
    why = ""
    if path.is_dir():
        why = "it is a folder"
    elif not folder.is_dir():
        why = f"its folder {folder} does not exist"
    elif not os.access(folder, os.W_OK | os.X_OK):
        why = f"its folder {folder} is not writable"
    elif path.exists() and not os.access(path, os.W_OK):
        why = "it is not writable"
    if why:
        raise UsageError(f"-o {path}: cannot write the bundle there: {why}",
                         "e.g. -o ./JOB-bundle.tar.gz")  # fmt: skip
    return path


def cmd_bundle(args: argparse.Namespace) -> int:
    path = writable(Path(args.output))
    client = client_for(args)
    try:
        gathered = runner.run_sync(bundle.gather(client, args.job))
    except RunaiError as exc:
        if exc.kind == ErrorKind.NOT_FOUND:
            raise UsageError(f"job {args.job!r}: no such job", "see: runai-tui list") from None
        raise
    members = gathered.redacted()
    bundle.write(path, members, args.job)
    print(literal(f"wrote {path}: {len(members)} files ({', '.join(_summary(gathered))})"))
    for lack in gathered.missing:  # runai's words and pod names: shown as inert text
        print(literal(f"  missing {lack['what']}: {lack['why']}"))
    return 0


def _summary(gathered: bundle.Bundle) -> list[str]:
    logs = sum(1 for name in gathered.members if name.startswith("logs/"))
    dumps = sum(1 for name in gathered.members if f"/{records.DUMP_DIR}/" in name)
    return [f"{logs} log(s)", f"{dumps} Flight Recorder dump(s)",
            f"{gathered.secrets} secret(s) redacted"]  # fmt: skip


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"bundle": cmd_bundle}

ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"bundle": add_bundle_arguments}
