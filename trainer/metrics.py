"""What the run reports: metrics.jsonl, the same JSON lines on stdout, and run.json.

Only rank 0 writes. Each record is one line, flushed at once, so `runai logs` and the TUI see
progress as it happens.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from trainer.files import write_text_atomic

METRICS_FILE = "metrics.jsonl"
RUN_FILE = "run.json"


class MetricsLog:
    def __init__(self, output_dir: str, enabled: bool) -> None:
        self.path = os.path.join(output_dir, METRICS_FILE)
        self.enabled = enabled

    def truncate_after(self, step: int) -> None:
        """On resume, forget records past the checkpoint: those steps are about to run again."""
        if not self.enabled or not os.path.isfile(self.path):
            return
        kept = []
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                try:
                    if json.loads(line).get("step", 0) <= step:
                        kept.append(line)
                except ValueError:
                    continue  # a line cut short by a kill
        write_text_atomic(self.path, "".join(kept))

    def write(self, record: dict[str, Any]) -> None:
        if not self.enabled:
            return
        record = {**record, "time": round(time.time(), 3)}  # unix seconds, for rates and ETAs
        line = json.dumps(record, separators=(", ", ": "))
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def write_run_json(output_dir: str, info: dict[str, Any]) -> None:
    write_text_atomic(
        os.path.join(output_dir, RUN_FILE), json.dumps(info, indent=2, sort_keys=True) + "\n"
    )
