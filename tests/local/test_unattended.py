"""A night on the local cluster, for real: a 2-pod job loses its worker pod mid-training (SIGKILL,
as a node that goes away), `watch --recover` submits it again and the chain completes from its
checkpoints; the watcher killed mid-chain and started again carries on and submits nothing
twice; a second watcher is refused; a job whose fault no retry cures stops its watcher with the
reason. The morning `report` and the post-mortem `bundle` read the same jobs. Apart, with no
trainer: a fault whose remedy is applied only with --apply-remedies.

One module-scoped night (`night`) serves every test: one trainer run and one resumed run
(ResNet-18 at 64 px, fp32, 12 steps), one fast failure.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.local.conftest import RUNAI_LOCAL, isolated_env

SECRET = "s3cr3t-token-for-the-bundle-test"
JOB, BAD = "wk", "wbad"
ARGS = """[--dataset, synthetic, --synthetic-train-images, "48", --synthetic-val-images, "2",
       --model, retinanet_resnet18_fpn, --epochs, "1", --max-steps, "12", --batch-size, "2",
       --min-size, "64", --max-size, "64", --workers, "0", --log-every, "1", --amp, none,
       --device, cpu, --checkpoint-every, "3", --comm-check, "off",
       --trainable-backbone-layers, "0", --output-dir, /data/runs/{name}
       {extra}]"""
# Recovery in place off: the pod's loss must fail the job, as when the backoff limit is spent.
PROFILE = """\
extends: retinanet-local
job_name: {name}
gpus: 1
master_gpus: 1
restart_policy: Never
backoff_limit: 0
env: {{HF_TOKEN: {secret}}}
args: {args}
"""


@dataclass
class Night:
    env: dict[str, str]
    first: list[dict[str, Any]] = field(default_factory=list)  # the killed watcher's events
    second: list[dict[str, Any]] = field(default_factory=list)  # the restarted one's
    second_err: str = ""
    second_code: int = -1
    refused: subprocess.CompletedProcess[str] | None = None
    bad: subprocess.CompletedProcess[str] | None = None
    first_pid: int = 0

    def tui(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "runai_tui.cli", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env,
        )

    def local(self, *args: str) -> Any:
        done = subprocess.run([*RUNAI_LOCAL, *args], capture_output=True, text=True,
                              env=self.env, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if "-o" in args else done.stdout

    def jobs(self) -> list[str]:
        return sorted(j["name"] for j in json.loads(self.tui("list", "--json").stdout))


def _env(root: Path) -> dict[str, str]:
    env = isolated_env(root, RUNAI_LOCAL_GPUS="4")
    profiles = root / "xdg_config_home" / "runai-tui" / "profiles"
    for name, extra in ((JOB, ""), (BAD, ", --dataset, openimages")):
        args = ARGS.format(name=name, extra=extra)
        (profiles / f"{name}.yaml").write_text(PROFILE.format(name=name, secret=SECRET, args=args))
    return env


def _until(check: Any, what: str, seconds: float = 300, pause: float = 1.0) -> Any:
    deadline = time.monotonic() + seconds
    while not (value := check()):
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(pause)
    return value


def _kill_worker_mid_training(night: Night) -> None:
    """SIGKILL the worker pod's main process (as if its node went away) once the run is past
    step 5 and off a checkpoint (every 3 steps), so that some steps are trained again."""

    def worker_pid() -> int | None:
        pods = night.local("training", "pytorch", "describe", JOB, "-o", "json")["pods"]
        return next((p["pid"] for p in pods if p["name"] == f"{JOB}-worker-0"), None)

    pid = _until(worker_pid, f"{JOB}'s worker pod to start")
    # The master's log file itself, read every tenth of a second: a `logs` process per look
    # would cost more than a step.
    log = Path(night.env["XDG_STATE_HOME"]) / "runai-tui/local/jobs/local" / JOB / "logs"

    def past_a_checkpoint() -> bool:
        try:
            text = (log / f"{JOB}-master-0.log").read_text(errors="replace")
        except OSError:
            return False
        steps = [int(m) for m in re.findall(r'"kind": "train", "step": (\d+)', text)]
        return bool(steps) and steps[-1] >= 5 and steps[-1] % 3 != 0

    _until(past_a_checkpoint, f"{JOB} to train 5 steps", pause=0.1)
    os.kill(pid, signal.SIGKILL)


def _watch(night: Night, *more: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "runai_tui.cli", "watch", JOB, "--recover", "--backoff", "0",
            "--interval", "2", "--json", *more]  # fmt: skip
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=night.env)  # fmt: skip


def _run_the_night(night: Night) -> None:
    _kill_worker_mid_training(night)
    first = _watch(night)
    night.first_pid = first.pid
    assert first.stdout is not None
    for line in first.stdout:
        night.first.append(json.loads(line))
        if night.first[-1]["event"] == "submitted":
            break
    night.refused = night.tui("watch", JOB, "--recover")
    first.send_signal(signal.SIGKILL)  # mid-chain, as a laptop that sleeps
    first.wait()
    second = _watch(night)
    out, night.second_err = second.communicate(timeout=600)
    night.second = [json.loads(line) for line in out.splitlines()]
    night.second_code = second.returncode


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Night]:
    night = Night(_env(tmp_path_factory.mktemp("night-xdg")))
    for name in (JOB, BAD):
        assert night.tui("submit", "--profile", name).returncode == 0
    try:
        bad = subprocess.Popen(
            [sys.executable, "-m", "runai_tui.cli", "watch", BAD, "--recover", "--interval", "2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=night.env,
        )  # fmt: skip
        _run_the_night(night)
        out, err = bad.communicate(timeout=300)
        night.bad = subprocess.CompletedProcess(bad.args, bad.returncode, out, err)
        yield night
    finally:
        for name in night.jobs():
            night.tui("delete", name, "--yes")


@pytest.mark.slow
def test_a_lost_pod_is_submitted_again_and_the_chain_completes_from_its_checkpoints(
    night: Night,
) -> None:
    failed = next(e for e in night.first if e["event"] == "failed")
    assert failed["verdict"]["action"] == "run again"
    assert failed["verdict"]["codes"] == ["pod-lost"]
    submitted = night.first[-1]
    assert submitted["submitted"] == f"{JOB}-r2" and submitted["overrides"] == []
    assert night.second_code == 0, night.second_err
    assert night.second[-1]["event"] == "completed" and night.second[-1]["job"] == f"{JOB}-r2"
    log = night.tui("logs", f"{JOB}-r2").stdout
    assert "trainer: resumed from" in log and '{"kind": "done"' in log
    # The chain is read from the cluster: the record of attempt 2 names its parent.
    described = night.local("training", "pytorch", "describe", f"{JOB}-r2", "-o", "json")
    record = json.loads(described["spec"]["annotations"]["runai-tui.io/submission"])
    assert (record["parent"], record["attempt"]) == (JOB, 2)


@pytest.mark.slow
def test_a_watcher_started_again_submits_nothing_twice_and_a_second_one_is_refused(
    night: Night,
) -> None:
    watching = night.second[0]
    assert watching["event"] == "watching"
    assert [a["job"] for a in watching["attempts"]] == [JOB, f"{JOB}-r2"]
    assert not [e for e in night.second if e["event"] == "submitted"]
    assert night.jobs() == [BAD, JOB, f"{JOB}-r2"]
    assert f"took over the watch lock of pid {night.first_pid} " in night.second_err
    assert night.refused is not None and night.refused.returncode == 1
    lines = night.refused.stderr.splitlines()
    assert lines[0].startswith(f"error: job {JOB} is already watched by pid {night.first_pid} ")
    assert len(lines) == 2 and lines[1].startswith("hint:")


@pytest.mark.slow
def test_a_fault_no_retry_cures_stops_the_watcher_with_its_reason(night: Night) -> None:
    assert night.bad is not None and night.bad.returncode == 1, night.bad.stderr
    last = night.bad.stdout.splitlines()[-1]
    assert f"{BAD} [attempt 1/3] stopped: not submitted again: trainer-error (no retry" in last
    assert f"{BAD}-r2" not in night.jobs()


@pytest.mark.slow
def test_the_report_gives_the_gpu_hours_and_the_steps_lost(night: Night) -> None:
    price = Path(night.env["XDG_CONFIG_HOME"]) / "runai-tui" / "config.toml"
    price.write_text("gpu_hour_price = 2.5\n")
    try:
        done = night.tui("report", "--since", "2h", "--json")
    finally:
        price.unlink()
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    rows = {row["job"]: row for row in doc["jobs"]}
    assert set(rows) == {JOB, BAD}
    chain = rows[JOB]
    assert chain["outcome"] == "Completed" and chain["attempts"] == 2
    assert [a["job"] for a in chain["chain"]] == [JOB, f"{JOB}-r2"]
    # Killed at step 5 or later with a checkpoint every 3 steps: 1 to 3 steps trained again.
    assert 1 <= chain["steps_lost"] <= 3
    assert all(a["gpus"] == 2 for a in chain["chain"])  # 1 master + 1 worker, 1 GPU each
    wall = sum(a["wall_seconds"] for a in chain["chain"])
    # Every run of every pod's container, a GPU each: no more than 2 GPUs over the wall time.
    assert chain["gpu_hours_basis"] == ["container runs"]
    assert 0 < chain["gpu_hours"] <= 2 * wall / 3600 + 1e-4
    assert 0 < chain["gpu_hours_lost"] < chain["gpu_hours"]
    assert chain["cost"] == pytest.approx(chain["gpu_hours"] * 2.5, abs=0.01)
    assert isinstance(chain["best_loss"], float) and chain["restarts"] == 0
    assert rows[BAD]["outcome"] == "Failed" and rows[BAD]["steps_lost"] == 0
    total = doc["total"]
    assert total["steps_lost"] == chain["steps_lost"] and total["attempts"] == 3
    assert total["gpu_hours"] == pytest.approx(chain["gpu_hours"] + rows[BAD]["gpu_hours"],
                                               abs=1e-3)  # fmt: skip
    text = night.tui("report").stdout.splitlines()
    assert text[0].split()[:3] == ["JOB", "OUTCOME", "ATTEMPTS"]
    assert text[-2].startswith("total")
    assert (
        text[-1] == "GPU-H from container runs: every run of every pod's container, its GPUs "
        "times its time (queue time excluded)"
    )


@pytest.mark.slow
def test_the_bundle_holds_every_pods_logs_and_no_secret(night: Night, tmp_path: Path) -> None:
    import tarfile

    out = tmp_path / "wk.tar.gz"
    done = night.tui("bundle", JOB, "-o", str(out))
    assert done.returncode == 0, done.stderr
    with tarfile.open(out) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    names = set(members)
    for member in ("describe.json", "events.json", "diagnosis.json", "submission.json",
                   "manifest.json", "run/run.json", "run/metrics.jsonl",
                   f"logs/{JOB}-master-0.log", f"logs/{JOB}-worker-0.log"):  # fmt: skip
        assert f"{JOB}/{member}" in names, sorted(names)
    assert b'"kind": "train"' in members[f"{JOB}/logs/{JOB}-master-0.log"]
    diagnosis = json.loads(members[f"{JOB}/diagnosis.json"])
    assert "pod-lost" in [f["code"] for f in diagnosis["findings"]]
    # The secret was in the submit argv describe shows (-e HF_TOKEN=…): never in the bundle.
    raw = night.local("training", "pytorch", "describe", JOB, "-o", "json")
    assert SECRET in json.dumps(raw)
    assert not [name for name, data in members.items() if SECRET.encode() in data]
    assert b"<redacted>" in members[f"{JOB}/describe.json"]
    manifest = json.loads(members[f"{JOB}/manifest.json"])
    assert manifest["secrets_redacted"] == 1


IFACE_CHECK = (
    'if [ "$GLOO_SOCKET_IFNAME" = lo ]; then echo joined; else echo "RuntimeError: [enforce fail '
    "at third_party/gloo/gloo/transport/tcp/device.cc:84] ifa != nullptr. Unable to find "
    'address for: $GLOO_SOCKET_IFNAME"; exit 1; fi'
)


@pytest.mark.slow
def test_a_fault_with_a_remedy_is_submitted_again_only_with_apply_remedies(
    tmp_path: Path,
) -> None:
    """No trainer: two pods that fail as Gloo does on an interface the machine lacks, and
    succeed on `lo`, the remedy diagnose computes here."""
    from tests.local.resubmit_loop import user_profile
    from tests.local.test_through_runai_tui import tui

    user_profile("ifx", f"job_name: ifx\nimage: x:1\nworkers: 1\n"
                        f"command: [sh, -c, {json.dumps(IFACE_CHECK)}]\n")  # fmt: skip
    done = tui("submit", "--profile", "ifx", "--set", "env.GLOO_SOCKET_IFNAME=nonexist0")
    assert done.returncode == 0, done.stderr
    watch = ("watch", "ifx", "--recover", "--backoff", "0", "--interval", "1")
    held = tui(*watch)
    assert held.returncode == 1
    assert held.stdout.splitlines()[-1].endswith(
        "ifx [attempt 1/3] stopped: not submitted again: remedies not applied without "
        "--apply-remedies (socket-ifname: --set env.GLOO_SOCKET_IFNAME=lo)"
    )
    fixed = tui(*watch, "--apply-remedies")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    # No trainer, no checkpoint: the line does not promise a resume.
    assert ("submitted ifx-r2 (attempt 2 of 3) with --set env.GLOO_SOCKET_IFNAME=lo, from the "
            "start: ifx left no checkpoint to resume from") in fixed.stdout  # fmt: skip
    assert fixed.stdout.splitlines()[-1].endswith(
        "ifx-r2 [attempt 2/3] completed: ifx-r2 completed"
    )
    # The new record keeps the field once, the remedy's value: not nonexist0, then lo.
    described = json.loads(tui("describe", "ifx-r2", "--json").stdout or "{}")
    assert described["status"] == "Completed"
    record = json.loads(
        json.loads(
            subprocess.run(
                [*RUNAI_LOCAL, "training", "pytorch", "describe", "ifx-r2", "-o", "json"],
                capture_output=True,
                text=True,
            ).stdout  # fmt: skip
        )["spec"]["annotations"]["runai-tui.io/submission"]
    )
    assert record["sets"] == ["env.GLOO_SOCKET_IFNAME=lo"]
    assert (record["parent"], record["attempt"]) == ("ifx", 2)
