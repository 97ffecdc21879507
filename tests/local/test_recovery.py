"""A job survives its faults in place, on the local cluster, with real trainer processes.

One 2-pod training job (ResNet-18 RetinaNet at 64 px, its body frozen, fp32, 24 steps, a
checkpoint every 4) is submitted from a profile that extends the shipped retinanet-local, so it
recovers as shipped (restart_policy OnFailure, backoff_limit 3, the entry script's torchrun
--max-restarts). It meets three faults, one after the other, and every test below reads what it
left:

1. the worker's trainer process is SIGKILLed mid-run: torchrun restarts the worker group on
   both pods, which resume from the newest checkpoint;
2. the worker pod is killed (its whole process group): the pod restarts and rejoins the
   rendezvous, which a static rendezvous never did;
3. a job of higher priority takes its slots (max_pods 2): it gets SIGTERM and its grace period,
   checkpoints, waits Pending, and resumes once that job ends.

Meanwhile a second trainer is started on its output dir and refuses.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from runai_local import state
from tests.local.conftest import isolated_env

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
STEPS, EVERY = 24, 4
PROFILE = f"""\
extends: retinanet-local
job_name: rec
termination_grace_period: 60s
args: [--dataset, synthetic, --synthetic-train-images, "100", --synthetic-val-images, "2",
       --model, retinanet_resnet18_fpn, --epochs, "1", --max-steps, "{STEPS}",
       --batch-size, "2", --min-size, "64", --max-size, "64", --workers, "0",
       --log-every, "1", --eval-every, "1", --checkpoint-every, "{EVERY}", --amp, none,
       --device, cpu, --comm-check, "off", --trainable-backbone-layers, "0",
       --output-dir, /data/runs/rec]
"""
PHASE_SECONDS = 600.0  # only a hang reaches it: each wait polls for a state


@dataclass
class Scenario:
    env: dict[str, str]
    root: Path
    killed_rank_at: int = 0
    killed_pod_at: int = 0
    preempted_at: int = 0
    second_trainer: subprocess.CompletedProcess[str] | None = None
    while_preempted: dict[str, Any] = field(default_factory=dict)
    listed_while_preempted: str = ""
    tui_listed_while_preempted: str = ""
    final: dict[str, Any] = field(default_factory=dict)
    described: str = ""
    listed: str = ""

    @property
    def jobdir(self) -> Path:
        return Path(self.env["XDG_STATE_HOME"]) / "runai-tui/local/jobs/local/rec"

    @property
    def out(self) -> Path:
        return Path(self.env["XDG_DATA_HOME"]) / "runai-tui/local/pvc/project-001/runs/rec"

    def run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True,
                              timeout=timeout, env=self.env, cwd=REPO)  # fmt: skip

    def local(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return self.run("runai_local.cli", *argv)

    def describe(self, name: str = "rec") -> dict[str, Any]:
        done = self.local("training", "pytorch", "describe", name, "-o", "json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def log_lines(self) -> list[str]:
        """The master's log, the container before its last restart first."""
        lines: list[str] = []
        for previous in (True, False):
            path = state.JobPaths(self.jobdir).pod_log("rec-master-0", previous=previous)
            if path.exists():
                lines += path.read_text(errors="replace").splitlines()
        return lines

    def records(self, kind: str) -> list[dict[str, Any]]:
        found = []
        for line in self.log_lines():
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("kind") == kind:
                    found.append(record)
        return found

    def step(self) -> int:
        train = self.records("train")
        return train[-1]["step"] if train else 0


def until(check: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + PHASE_SECONDS
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.5)


def trainer_pid(sc: Scenario, pod: str) -> int:
    """The trainer process (not torchrun) of POD."""
    for pid in state.processes_of_job(sc.jobdir, pod):
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if b"trainer" in argv and not any(b"torchrun" in a or b".run" in a for a in argv):
            return pid
    return 0


def past(sc: Scenario, step: int) -> Callable[[], bool]:
    return lambda: sc.step() >= step and sc.describe()["phase"] == "Running"


def second_trainer(sc: Scenario) -> subprocess.CompletedProcess[str]:
    """A plain trainer started by hand on the job's output dir while the job runs."""
    env = {k: v for k, v in sc.env.items() if not k.startswith(("RUNAI_", "RANK"))}
    return subprocess.run(
        [sys.executable, "-m", "trainer", "--dataset", "synthetic", "--output-dir", str(sc.out)],
        capture_output=True, text=True, timeout=120, env=env, cwd=REPO,
    )  # fmt: skip


def faults(sc: Scenario) -> None:
    assert sc.run("runai_tui.cli", "submit", "--profile", "rec").returncode == 0
    until(past(sc, 6), "step 6")
    sc.second_trainer = second_trainer(sc)
    sc.killed_rank_at = sc.step()
    os.kill(until(lambda: trainer_pid(sc, "rec-worker-0"), "the worker's trainer"), signal.SIGKILL)
    until(lambda: len(sc.records("resume")) == 1, "the resume after the killed rank")
    until(past(sc, sc.killed_rank_at + EVERY + 1), "steps past the first fault")
    sc.killed_pod_at = sc.step()
    pod = next(p for p in sc.describe()["pods"] if p["name"] == "rec-worker-0")
    os.killpg(pod["pid"], signal.SIGKILL)
    until(lambda: len(sc.records("resume")) == 2, "the resume after the killed pod")
    until(past(sc, sc.killed_pod_at + EVERY + 1), "steps past the second fault")
    gate = sc.root / "gate"
    urgent = sc.local("training", "pytorch", "submit", "urgent", "--workers", "1", "--priority",
                      "high", "--command", "--", "sh", "-c",
                      f'while [ ! -e "{gate}" ]; do sleep 0.2; done')  # fmt: skip
    assert urgent.returncode == 0, urgent.stderr
    sc.while_preempted = until(
        lambda: (d := sc.describe())["phase"] == "Pending" and d["preemptions"] and d, "Pending"
    )
    sc.preempted_at = sc.step()
    until(lambda: sc.describe("urgent")["phase"] == "Running", "the urgent job to run")
    sc.listed_while_preempted = sc.local("training", "list").stdout
    sc.tui_listed_while_preempted = sc.run("runai_tui.cli", "--backend", "local", "list").stdout
    gate.touch()
    sc.final = until(lambda: (d := sc.describe())["phase"] in ("Completed", "Failed") and d, "end")
    sc.described = sc.run("runai_tui.cli", "--backend", "local", "describe", "rec").stdout
    sc.listed = sc.run("runai_tui.cli", "--backend", "local", "list").stdout


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    root = tmp_path_factory.mktemp("recovery")
    env = isolated_env(root, RUNAI_LOCAL_MAX_PODS="2")
    profiles = root / "xdg_config_home" / "runai-tui" / "profiles"
    (profiles / "rec.yaml").write_text(PROFILE)
    sc = Scenario(env, root)
    try:
        faults(sc)
        yield sc
    finally:
        for name in ("urgent", "rec"):
            sc.local("training", "pytorch", "delete", name)


def segments(sc: Scenario) -> list[tuple[dict[str, Any] | None, list[int]]]:
    """The train steps in the order they ran, one segment per start: (the resume record that
    began it, None for the first; its steps)."""
    runs: list[tuple[dict[str, Any] | None, list[int]]] = [(None, [])]
    for line in sc.log_lines():
        record = json.loads(line) if line.startswith("{") else {}
        if record.get("kind") == "resume":
            runs.append((record, []))
        elif record.get("kind") == "train":
            runs[-1][1].append(record["step"])
    return runs


def test_the_job_completes_in_place_with_the_planned_steps(scenario: Scenario) -> None:
    final = scenario.final
    assert final["phase"] == "Completed", final["message"]
    assert scenario.records("done")[-1]["step"] == STEPS
    restarts = {p["name"]: p["restartCount"] for p in final["pods"]}
    assert restarts["rec-worker-0"] >= 1  # the killed pod came back; the killed rank did not
    kept = [json.loads(x) for x in (scenario.out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in kept if r["kind"] == "train"] == list(range(1, STEPS + 1))


def test_every_step_after_the_last_checkpoint_is_trained_again_once_and_none_skipped(
    scenario: Scenario,
) -> None:
    runs = segments(scenario)
    assert len(runs) == 4  # the first start, then a rank, a pod, a preemption
    assert runs[0][1] == list(range(1, len(runs[0][1]) + 1))
    assert runs[-1][1][-1] == STEPS
    for (_, before), (resume, after) in zip(runs, runs[1:], strict=False):
        assert resume is not None
        assert after == list(range(resume["step"] + 1, after[-1] + 1))  # none skipped
        assert resume["step"] % EVERY == 0 or resume["step"] == before[-1]  # a checkpoint
        assert resume["lost"] == before[-1] - resume["step"]  # trained again, once each
        assert 0 <= resume["lost"] <= EVERY
    assert runs[-1][0] is not None
    assert runs[-1][0]["lost_total"] == sum(r["lost"] for r, _ in runs[1:] if r is not None)


def test_a_preempted_job_waits_pending_checkpoints_on_sigterm_and_resumes(
    scenario: Scenario,
) -> None:
    waiting = scenario.while_preempted
    assert waiting["message"].startswith("preempted by higher-priority workload urgent")
    rows = [line.split() for line in scenario.listed_while_preempted.splitlines()]
    assert ["rec", "Training", "Pending"] in [row[:3] for row in rows]
    assert ["urgent", "Training", "Running"] in [row[:3] for row in rows]
    ours = next(r for r in scenario.tui_listed_while_preempted.splitlines() if r.startswith("rec "))
    assert ours.split()[1:4] == ["Pending", "(preempted", "1x)"]
    # The trainer's own file, not the pod's log: the cluster keeps the log of the container before
    # the last restart and the current one, and once (a clean-clone run) the preempted
    # container's save line was in neither while metrics.jsonl held the stop. `stopped` is
    # written after the save.
    kept = [json.loads(x) for x in (scenario.out / "metrics.jsonl").read_text().splitlines()]
    stops = [i for i, r in enumerate(kept) if r["kind"] == "stopped"]
    assert len(stops) == 1, [r["kind"] for r in kept]
    stopped_at = kept[stops[0]]["step"]
    after = next(r for r in kept[stops[0] :] if r["kind"] == "resume")
    # Resumed from the checkpoint saved on SIGTERM (a later rotation may have deleted its file).
    assert (after["step"], after["lost"]) == (stopped_at, 0)
    preemption = scenario.records("resume")[-1]
    assert preemption["lost"] <= EVERY  # at most the checkpoint interval (0: saved on SIGTERM)
    final = scenario.final
    assert final["preemptions"] == 1
    assert [e["reason"] for e in final["events"]].count("Preempted") == 1


def test_a_second_trainer_on_the_jobs_output_dir_refuses_in_one_line(scenario: Scenario) -> None:
    done = scenario.second_trainer
    assert done is not None and done.returncode == 2, done
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"trainer: error: --output-dir {scenario.out} is in use by another ")
    assert "job rec (pod rec-master-0, pid " in line


def test_describe_and_list_show_restarts_preemptions_and_steps_lost(scenario: Scenario) -> None:
    lost = scenario.records("resume")[-1]["lost_total"]
    assert f"Recovery: 3 resumes, 1 preemption, {lost} steps lost" in scenario.described
    row = next(line for line in scenario.listed.splitlines() if line.startswith("rec "))
    assert row.split()[1] == "Completed"
