"""The product path: `runai-tui` (auto backend, no runai installed) driving the local cluster.

Each command is a new `runai-tui` process, so a job submitted by one is seen by the next.
The RetinaNet test trains for real (2 CPU processes, gloo) and is marked slow.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.local.conftest import describe, pid_alive, wait_until

RUNAI_TUI = [sys.executable, "-c", "import sys; from runai_tui.cli import main; sys.exit(main())"]


def tui(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    # No `runai` on PATH: auto selects the local cluster, as on a laptop.
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    return subprocess.run(
        [*RUNAI_TUI, *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def jobs() -> dict[str, dict]:
    res = tui("list", "--json")
    assert res.returncode == 0, res.stderr
    return {job["name"]: job for job in json.loads(res.stdout)}


@pytest.fixture
def user_profile() -> Path:
    pytest.importorskip("runai_tui.cli")
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "hello.yaml"
    path.write_text(
        "description: two pods that print their rank and wait\n"
        "job_name: hello\n"
        "image: busybox:1\n"
        "workers: 1\n"
        "env: {GREETING: hi}\n"
        "command: [sh, -c, 'echo $GREETING rank $RANK of $WORLD_SIZE; sleep 300']\n"
    )
    return path


def test_a_new_runai_tui_process_sees_jobs_of_an_earlier_one(user_profile: Path) -> None:
    assert shutil.which("runai", path=str(Path(sys.executable).parent)) is None
    res = tui("submit", "--profile", "hello")
    assert res.returncode == 0, res.stderr
    assert "LOCAL" in res.stdout  # every surface says jobs are local
    job = wait_until(
        lambda: jobs().get("hello", {}).get("status") == "Running" and jobs()["hello"],
        "hello to run",
    )
    assert job["requested_pods"] == 2 and job["project"] == "local"
    late = tui("wait", "hello", "--for", "completed", "--timeout", "0", "--json")
    assert late.returncode == 2 and json.loads(late.stdout)["outcome"] == "timeout"
    wait_until(lambda: tui("logs", "hello").stdout == "hi rank 0 of 2\n", "master log line")
    res = tui("logs", "hello", "--pod", "hello-worker-0")
    assert res.stdout == "hi rank 1 of 2\n"
    res = tui("exec", "hello", "--", "sh", "-c", "echo $GREETING $RANK")
    assert res.returncode == 0 and res.stdout == "hi 0\n", res.stderr
    detail = json.loads(tui("describe", "hello", "--json").stdout)
    assert [pod["name"] for pod in detail["pods"]] == ["hello-master-0", "hello-worker-0"]
    pids = [pod["pid"] for pod in describe("hello")["pods"]]  # runai-local's own view
    assert len(pids) == 2 and all(pid_alive(pid) for pid in pids)
    res = tui("delete", "hello", "--yes")
    assert res.returncode == 0, res.stderr
    assert "hello" not in jobs()
    assert [pid for pid in pids if pid_alive(pid)] == []


# retinanet-local's own arguments, its `--amp auto` included, but ResNet-18 at 64 px for its
# ResNet-50 v2 at 128 px: P6 and P7 are 1x1 at 64 px, the run that met a NaN in bf16 on an
# AVX-512-BF16 CPU before those levels ran in fp32 (trainer/README.md, bf16 on a CPU). On a CPU
# without native bf16, auto takes fp32 with no trial step; with it, 3 passes in each precision
# at this size (tests/trainer/test_amp.py tests both answers).
STEPS = 10  # two checkpoints: at 5, and the last
SMALL_RETINANET = f"""\
extends: retinanet-local
args: [--dataset, synthetic, --epochs, "1", --max-steps, "{STEPS}", --batch-size, "2",
       --model, retinanet_resnet18_fpn, --min-size, "64", --max-size, "64", --workers, "0",
       --output-dir, /data/runs/retinanet-local, --checkpoint-every, "{STEPS // 2}",
       --log-every, "1", --eval-every, "1", --amp, auto]
"""


@pytest.mark.slow
def test_retinanet_local_trains_to_completed_with_a_checkpoint_on_the_pvc(repo_root: Path) -> None:
    pytest.importorskip("runai_tui.cli")
    pytest.importorskip("torch")
    if not (repo_root / "scripts" / "train-retinanet-ddp.sh").is_file():
        pytest.skip("scripts/train-retinanet-ddp.sh (the trainer's entry script) is not there yet")
    # The shipped profile with a smaller model: this test is about the path from `submit` to the
    # checkpoint on the PVC, not the model (tests/trainer/test_plan_tables.py shows the shipped
    # profile's own words are a run the trainer takes).
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "retinanet-small.yaml").write_text(SMALL_RETINANET)
    res = tui("submit", "--profile", "retinanet-small")
    assert res.returncode == 0, res.stderr
    check_wait_while_running("retinanet-local")
    # `logs -f` ends when the master pod ends.
    follow = tui("logs", "retinanet-local", "-f", timeout=900)
    assert follow.returncode == 0, follow.stderr
    job = wait_until(
        lambda: (
            jobs()["retinanet-local"]["status"] in ("Completed", "Failed")
            and jobs()["retinanet-local"]
        ),
        "retinanet-local to finish",
    )
    assert job["status"] == "Completed", follow.stdout[-3000:]
    assert "nnodes=2" in follow.stdout  # the entry script saw the 2-pod topology
    # The precision auto chose, and why: fp32 at once without native bf16, else measured.
    assert "precision: " in follow.stdout and " (--amp auto on CPU: " in follow.stdout
    metrics = [json.loads(line) for line in follow.stdout.splitlines() if line.startswith("{")]
    assert metrics[-1]["kind"] == "done" and metrics[-1]["step"] == STEPS
    pvc = Path(os.environ["XDG_DATA_HOME"]) / "runai-tui/local/pvc/project-001"
    checkpoints = sorted((pvc / "runs/retinanet-local/checkpoints").glob("*.pt"))
    assert [c.name for c in checkpoints] == ["step-000000005.pt", f"step-{STEPS:09d}.pt"]
    worker_log = tui("logs", "retinanet-local", "--pod", "retinanet-local-worker-0").stdout
    assert "node-rank=1" in worker_log
    check_ranks_metrics_and_wait_after_the_end("retinanet-local", metrics)
    check_a_healthy_run_has_no_flight_recorder_finding("retinanet-local", follow.stdout)
    res = tui("delete", "retinanet-local", "--yes")
    assert res.returncode == 0 and "retinanet-local" not in jobs()


def check_wait_while_running(name: str) -> None:
    """`wait` on a real job: bad input, then Running reached (the small run can be over by
    then: Completed passes too; the timeout is checked on the job that sleeps)."""
    bad = tui("wait", "no-such-job", "--interval", "0.2")
    assert bad.returncode == 2 and bad.stderr.startswith("error: unknown job 'no-such-job'")
    bad = tui("wait", name, "--for", "soon")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --for 'soon': not one of")
    running = tui("wait", name, "--for", "running", "--interval", "0.2", "--json", timeout=300)
    assert running.returncode == 0, running.stderr
    assert json.loads(running.stdout)["phase"] in ("Running", "Completed")


def check_ranks_metrics_and_wait_after_the_end(name: str, records: list[dict]) -> None:
    """Every rank's figures, as the real 2-pod run wrote them, through the headless commands."""
    done = tui("wait", name, "--for", "completed", "--timeout", "120", "--interval", "0.2")
    assert done.returncode == 0 and done.stdout.strip() == f"job {name} is Completed"
    ranks = json.loads(tui("ranks", name, "--json").stdout)
    assert ranks["pod"] == f"{name}-master-0"
    last_train = [r for r in records if r["kind"] == "train"][-1]
    assert [r["rank"] for r in ranks["ranks"]] == [0, 1]
    for r in ranks["ranks"]:
        assert r["step"] == STEPS and r["img_s"] > 0 and 0 <= r["data_time"] < r["step_time"]
        assert r["step_time"] == last_train["ranks"]["step_time"][r["rank"]]
        # The model's TFLOP/s on each rank; no MFU: a CPU has no datasheet peak.
        assert r["tflops"] == last_train["ranks"]["tflops"][r["rank"]] and r["tflops"] > 0
        assert r["mfu"] is None and "mfu" not in last_train
    assert ranks["total"]["tflops"] == sum(r["tflops"] for r in ranks["ranks"])
    assert ranks["total"]["mfu"] is None
    text = tui("ranks", name).stdout
    assert "RANK  STEP  IMG/S" in text and len(text.splitlines()) == 5
    assert text.splitlines()[1].split()[-3:] == ["TFLOP/S", "MFU", "AGE"]
    assert text.splitlines()[-1].startswith("job ")  # the job's sums, below its ranks
    csv_rows = tui("metrics", name, "--csv").stdout.splitlines()
    assert csv_rows[0].startswith("pod,rank,kind,step,epoch,time,")
    train_rows = [r for r in csv_rows[1:] if ",train," in r]
    assert len(train_rows) == 2 * STEPS  # one row per record and rank
    assert {r.split(",")[1] for r in train_rows} == {"0", "1"}
    rows = json.loads(tui("metrics", name, "--json").stdout)
    assert {r["pod"] for r in rows} == {f"{name}-master-0"}  # rank 0's pod writes the records
    assert rows[-1]["kind"] == "done"


def check_a_healthy_run_has_no_flight_recorder_finding(name: str, log: str) -> None:
    """Every distributed run announces where its dumps would go; no rank hung, so none exists and
    diagnose has nothing to say about them (it once warned that the directory was unreadable)."""
    assert "flight recorder" in log  # the run said where dumps would go, or why it has none
    res = tui("diagnose", name, "--json")
    codes = [f["code"] for f in json.loads(res.stdout)["findings"]]
    assert not [c for c in codes if c.startswith(("flight-recorder", "hang-rank"))], codes
    assert res.returncode == 0, res.stdout
