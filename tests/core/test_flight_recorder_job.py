"""`diagnose JOB`'s Flight Recorder part: only a dump that exists is a finding.

Every distributed run announces where its dumps would go; a healthy one never writes them. The
pods' side is an ExecsInPods (workflows/sources.py) that answers `ls` and `base64` from a real directory (or fails as an exec
on a missing one does), so these run the same code path as a pod's exec."""

from __future__ import annotations

import asyncio
import base64
import pickle
import subprocess
from pathlib import Path

from runai_tui.knowledge.records import flight_recorder as fr
from runai_tui.shapes.models import Job, JobDetail, Phase, Pod
from runai_tui.workflows.flight_recorder import job_findings

ANNOUNCE = "trainer: flight recorder: a hang dumps each rank's collectives to {d}/rank-N"
DUMPED = "trainer: [rank {r}] flight recorder dump (collective failed): {d}/rank-{r}"


class PodDirectory:
    """Runs the command for real on this machine, as an exec in a pod would."""

    async def aexec_output(
        self, name: str, pod: str | None, command: list[str], timeout: float | None = None
    ) -> str:
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(done.stderr.strip())
        return done.stdout


def _detail(phase: Phase) -> JobDetail:
    pods = [Pod("j-master-0", phase), Pod("j-worker-0", phase)]
    return JobDetail(Job("j", phase), pods)


def _findings(lines: list[str], phase: Phase) -> list[fr.Reported]:
    locator = fr.DumpLocator()
    for i, line in enumerate(lines):
        locator.feed(f"j-{'master' if i % 2 == 0 else 'worker'}-0", line)
    return asyncio.run(job_findings(PodDirectory(), _detail(phase), locator))


def _dump(directory: Path, rank: int, entered: int) -> None:
    entries = [
        {"pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": s,
         "profiling_name": "gloo:all_reduce", "input_sizes": [[4]], "input_dtypes": ["Float"]}
        for s in range(1, entered + 1)
    ]  # fmt: skip
    status = {"0": {"last_enqueued_collective": entered, "last_completed_collective": 2}}
    trace = {"version": "2.10", "pg_config": {}, "pg_status": status, "entries": entries}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"rank-{rank}").write_bytes(pickle.dumps(trace))


def test_a_healthy_run_that_ended_has_no_finding(tmp_path: Path) -> None:
    never_written = tmp_path / "flight-recorder"
    assert _findings([ANNOUNCE.format(d=never_written)], Phase.COMPLETED) == []


def test_a_running_job_whose_directory_is_missing_or_empty_has_no_finding(tmp_path: Path) -> None:
    directory = tmp_path / "flight-recorder"
    assert _findings([ANNOUNCE.format(d=directory)], Phase.RUNNING) == []  # ls fails
    directory.mkdir()
    assert _findings([ANNOUNCE.format(d=directory)], Phase.RUNNING) == []  # ls is empty


def test_dumps_on_disk_are_judged_even_without_a_dump_line(tmp_path: Path) -> None:
    """torch's own watchdog writes without the trainer's line: the files are what counts."""
    directory = tmp_path / "flight-recorder"
    _dump(directory, 0, 3)
    _dump(directory, 1, 2)
    (found,) = _findings([ANNOUNCE.format(d=directory)], Phase.RUNNING)
    assert found.code == "hang-rank" and "rank 1 never entered collective 3" in found.message


def test_a_logged_dump_that_cannot_be_reached_is_still_reported(tmp_path: Path) -> None:
    directory = tmp_path / "flight-recorder"
    lines = [ANNOUNCE.format(d=directory), DUMPED.format(d=directory, r=0)]
    (ended,) = _findings(lines, Phase.FAILED)
    assert ended.code == "flight-recorder-unreadable"
    assert "no pod of the job is running" in ended.message
    (gone,) = _findings(lines, Phase.RUNNING)  # logged, and the exec's ls fails
    assert gone.code == "flight-recorder-unreadable" and "No such file" in gone.message
    directory.mkdir()
    (running,) = _findings(lines, Phase.RUNNING)  # logged, but not on this pod's PVC
    assert (
        running.code == "flight-recorder-unreadable" and "rank 0 logged a dump" in running.message
    )


def test_dump_bytes_travel_as_base64_through_the_exec(tmp_path: Path) -> None:
    directory = tmp_path / "flight-recorder"
    _dump(directory, 0, 3)
    text = asyncio.run(PodDirectory().aexec_output("j", "p", ["base64", str(directory / "rank-0")]))
    assert pickle.loads(base64.b64decode(text))["pg_status"]["0"]["last_enqueued_collective"] == 3
