"""A real hang through the product path: retinanet-local on the local cluster (the trainer, two
pods, gloo), rank 1 made to stall by the trainer's TEST-ONLY hook (an environment variable read by
trainer/test_hooks.py, not a flag users see). Rank 0 times out in a collective and dumps its
Flight Recorder buffer on the PVC; `runai-tui diagnose JOB` reads it through the still-running
worker pod (exec, base64) and names rank 1 (or, when both pods have already ended, says where
the dumps are), and `diagnose --flight-recorder` on the PVC's directory names rank 1."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.local.test_through_runai_tui import jobs, tui

STALL = "env.RUNAI_TUI_TEST_HOOK_STALL=1:3:300"  # rank 1, before step 3, far past the timeout
TIMEOUT = "env.RUNAI_TUI_TEST_HOOK_DIST_TIMEOUT_SECONDS=15"
# The shipped profile, with ResNet-18 at 64 px in fp32 for its ResNet-50 at 128 px in bf16 (bf16
# is emulated on an AVX2 CPU, 5-15x fp32): this test is about the stall, not the model, and the
# overrides take the same path from `--set` to the pods' arguments as a user's.
SMALL = ["--set", "trainer.model=retinanet_resnet18_fpn", "--set", "trainer.min-size=64",
         "--set", "trainer.max-size=64", "--set", "trainer.amp=none"]  # fmt: skip


@pytest.mark.slow
def test_diagnose_names_the_stalled_rank_of_a_real_trainer_job(repo_root: Path) -> None:
    pytest.importorskip("torch")
    res = tui("--backend", "local", "submit", "--profile", "retinanet-local", "--set", STALL,
              "--set", TIMEOUT, *SMALL)  # fmt: skip
    assert res.returncode == 0, res.stderr
    pvc = Path(os.environ["XDG_DATA_HOME"]) / "runai-tui/local/pvc/project-001"
    dumps = pvc / "runs/retinanet-local/flight-recorder"
    try:
        deadline = time.monotonic() + 600  # ~45 s on 2 idle cores; only a failure waits it out
        polls = 0
        while not (dumps / "rank-0").is_file():
            assert time.monotonic() < deadline, "rank 0 never dumped"
            polls += 1
            if polls % 5 == 0:  # the phase every 5 s (a runai-tui process), the file every second
                ended = jobs()["retinanet-local"]["status"] in ("Completed", "Failed")
                if ended and not (dumps / "rank-0").is_file():
                    raise AssertionError(tui("logs", "retinanet-local").stdout[-3000:])
            time.sleep(1)
        report = tui("--backend", "local", "diagnose", "retinanet-local")
        if "hang-rank" in report.stdout:  # the worker pod still runs: read through it
            assert report.returncode == 1, report.stderr
            assert "ERROR hang-rank  rank 1" in report.stdout, report.stdout
            assert "rank 1 left no dump and never reached collective" in report.stdout
            assert "Last completed collective: rank 0:" in report.stdout
        else:  # on a loaded machine the pods may end first, or while they are read through
            assert "flight-recorder-unreadable" in report.stdout, report.stdout
            if "no pod of the job is running" in report.stdout:
                assert f"copy {dumps}" in report.stdout
            else:  # the exec began on a running pod that then ended
                assert "copy the directory and run" in report.stdout, report.stdout
        local_copy = tui("diagnose", "--flight-recorder", str(dumps))
        assert local_copy.returncode == 1 and "rank 1  no dump" in local_copy.stdout
        assert "rank 1 left no dump and never reached collective" in local_copy.stdout
        worker_log = tui("--backend", "local", "logs", "retinanet-local", "--pod",
                         "retinanet-local-worker-0").stdout  # fmt: skip
        assert "TEST HOOK: stalling" in worker_log
    finally:
        tui("--backend", "local", "delete", "retinanet-local", "--yes")
    assert "retinanet-local" not in jobs()
