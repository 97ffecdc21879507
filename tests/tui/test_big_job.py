"""A job with more pods than describe's default limit (10): every pod reaches describe, the logs
pod picker, diagnose and preflight. The local cluster keeps the real CLI's defaults (10 pods,
50 events), so a caller that forgets --pod-limit -1 loses ranks here as on a cluster."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runai_tui.shapes.models import Phase
from runai_tui.tui.app import RunaiTuiApp
from runai_tui.tui.screens.logs import LogsScreen
from tests.local.conftest import run_local, wait_until
from tests.tui.helpers import wait_for

pytestmark = pytest.mark.slow  # the app over jobs on the local cluster

WORKERS = 15  # + the master: 16 pods


def runai_tui_json(*args: str, codes: tuple[int, ...] = (0,)) -> dict:
    """The installed command, in its own process (as a script would call it). preflight exits
    1 when a check fails on this machine (memlock, say): its report is what counts here."""
    cmd = [sys.executable, "-m", "runai_tui.cli", "--backend", "local", *args, "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode in codes, done.stderr
    return json.loads(done.stdout)


async def test_every_pod_of_a_16_pod_job_everywhere(local_client, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    # The pods look at the gate twice a second: 16 looking ten times a second (a `sleep` process
    # each time) cost 0.2 CPU-seconds a second.
    body = f'echo "rank $RANK up"; while [ ! -e "{gate}" ]; do sleep 0.5; done'
    submit = ["training", "pytorch", "submit", "big", "--workers", str(WORKERS)]
    res = run_local(*submit, "--command", "--", "sh", "-c", body)
    assert res.code == 0, res.err
    try:
        detail = wait_until(
            lambda: (
                (d := local_client.describe("big")).job.phase is Phase.RUNNING
                and all(p.phase is Phase.RUNNING for p in d.pods)
                and d
            ),
            "all 16 pods running",
        )
        names = {p.name for p in detail.pods}
        assert len(names) == WORKERS + 1
        assert {"big-master-0", f"big-worker-{WORKERS - 1}"} <= names

        # Without the flags the CLI's defaults cut the list: what the client used to get.
        res = run_local("training", "pytorch", "describe", "big", "-o", "json")
        assert len(json.loads(res.out)["pods"]) == 10

        described = runai_tui_json("describe", "big")
        assert {p["name"] for p in described["pods"]} == names
        diagnosed = runai_tui_json("diagnose", "big")
        assert {p["pod"] for p in diagnosed["pods"]} == names
        checked = runai_tui_json("preflight", "big", codes=(0, 1))
        assert {p["pod"] for p in checked["pods"]} == names

        app = RunaiTuiApp(local_client, refresh_interval=0, save_dir=tmp_path)
        async with app.run_test(size=(120, 40)) as pilot:
            logs = LogsScreen(detail.job)
            await app.push_screen(logs)
            await wait_for(pilot, lambda: len(logs.pods) == WORKERS + 1, "the pod picker")
            assert set(logs.pods) == names
    finally:
        gate.touch()
