"""`runai-tui lint`, `runai-tui plan` and the checks of `submit`, as a user runs them (a real
`runai-tui` subprocess; a fake `runai` where a cluster is needed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.core.test_cli import run, user_profile
from tests.fakes import fake_runai, rule

LINE = re.compile(r"^[\w.-]+: (error|warning|info): [a-z-]+: [\w./-]+: .+ \(fix: .+\)$")
# The one shape of a finding (Finding.to_dict), with the profile it is about.
FINDING_KEYS = {"profile", "code", "severity", "message", "fix", "field", "pod", "pods", "seen",
                "restarts", "line", "evidence", "ok", "remedy"}  # fmt: skip
PLAN_KEYS = {
    "pods",
    "processes_per_pod",
    "world_size",
    "batch_size",
    "grad_accum",
    "global_batch",
    "lr",
    "dataset_size",
    "steps_per_epoch",
    "total_steps",
    "parameters",
    "gradient_bytes",
    "allreduce_bytes_per_rank",
    "allreduce_seconds",
}
QUIET = """\
description: CPU-only, nothing to warn about
job_name: quiet
image: img:1
workers: 1
env: {NCCL_DEBUG: INFO, TORCH_FR_BUFFER_SIZE: "2000", TORCH_FR_DUMP_ON_TIMEOUT: "1"}
command: [sh, job.sh]
"""


def test_lint_every_profile_text_format_and_exit_1() -> None:
    out = run("lint")
    assert out.returncode == 1, out.stderr
    lines = [line for line in out.stdout.splitlines() if not line.startswith("  remedy: ")]
    assert lines and all(LINE.match(line) for line in lines), lines
    tcp = [line for line in lines if line.startswith("retinanet-tcp: ")]
    assert tcp[0] == (
        "retinanet-tcp: warning: memory-unit: memory.request: memory.request 3846 has no unit: "
        "Kubernetes reads it as 3846 bytes, not MiB (fix: write the unit: --set "
        "memory.request=3846Mi (or 3846M, or e.g. 16Gi))"
    )
    assert {line.split(": ")[2] for line in tcp} == {
        "memory-unit",
        "cuda-visible-devices",
        "tcp-uncompressed-gradients",
        "nccl-debug-info",
    }
    assert {line.split(":")[0] for line in lines} >= {"retinanet-tcp", "retinanet-rdma"}
    assert "profile(s) checked" in out.stderr


def test_lint_json_shape() -> None:
    out = run("lint", "retinanet-tcp", "--json")
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert list(data) == ["findings"]
    assert all(set(f) == FINDING_KEYS for f in data["findings"])
    assert {f["profile"] for f in data["findings"]} == {"retinanet-tcp"}
    assert data["findings"][-1]["severity"] == "info"


def test_lint_exit_0_with_only_infos_and_by_path(tmp_path: Path) -> None:
    user_profile("quiet", QUIET)
    out = run("lint", "quiet")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "quiet: info: nccl-debug-info: env.NCCL_DEBUG: NCCL_DEBUG=INFO: right for a first run "
        "(it shows NET/IB or NET/Socket), noisy in production (fix: once the transport is "
        "confirmed: --set env.NCCL_DEBUG=WARN)",
        "  remedy: --set env.NCCL_DEBUG=WARN  (once the transport is confirmed)",
    ]
    path = tmp_path / "elsewhere.yaml"
    path.write_text(QUIET)
    by_path = run("lint", str(path), "--json")
    assert by_path.returncode == 0
    assert [f["profile"] for f in json.loads(by_path.stdout)["findings"]] == [str(path)]


def test_lint_set_overrides_fix_and_raise_findings() -> None:
    fixed = run(
        "lint",
        "retinanet-tcp",
        "--set",
        "memory.request=3846Mi",
        "--set",
        "memory.limit=8996Mi",
        "--set",
        "env.NCCL_DEBUG=WARN",
        "--set",
        "args=[--ddp-comm-hook,bf16]",
        "--json",
    )
    assert [f["code"] for f in json.loads(fixed.stdout)["findings"]] == ["cuda-visible-devices"]
    worse = run("lint", "retinanet-tcp", "--set", "gpus=2", "--json")
    errors = [f for f in json.loads(worse.stdout)["findings"] if f["severity"] == "error"]
    assert [f["code"] for f in errors] == ["cuda-visible-devices"]


def test_lint_exit_2_for_invalid_profiles_and_bad_sets() -> None:
    user_profile("broken", "image: a\nworkers: two\n")
    out = run("lint")
    assert out.returncode == 2
    assert "broken.yaml:2: workers:" in out.stderr
    assert "retinanet-tcp: warning: memory-unit" in out.stdout  # the valid ones are still linted
    assert run("lint", "nope").returncode == 2
    bad_set = run("lint", "retinanet-tcp", "--set", "gpu=1")
    assert bad_set.returncode == 2 and "error: --set gpu=1" in bad_set.stderr


def test_submit_prints_findings_and_strict_refuses(tmp_path: Path) -> None:
    dry = run("submit", "--profile", "retinanet-tcp", "--dry-run")
    assert dry.returncode == 0
    assert len(dry.stdout.splitlines()) == 1  # the seed command, unchanged
    assert dry.stderr.splitlines()[:3] == [
        "warning: memory-unit: memory.request 3846 has no unit: Kubernetes reads it as 3846 "
        "bytes, not MiB",
        "warning: memory-unit: memory.limit 8996 has no unit: Kubernetes reads it as 8996 "
        "bytes, not MiB",
        "warning: cuda-visible-devices: CUDA_VISIBLE_DEVICES='0' overrides the device plugin's "
        "choice: harmless with one GPU per pod, wrong as soon as a pod gets two",
    ]
    assert "nccl-debug-info" not in dry.stderr  # infos are for lint

    fake = fake_runai(tmp_path, [rule("pytorch", "submit", stdout="Creating...\n")])
    strict = run("submit", "--profile", "retinanet-tcp", "--strict", env=fake.env())
    assert strict.returncode == 2 and strict.stdout == ""
    assert "error: --strict: not submitting: 3 finding(s)" in strict.stderr
    assert fake.calls() == []  # nothing reached runai
    loose = run("submit", "--profile", "retinanet-tcp", env=fake.env())
    assert loose.returncode == 0 and "warning: memory-unit" in loose.stderr
    assert fake.calls()[-1][:4] == ["training", "pytorch", "submit", "retinanet-tcp"]
    user_profile("quiet", QUIET)
    clean = run("submit", "--profile", "quiet", "--strict", env=fake.env())
    assert clean.returncode == 0 and clean.stderr == ""


def test_plan_text_and_json(tmp_path: Path) -> None:
    fake = fake_runai(tmp_path, [rule("logs", stderr="workload 'x' could not be found\n", exit=1)])
    text = run("plan", "retinanet-tcp", env=fake.env())
    assert text.returncode == 0, text.stderr
    assert "world size: 3" in text.stdout and "global batch: 6" in text.stdout
    assert "steps per epoch: 290,507" in text.stdout
    assert "measured step time: none (no job named retinanet-tcp)" in text.stdout

    data = json.loads(
        run(
            "plan",
            "retinanet-tcp",
            "--set",
            "workers=7",
            "--dataset-size",
            "1000",
            "--json",
            "--no-measure",
        ).stdout
    )
    assert set(data) >= PLAN_KEYS
    assert set(data["allreduce_seconds"]) == {"tcp_25gbps", "ib_200gbps"}
    assert (data["world_size"], data["global_batch"], data["steps_per_epoch"]) == (8, 16, 62)
    assert data["dataset_source"] == "--dataset-size" and data["lr"] == 0.02


def test_plan_measures_the_job_of_the_same_profile(tmp_path: Path) -> None:
    records = "".join(
        f'{{"kind": "train", "step": {s}, "loss": 1.0, "step_time": 0.5}}\n' for s in (20, 40, 60)
    )
    fake = fake_runai(tmp_path, [rule("pytorch", "logs", "retinanet-tcp", stdout=records)])
    data = json.loads(run("plan", "retinanet-tcp", "--json", env=fake.env()).stdout)
    assert data["measured"]["job"] == "retinanet-tcp" and data["measured"]["step_time"] == 0.5
    assert 0 < data["measured"]["allreduce_share"]["tcp_25gbps"] < 1


def test_plan_usage_errors() -> None:
    user_profile("quiet", QUIET)
    out = run("plan", "quiet", "--no-measure")
    assert out.returncode == 2
    assert out.stderr.startswith("error: profile 'quiet' does not run the trainer")
    assert "hint: " in out.stderr
    zero = run("plan", "retinanet-tcp", "--dataset-size", "0", "--no-measure")
    assert zero.returncode == 2 and "--dataset-size 0" in zero.stderr
    bad = run("plan", "retinanet-tcp", "--set", "args=[--batch-size, two]", "--no-measure")
    assert bad.returncode == 2 and "--batch-size 'two'" in bad.stderr


def test_lint_and_plan_load_neither_textual_nor_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys, io, contextlib\n"
        "from runai_tui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    assert main(['lint']) == 1\n"
        "    assert main(['plan', 'retinanet-tcp', '--no-measure', '--json']) == 0\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'torch', 'rich'))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_lint_offers_a_remedy_under_a_finding_that_has_one() -> None:
    out = run("lint", "retinanet-tcp", "--set", "large_shm=false")
    lines = out.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if ": shm-loader-workers: " in line)
    assert lines[at + 1] == (
        "  remedy: --set large_shm=true  (a large /dev/shm (--large-shm) for the DataLoader workers)"
    )
    data = json.loads(run("lint", "retinanet-tcp", "--set", "large_shm=false", "--json").stdout)
    remedies = {f["code"]: f["remedy"] for f in data["findings"]}
    assert remedies["shm-loader-workers"]["set"] == ["large_shm=true"]
    # A fix that is an override is the finding's remedy, an object as every other remedy.
    unit = next(f for f in data["findings"] if f["code"] == "memory-unit")
    assert unit["fix"].startswith("write the unit: --set memory.request=3846Mi")
    assert unit["remedy"] == {"set": ["memory.request=3846Mi"], "why": "write the unit"}
    at = lines.index(next(line for line in lines if ": memory-unit: memory.request" in line))
    assert lines[at + 1] == "  remedy: --set memory.request=3846Mi  (write the unit)"
    assert remedies["cuda-visible-devices"] is None  # its fix deletes a key: no override
    hook = remedies["tcp-uncompressed-gradients"]  # the words after the override say what it does
    assert hook == {
        "set": ["trainer.ddp-comm-hook=bf16"],
        "why": "half the bytes; powersgd:2 cuts them ~10x or more",
    }


def test_lint_step_time_spaces_the_checkpoints_in_minutes() -> None:
    at = run("lint", "retinanet-tcp", "--set", "trainer.checkpoint-every=1000")
    assert "checkpoint-interval" not in at.stdout  # 1000 steps at the assumed 1 s: 17 minutes
    slow = run(
        "lint", "retinanet-tcp", "--step-time", "3", "--set", "trainer.checkpoint-every=1000"
    )
    assert slow.returncode == 1
    assert (
        "checkpoint-interval: args: --checkpoint-every 1000: checkpoints every 1000 steps, "
        "50 min apart (3 s a step, measured)" in slow.stdout
    )
    bad = run("lint", "--step-time", "0")
    assert bad.returncode == 2 and bad.stderr.startswith("error: argument --step-time: '0': ")
