"""Sweeps without a cluster: the grid's parsing, the product, the names and their checks, the sweep
ID, and the record's sweep fields (old records still readable)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runai_local import jobspec
from runai_tui.knowledge.plan import make_plan
from runai_tui.profiles import ProfileStore, apply_overrides, submission_record
from runai_tui.shapes.errors import UsageError
from runai_tui.workflows import sweep
from tests.core.test_cli import run
from tests.fakes import fake_runai, rule


def test_grid_values_split_on_commas_outside_brackets() -> None:
    axes = sweep.parse_grid(["trainer.lr=0.01, 0.02,0.04", "args=[a,b],[c]"])
    assert axes == [
        sweep.Axis("trainer.lr", ("0.01", "0.02", "0.04")),
        sweep.Axis("args", ("[a,b]", "[c]")),
    ]


def test_the_product_varies_the_first_grid_slowest() -> None:
    axes = sweep.parse_grid(["trainer.lr=0.01,0.02", "trainer.batch-size=2,4,8"])
    combos = sweep.combinations(axes)
    assert len(combos) == 6
    assert combos[0] == {"trainer.lr": "0.01", "trainer.batch-size": "2"}
    assert combos[1] == {"trainer.lr": "0.01", "trainer.batch-size": "4"}
    assert combos[3] == {"trainer.lr": "0.02", "trainer.batch-size": "2"}
    assert sweep.grid_sets(combos[5]) == ["trainer.lr=0.02", "trainer.batch-size=8"]


@pytest.mark.parametrize(
    ("items", "said"),
    [
        ([], "at least one --grid"),
        (["trainer.lr"], "expected FIELD=V1,V2"),
        (["=0.1,0.2"], "expected FIELD=V1,V2"),
        (["trainer.lr="], "expected FIELD=V1,V2"),
        (["trainer.lr=0.1,,0.2"], "an empty value"),
        (["trainer.lr=0.1,0.1"], "'0.1' is given twice"),
        (["trainer.batch-size=2", "trainer.batch_size=4"], "already a grid"),
    ],
)
def test_a_malformed_grid_is_one_usage_error(items: list[str], said: str) -> None:
    with pytest.raises(UsageError) as caught:
        sweep.parse_grid(items)
    assert said in caught.value.message
    assert caught.value.exit_code == 2


def test_names_count_from_one_and_leave_room_for_pod_suffixes() -> None:
    assert sweep.names_for("lr", 3) == ["lr-1", "lr-2", "lr-3"]
    assert sweep.names_for("a" * 47, 9)[-1] == "a" * 47 + "-9"
    assert sweep.names_for("a" * 47, 10)[-1] == "a" * 47 + "-10"  # 50 characters
    with pytest.raises(UsageError, match="at most 50"):
        sweep.names_for("a" * 48, 10)
    with pytest.raises(UsageError, match="DNS-1123"):
        sweep.names_for("Bad_Name", 2)


def test_the_name_limit_is_the_local_clusters() -> None:
    assert sweep.MAX_JOB_NAME == jobspec.MAX_NAME


def test_taken_names_are_all_named() -> None:
    with pytest.raises(UsageError) as caught:
        sweep.check_free(["lr-1", "lr-2", "lr-3"], ["lr-2", "other", "lr-3"], "lr")
    assert "lr-2, lr-3 are taken: nothing submitted" in caught.value.message
    sweep.check_free(["lr-1"], ["lr-10", "lr"], "lr")  # a prefix of a name is no clash


def test_sweep_ids_carry_their_prefix() -> None:
    made = sweep.new_id("retinanet-lr")
    assert sweep.id_prefix(made) == "retinanet-lr"
    assert made != sweep.new_id("retinanet-lr")
    for bad in ("retinanet-lr", "lr.XYZ123", "lr.abc", "Lr.abcdef", ".abcdef"):
        with pytest.raises(UsageError, match="not a sweep ID"):
            sweep.id_prefix(bad)


def test_the_record_carries_the_sweep_and_its_values() -> None:
    record = submission_record.Record(
        "retinanet-local", ("trainer.lr=0.02",), {"job_name": "x"}, "lr-2", (), "lr.0a1b2c",
        {"trainer.lr": "0.02"},
    )  # fmt: skip
    back = submission_record.decode(record.encode())
    assert back == record
    assert json.loads(record.encode())["v"] == submission_record.VERSION


def test_a_record_without_a_sweep_reads_as_before() -> None:
    old = {"v": 2, "profile": "p", "sets": [], "data": {}}
    back = submission_record.decode(json.dumps(old))
    assert back.sweep is None
    assert back.values == {}
    assert "sweep" not in submission_record.Record("p").encode()
    with pytest.raises(ValueError, match="sweep values"):
        submission_record.decode(json.dumps({**old, "sweep": "p.000000", "values": {"a": 1}}))


def _without_record(argv: list[str]) -> list[str]:
    return [w for w in argv if not w.startswith(submission_record.ANNOTATION + "=")]


def test_the_dry_run_prints_submits_commands_with_the_sweep_in_each_record() -> None:
    res = run("sweep", "--profile", "retinanet-local", "--grid", "trainer.lr=0.01,0.02",
              "--set", "env.NCCL_DEBUG=WARN", "--name", "lr", "--dry-run", "--json",
              env={"RUNAI_TUI_BACKEND": "local"})  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert sweep.id_prefix(doc["sweep"]) == "lr"
    assert [(j["name"], j["values"]) for j in doc["jobs"]] == [
        ("lr-1", {"trainer.lr": "0.01"}), ("lr-2", {"trainer.lr": "0.02"}),
    ]  # fmt: skip
    for job in doc["jobs"]:
        rate = job["values"]["trainer.lr"]
        sets = ["--set", "env.NCCL_DEBUG=WARN", "--set", f"trainer.lr={rate}", "--set",
                f"trainer.output-dir=/data/runs/retinanet-local/{job['name']}"]  # fmt: skip
        alone = run("submit", "--profile", "retinanet-local", "--name", job["name"], *sets,
                    "--dry-run", "--json", env={"RUNAI_TUI_BACKEND": "local"})  # fmt: skip
        assert _without_record(job["argv"]) == _without_record(json.loads(alone.stdout)["argv"])
        record = submission_record.decode(
            submission_record.find({"annotations": dict(
                w.partition("=")[::2] for w in job["argv"] if w.startswith("runai-tui.io/")
            )}) or ""
        )  # fmt: skip
        assert (record.sweep, record.values, record.name) == (doc["sweep"], job["values"],
                                                              job["name"])  # fmt: skip
        assert record.sets[0] == "env.NCCL_DEBUG=WARN"


def test_the_sweep_plan_sums_jobs_pods_gpus_and_gpu_hours(tmp_path: Path) -> None:
    records = "".join(
        f'{{"kind": "train", "step": {s}, "loss": 1.0, "step_time": 0.5}}\n' for s in (20, 40, 60)
    )
    fake = fake_runai(tmp_path, [rule("pytorch", "logs", "retinanet-tcp", stdout=records)])
    res = run("sweep", "--profile", "retinanet-tcp", "--grid", "trainer.batch-size=2,4",
              "--grid", "workers=1,2", "--plan", "--json", env=fake.env())  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["step_time"]["seconds"] == 0.5
    assert doc["step_time"]["source"].startswith("measured from job retinanet-tcp")
    base = ProfileStore().load("retinanet-tcp")  # 1 GPU a pod, the master's too
    hours = 0.0
    for job, (batch, workers) in zip(doc["jobs"], [(2, 1), (2, 2), (4, 1), (4, 2)], strict=True):
        profile = apply_overrides(base, [f"trainer.batch-size={batch}", f"workers={workers}"])
        plan = make_plan(profile)
        assert (job["pods"], job["gpus"]) == (workers + 1, workers + 1)
        assert (job["global_batch"], job["total_steps"]) == (plan.global_batch, plan.total_steps)
        assert job["gpu_hours"] == pytest.approx(plan.total_steps * 0.5 / 3600 * (workers + 1))
        hours += job["gpu_hours"]
    assert doc["total"] == {"jobs": 4, "pods": 10, "gpus": 10, "hours": pytest.approx(
        sum(j["hours"] for j in doc["jobs"])), "gpu_hours": pytest.approx(hours)}  # fmt: skip
    text = run("sweep", "--profile", "retinanet-tcp", "--grid", "trainer.batch-size=2,4",
               "--plan", "--step-time", "2", "--job", "ghost", env=fake.env())  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert "in all: 2 jobs, 6 pods, 6 GPUs; " in text.stdout
    assert "step time: --step-time 2 s (estimate; measured: " in text.stdout
    assert "note: the jobs' batches differ" in text.stdout


def test_usage_errors_say_one_line_and_exit_2() -> None:
    cases = [
        (["--grid", "trainer.lr=1", "--job", "x"], "--dataset-size, --job and --step-time go"),
        (["--grid", "trainer.lrr=1,2"], "--grid trainer.lrr: not a flag of the trainer"),
        (["--grid", "trainer.lr=1", "--set", "workers=x"], "--set workers=x: workers: 'x'"),
        (["--grid", "trainer.lr=1", "--name", "Bad"], "job name 'Bad-1'"),
        (
            ["--grid", "trainer.lr=1", "--plan", "--step-time", "0"],
            "argument --step-time: '0': must be",
        ),
    ]
    for extra, said in cases:
        res = run("sweep", "--profile", "retinanet-local", "--dry-run", *extra,
                  env={"RUNAI_TUI_BACKEND": "local"})  # fmt: skip
        assert res.returncode == 2, (extra, res.stderr)
        assert res.stderr.startswith(f"error: {said}"), (extra, res.stderr)
        assert "Traceback" not in res.stderr
