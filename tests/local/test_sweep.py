"""`runai-tui sweep` on the real local cluster: three short training jobs that differ in learning
rate, each run to completion (the shared `lr_sweep`); the sweep as one thing afterwards (list,
wait, the verbs, the TUI's mark-the-sweep key); a bad grid and taken names that submit nothing;
a failure part-way and the one command that deletes what was submitted; the sweep's runs
compared (`compare --sweep ID`, by name beside a job that never logged, two of them as jobs and
as run directories, `=` in the TUI)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runai_tui.profiles import submission_record
from runai_tui.runai.backend import select_backend
from runai_tui.runai.client import RunaiClient
from runai_tui.tui.screens.compare import CompareScreen, RunsCurves
from runai_tui.tui.screens.jobs import JobsScreen
from tests.local.conftest import SWEEP_RATES, LocalSweep, gate_command, run_local
from tests.local.test_through_runai_tui import tui
from tests.tui.helpers import RecordingApp, notifications, wait_for
from tests.tui.screen_text import screen_text


def listed() -> list[str]:
    res = tui("list", "--json")
    assert res.returncode == 0, res.stderr
    return sorted(job["name"] for job in json.loads(res.stdout))


@pytest.mark.slow
def test_a_sweep_of_three_learning_rates_runs_each_job_to_completion(
    lr_sweep: LocalSweep,
) -> None:
    assert lr_sweep.names == ["lr-1", "lr-2", "lr-3"]
    assert [job["values"] for job in lr_sweep.submitted["jobs"]] == [
        {"trainer.lr": rate} for rate in SWEEP_RATES
    ]
    assert lr_sweep.waited["sweep"] == lr_sweep.id
    ended = {r["job"]: (r["outcome"], r["phase"]) for r in lr_sweep.waited["jobs"]}
    assert ended == {name: ("reached", "Completed") for name in lr_sweep.names}
    for name, rate in zip(lr_sweep.names, SWEEP_RATES, strict=True):
        # Each job trained at its own rate, in its own output dir (none resumed another's).
        run = json.loads((lr_sweep.data() / "runs" / "sweep-tiny" / name / "run.json").read_text())
        assert run["config"]["lr"] == float(rate)
        # (the local cluster maps /data to its PVC folder)
        assert run["config"]["output_dir"].endswith(f"/project-001/runs/sweep-tiny/{name}")
        described = run_local("training", "pytorch", "describe", name, "-o", "json",
                              env=lr_sweep.env)  # fmt: skip
        record = submission_record.decode(submission_record.find(json.loads(described.out)) or "{}")
        assert (record.sweep, record.values, record.name) == (
            lr_sweep.id, {"trainer.lr": rate}, name,
        )  # fmt: skip


@pytest.mark.slow
def test_watch_and_report_take_the_sweep(lr_sweep: LocalSweep) -> None:
    res = lr_sweep.tui("watch", "--sweep", lr_sweep.id, "--recover", "--interval", "1", "--json")
    assert res.returncode == 0, res.stderr
    events = [json.loads(line) for line in res.stdout.splitlines()]
    done = sorted(e["job"] for e in events if e["event"] == "completed")
    assert done == lr_sweep.names  # every chain ended; lr-4, named alike, is not of it
    assert not [e for e in events if e["event"] == "submitted"]
    res = lr_sweep.tui("report", "--sweep", lr_sweep.id, "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    rows = {row["job"]: row for row in report["jobs"]}
    assert sorted(rows) == lr_sweep.names
    for row in rows.values():
        assert (row["sweep"], row["outcome"], row["attempts"]) == (lr_sweep.id, "Completed", 1)
        assert row["steps_lost"] == 0 and row["last_step"] is not None
    assert report["total"]["jobs"] == 3


@pytest.mark.slow
def test_list_and_the_verbs_take_the_sweep_and_leave_a_job_of_the_same_name_pattern(
    lr_sweep: LocalSweep,
) -> None:
    res = lr_sweep.tui("list", "--sweep", lr_sweep.id, "--json")
    assert res.returncode == 0, res.stderr
    assert [job["name"] for job in json.loads(res.stdout)] == lr_sweep.names
    everything = json.loads(lr_sweep.tui("list", "--json").stdout)
    assert lr_sweep.other in {job["name"] for job in everything}  # lr-4: named alike, not of it
    text = lr_sweep.tui("list", "--sweep", lr_sweep.id).stdout
    assert [line.split()[0] for line in text.splitlines()[1:]] == lr_sweep.names
    # A completed job cannot be suspended: each of the sweep's is named, and nothing else.
    res = lr_sweep.tui("suspend", "--sweep", lr_sweep.id)
    assert res.returncode == 1
    for name in lr_sweep.names:
        assert f"error: {name} is Completed" in res.stderr
    assert lr_sweep.other not in res.stderr
    res = lr_sweep.tui("list", "--sweep", "lr")
    assert res.returncode == 2
    assert res.stderr.startswith("error: --sweep 'lr' is not a sweep ID")


@pytest.mark.slow
async def test_the_jobs_screen_marks_the_selected_jobs_sweep_in_one_key(
    lr_sweep: LocalSweep, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(var, lr_sweep.env[var])
    client = RunaiClient(select_backend("local"))
    app = RecordingApp(client, refresh_interval=0.5)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, JobsScreen)
        await wait_for(pilot, lambda: screen.loaded, "first refresh")
        assert screen.table.select_name("lr-2")
        await pilot.press("M")
        try:
            await wait_for(pilot, lambda: len(screen.table.marked()) == 3, "the sweep marked")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; notifications: {notifications(app)}") from None
        assert screen.table.marked() == lr_sweep.names
        assert f"marked the 3 jobs of sweep {lr_sweep.id}" in notifications(app)
        screen.table.clear_marks()
        assert screen.table.select_name(lr_sweep.other)
        await pilot.press("M")
        await wait_for(
            pilot, lambda: "lr-4 is not a job of a sweep" in notifications(app), "the refusal"
        )
        assert screen.table.marked() == []


def test_a_bad_grid_value_submits_nothing() -> None:
    res = tui("sweep", "--profile", "retinanet-local", "--grid", "trainer.lr=0.01,abc,0.04",
              "--grid", "trainer.batch-size=2,4", "--name", "bad", "-y")  # fmt: skip
    assert res.returncode == 2
    assert res.stderr.splitlines()[0] == (
        "error: --grid trainer.lr: 'abc': expected a number (the trainer's --lr); nothing submitted"
    )
    assert "Traceback" not in res.stderr
    assert listed() == []


def test_names_that_would_collide_submit_nothing(tmp_path: Path) -> None:
    taken = run_local("training", "pytorch", "submit", "clash-2", "--command", "--",
                      *gate_command(tmp_path / "never"))  # fmt: skip
    assert taken.code == 0, taken.err
    res = tui("sweep", "--profile", "retinanet-local", "--grid", "trainer.lr=0.01,0.02,0.04",
              "--name", "clash", "-y")  # fmt: skip
    assert res.returncode == 2
    assert res.stderr.splitlines()[0] == "error: job name clash-2 is taken: nothing submitted"
    assert listed() == ["clash-2"]
    tui("delete", "clash-2", "--yes")


SLEEPER = """\
job_name: sleeper
image: busybox:1
workers: 1
command: [sh, -c, "exec sleep 120"]
"""


def test_a_failure_part_way_stops_the_rest_and_one_command_deletes_what_was_submitted() -> None:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sleeper.yaml").write_text(SLEEPER)
    # The second PVC's folder on this machine is a file: runai-local refuses that job's submit.
    pvc_root = Path(os.environ["XDG_DATA_HOME"]) / "runai-tui" / "local" / "pvc"
    pvc_root.mkdir(parents=True, exist_ok=True)
    (pvc_root / "broken").write_text("not a folder")
    grid = "pvcs=[{claim: good, path: /data}],[{claim: broken, path: /data}]"
    res = tui("sweep", "--profile", "sleeper", "--grid", grid, "--grid", "env.TAG=a,b", "-y")
    assert res.returncode == 1, res.stderr
    sweep_id = next(
        line.split()[1].rstrip(":") for line in res.stdout.splitlines() if line.startswith("sweep ")
    )
    assert "Submitted job sleeper-1." in res.stdout and "Submitted job sleeper-2." in res.stdout
    assert "Submitted job sleeper-3." not in res.stdout
    err = res.stderr.splitlines()
    assert err[0].startswith("error: sleeper-3: ") and "broken" in err[0]
    assert (
        f"error: sweep {sweep_id} stopped: submitted sleeper-1, sleeper-2; 2 not submitted" in err
    )
    assert f"hint: delete them: runai-tui delete --sweep {sweep_id} -y" in err
    assert listed() == ["sleeper-1", "sleeper-2"]
    # The sweep's verbs on running jobs, then the one command the failure named.
    suspended = tui("suspend", "--sweep", sweep_id)
    assert suspended.returncode == 0, suspended.stderr
    assert "suspended 2 of 2 jobs" in suspended.stderr
    deleted = tui("delete", "--sweep", sweep_id, "-y")
    assert deleted.returncode == 0, deleted.stderr
    assert listed() == []


@pytest.mark.slow
def test_compare_lines_up_the_sweeps_runs_and_a_job_that_never_logged(
    lr_sweep: LocalSweep,
) -> None:
    names = lr_sweep.names
    res = lr_sweep.tui("compare", "--sweep", lr_sweep.id, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["sweep"] == lr_sweep.id and [job["label"] for job in doc["jobs"]] == names
    assert all(job["lacks"] == [] for job in doc["jobs"])  # each its own run.json, read
    rows = {row["key"]: row for row in doc["rows"]}
    assert doc["rows"][0]["section"] == "grid"
    assert rows["trainer.lr"]["cells"] == dict(zip(names, SWEEP_RATES, strict=True))
    assert "args --lr" not in rows  # the grid's row says it
    assert rows["args --output-dir"]["cells"] == {
        name: f"/data/runs/sweep-tiny/{name}" for name in names
    }
    assert rows["ended"]["cells"] == dict.fromkeys(names, "done")
    last = rows["last step"]["cells"]["lr-1"]
    assert last.isdigit() and rows["last step"]["cells"] == dict.fromkeys(names, last)
    for key, better in (("final loss", "lower"), ("best loss", "lower"),
                        ("images/s (median, all ranks)", "higher"), ("best mAP", "higher")):  # fmt: skip
        row = rows[key]
        assert row["better"] == better and all(v is not None for v in row["numbers"].values())
        top = (min if better == "lower" else max)(row["numbers"].values())
        assert row["best"] == [n for n in names if row["numbers"][n] == top]

    # By name, the sweep's jobs say they are one sweep; lr-4 (not of it) never logged a step:
    # it keeps its column and says so.
    res = lr_sweep.tui("compare", *names)
    assert res.stdout.splitlines()[0] == f"compare 3 runs of sweep {lr_sweep.id}: lr-1, lr-2, lr-3"
    res = lr_sweep.tui("compare", *names, lr_sweep.other)
    assert res.returncode == 0, res.stderr
    out = res.stdout.splitlines()
    assert out[0] == "compare 4 runs: lr-1, lr-2, lr-3, lr-4"
    assert (
        "lr-4 lacks trainer metric records (no metric lines in the master's log): it never "
        "logged a step"
    ) in out
    header = next(line for line in out if line.split()[-1:] == ["BEST"])
    assert header.split() == [*names, "lr-4", "BEST"]
    lr = next(line for line in out if line.startswith("trainer.lr "))
    assert lr.split() == ["trainer.lr", *SWEEP_RATES, "-"]
    final = next(line for line in out if line.startswith("final loss "))
    assert final.count("*") >= 1 and final.split()[-2:] == ["-", "lower"]
    ended = next(line for line in out if line.startswith("ended "))
    assert ended.split()[1:4] == ["done"] * 3 and ended.endswith("never logged a step")


@pytest.mark.slow
def test_two_real_runs_compare_as_jobs_and_as_run_directories(lr_sweep: LocalSweep) -> None:
    # Two of the sweep's trained runs: the rows that differ, `--all` for the ones that do not,
    # the per-rank figures, and the same runs read from their saved directories on the PVC.
    res = lr_sweep.tui("compare", "lr-1", "lr-2", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert [job["lacks"] for job in doc["jobs"]] == [[], []]
    assert "spec.submitArgv" in doc["jobs"][0]["argv_source"]
    rows = {r["key"]: r for r in doc["rows"]}
    assert rows["trainer.lr"]["cells"] == {"lr-1": "0.01", "lr-2": "0.02"}
    assert rows["args --output-dir"]["cells"] == {
        name: f"/data/runs/sweep-tiny/{name}" for name in ("lr-1", "lr-2")
    }
    assert not any(r["same"] for r in doc["rows"] if r["section"] in ("settings", "run.json"))
    assert "config.lr" not in rows and "args --lr" not in rows  # the grid's row says them
    assert rows["config.output_dir"]["cells"]["lr-2"].endswith("/runs/sweep-tiny/lr-2")
    assert "data.topology.world_size" not in rows  # the same on both: --all shows it
    every = json.loads(lr_sweep.tui("compare", "lr-1", "lr-2", "--json", "--all").stdout)
    world = next(r for r in every["rows"] if r["key"] == "data.topology.world_size")
    assert world["cells"] == {"lr-1": "1", "lr-2": "1"} and world["same"] is True
    last = rows["last step"]["cells"]["lr-1"]
    assert last.isdigit() and rows["last step"]["cells"] == {"lr-1": last, "lr-2": last}
    assert rows["ended"]["cells"] == {"lr-1": "done", "lr-2": "done"}
    per_rank = rows["images/s per rank (median)"]["numbers"]
    assert all(v is not None and v > 0 for v in per_rank.values())
    assert rows["best mAP at step"]["cells"] == {"lr-1": last, "lr-2": last}
    # The same runs from their saved directories (no cluster needed).
    runs = lr_sweep.data() / "runs" / "sweep-tiny"
    res = lr_sweep.tui("compare", str(runs / "lr-1"), str(runs / "lr-2"))
    assert res.returncode == 0, res.stderr
    assert f"{runs / 'lr-1'} lacks the submission (a run directory does not record it" in (
        res.stdout
    )
    assert any(line.startswith("config.lr ") for line in res.stdout.splitlines())
    assert "config.model" not in res.stdout  # the rows that are the same are left out


@pytest.mark.slow
async def test_equals_on_the_marked_sweep_opens_its_table_and_overlaid_curves(
    lr_sweep: LocalSweep, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(var, lr_sweep.env[var])
    client = RunaiClient(select_backend("local"))
    app = RecordingApp(client, refresh_interval=0.5)
    async with app.run_test(size=(150, 60)) as pilot:
        jobs = app.screen
        assert isinstance(jobs, JobsScreen)
        await wait_for(pilot, lambda: jobs.loaded, "first refresh")
        assert jobs.table.select_name("lr-2")
        await pilot.press("M")  # the sweep's three jobs
        await wait_for(pilot, lambda: len(jobs.table.marked()) == 3, "the sweep marked")
        assert jobs.table.toggle_mark(lr_sweep.other)  # and one that never logged a step
        await pilot.press("equals_sign")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen), "the screen")
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_for(pilot, lambda: screen.result is not None, "the comparison")
        assert screen.result is not None
        names = [*lr_sweep.names, lr_sweep.other]
        assert screen.result.labels == names  # the table's order
        rows = {row.key: row for row in screen.result.rows}
        assert rows["trainer.lr"].cells == (*SWEEP_RATES, "-")
        assert rows["ended"].cells == ("done", "done", "done", "never logged a step")
        curves = screen.query_one(RunsCurves).curves
        assert [c.label for c in curves] == names
        steps = len(curves[0].loss)  # one train record per step (--log-every 1)
        assert steps > 0 and [len(c.loss) for c in curves] == [steps] * 3 + [0]
        assert [len(c.img_s) for c in curves] == [steps] * 3 + [0]
        text = screen_text(app)
        assert "compare 4 runs" in text and "lr-4 lacks trainer metric records" in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is jobs, "back on the jobs screen")
