"""`runai-tui plan` measuring the step time of a job running on the real local cluster (its
master's log read back through the client, as on a cluster)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.local.conftest import wait_until
from tests.local.test_through_runai_tui import tui

pytestmark = pytest.mark.slow  # jobs on the local cluster: real process groups

RECORDS = "".join(
    f'echo \'{{"kind": "train", "step": {step}, "loss": 1.0, "step_time": {seconds}}}\'\n'
    for step, seconds in ((20, 4.0), (40, 0.25), (60, 0.25))
)


def test_plan_reads_the_step_time_of_a_running_job(tmp_path: Path) -> None:
    script = tmp_path / "pod.sh"
    script.write_text(RECORDS + "exec sleep 300\n")
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "records.yaml").write_text(
        f"job_name: records\nimage: busybox:1\nworkers: 1\ncommand: [sh, {script}]\n"
    )
    assert tui("submit", "--profile", "records").returncode == 0
    try:

        def measured() -> dict | None:
            out = tui("plan", "retinanet-local", "--job", "records", "--json")
            assert out.returncode == 0, out.stderr
            return json.loads(out.stdout)["measured"]

        found = wait_until(measured, "the records in the master's log")
        assert found["job"] == "records" and found["step_time"] == 0.25
        assert found["source"] == "median step_time of 2 train records"
        text = tui("plan", "retinanet-local", "--job", "records").stdout
        assert "measured step time: 250.0 ms (job records" in text
        assert "all-reduce share on 25 Gb/s TCP: " in text
    finally:
        tui("delete", "records", "--yes")
