"""The resubmit loop on the local cluster, shared by the modules that each run it with one real
fault (one module each, so that the suite's workers can take them in parallel): the job fails,
`diagnose` names the fault with its remedy, `resubmit --apply-remedies --yes` submits NAME-2 with it,
and the new job completes."""

from __future__ import annotations

import json
import os
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.local.conftest import wait_phase
from tests.local.test_through_runai_tui import tui


def user_profile(name: str, text: str) -> None:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(text)


def jobs() -> list[str]:
    return [j["name"] for j in json.loads(tui("list", "--json").stdout)]


def tiny(name: str, extra_args: str = "", extra: str = "", steps: int = 2) -> str:
    # --amp none: auto would first time a few passes in both precisions, for nothing tested here;
    # --comm-check off: the wire check would time all-reduces between the pods, read by none;
    # --trainable-backbone-layers 0: a frozen ResNet-18 body halves a step's CPU (the faults and
    # their remedies are the subject, not the model).
    return textwrap.dedent(
        f"""\
        extends: retinanet-local
        job_name: {name}
        {extra}
        args: [--dataset, synthetic, --synthetic-train-images, "{4 * steps}",
               --synthetic-val-images, "2",
               --model, retinanet_resnet18_fpn, --epochs, "1", --max-steps, "{steps}", --batch-size,
               "2", --min-size, "64", --max-size, "64", --log-every, "1", --amp, none,
               --comm-check, "off", --trainable-backbone-layers, "0",
               --output-dir, /data/runs/{name}{extra_args}]
        """
    )


def until(check: Callable[[], Any], what: str, seconds: float = 300) -> Any:
    """Poll for a trainer's state (slower than the local cluster's own: torch starts first).
    A check is a runai-tui command (diagnose: half a CPU-second), so the pause grows from 1 s to
    3 s while the trainer starts."""
    deadline = time.monotonic() + seconds
    pause = 1.0
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(pause)
        pause = min(pause * 1.5, 3.0)
    return value


def loop(job: str, code: str, remedy: str, hangs: bool = False) -> None:
    """The job fails (ends Failed, or hangs Running with the error in its log: `hangs`);
    diagnose names `code` with `remedy`; resubmit applies it (a hung job, whose run holds the
    output dir NAME-2 writes, suspended first, as the plan says); NAME-2 ends Completed; compare
    lines the two up, the failed side saying what it lacks."""
    assert tui("submit", "--profile", job).returncode == 0

    def diagnosed() -> list[dict]:
        res = tui("diagnose", job, "--json")
        return [f for f in json.loads(res.stdout)["findings"] if f["code"] == code]

    found = until(diagnosed, f"diagnose to find {code} in {job}")
    assert found[0]["remedy"]["set"] == [remedy], found
    if not hangs:  # it ends by itself (a fault no retry cures fails the pod at once)
        wait_phase(job, "Failed", "Completed")
    phase = json.loads(tui("describe", job, "--json").stdout)["status"]
    res = tui("resubmit", job, "--apply-remedies", "--yes")
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"  --set {remedy}  remedy of {code}" in res.stdout
    assert phase == "Running" or not hangs, phase
    if phase in ("Running", "Pending"):  # its run holds the output dir both write: suspended
        said = f"note: {job} is still {phase} and its run holds "
        assert said in res.stdout, res.stdout
        assert f": it is suspended before {job}-2 is submitted" in res.stdout, res.stdout
        assert res.stdout.index(said) < res.stdout.index(f"Submitted job {job}-2"), res.stdout
    assert f"Submitted job {job}-2 on the LOCAL cluster." in res.stdout
    follow = tui("logs", f"{job}-2", "-f", timeout=600)
    assert '{"kind": "done"' in follow.stdout, follow.stdout[-2000:]
    assert wait_phase(f"{job}-2", "Completed", "Failed")["phase"] == "Completed"
    res = tui("compare", job, f"{job}-2")
    assert res.returncode == 0, res.stderr
    assert f"{job} lacks trainer metric records" in res.stdout, res.stdout
