"""A real hang on the CPU: two gloo processes, rank 1 stalls before an all-reduce, rank 0 times
out and dumps its Flight Recorder buffer; `runai-tui diagnose --flight-recorder DIR` names rank 1
and the all-reduce. Then the bad directories: a rank missing, a truncated or foreign file, two
runs mixed."""

from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runai_tui.knowledge.records import flight_recorder as fr

REPO = Path(__file__).resolve().parent.parent.parent
WORKER = Path(__file__).resolve().parent / "gloo_hang_worker.py"
pytestmark = pytest.mark.slow  # real gloo ranks that hang until their timeout
RUNAI_TUI = [sys.executable, "-c", "import sys; from runai_tui.cli import main; sys.exit(main())"]


def run_pair(out: Path, mode: str) -> list[subprocess.Popen[str]]:
    # The recorder's size as the shipped profiles set it: older torch (2.8) records nothing
    # without it, newer torch defaults to the same 2000 entries.
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1",
           "TORCH_FR_BUFFER_SIZE": "2000"}  # fmt: skip
    return [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(rank), str(out), mode],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        for rank in (0, 1)
    ]


@pytest.fixture(scope="module")
def hangs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both kinds of hang, run at the same time: {mode: the flight-recorder directory}."""
    pytest.importorskip("torch")
    runs = {mode: tmp_path_factory.mktemp(mode) for mode in ("late", "never")}
    procs = {mode: run_pair(out, mode) for mode, out in runs.items()}
    for pair in procs.values():
        outputs = [p.communicate(timeout=120)[0] for p in pair]
        assert pair[0].returncode == 1, outputs  # rank 0 timed out
        assert "flight recorder dump (collective failed)" in outputs[0], outputs
    return {mode: out / fr.DIR_NAME for mode, out in runs.items()}


def test_sigterm_dumps_only_inside_a_collective(tmp_path: Path) -> None:
    pair = run_pair(tmp_path, "sigterm")
    outputs = [p.communicate(timeout=120)[0] for p in pair]
    assert [p.returncode for p in pair] == [0, 0], outputs
    assert "flight recorder dump (SIGTERM)" in outputs[0], outputs
    assert sorted(p.name for p in (tmp_path / fr.DIR_NAME).iterdir()) == ["rank-0"]
    (dump,) = fr.read_dir(tmp_path / fr.DIR_NAME)
    assert dump.entered["1"] == 2 and dump.completed["1"] == 1  # caught in flight


def diagnose(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*RUNAI_TUI, "diagnose", *args], capture_output=True, text=True, timeout=60
    )


def test_diagnose_names_the_rank_that_never_entered_the_all_reduce(hangs: dict[str, Path]) -> None:
    res = diagnose("--flight-recorder", str(hangs["never"]))
    assert res.returncode == 1, res.stderr
    said = res.stdout
    assert "ERROR hang-rank  rank 1" in said, said
    assert "rank 1 never entered collective 3 of process group 1" in said, said
    assert "all_reduce, 1000 Float (3.9 KiB)" in said, said
    # Rank 0's own record of the broadcast it finished is not always marked completed by the
    # time it dumps on a loaded host (gloo marks completion apart from the call's return, and a
    # worker that waited for the mark once waited forever), so its count may read 1.
    assert re.search(r"Last completed collective: rank 0: [12], rank 1: 2\b", said), said
    assert "preflight" in res.stdout  # the fix: that rank's pod and node first


def test_a_rank_that_entered_after_the_timeout_is_the_one_named(hangs: dict[str, Path]) -> None:
    res = diagnose("--flight-recorder", str(hangs["late"]), "--json")
    assert res.returncode == 1, res.stderr
    import json

    report = json.loads(res.stdout)
    (hang,) = report["hangs"]
    assert hang["stalled_ranks"] == [1] and hang["waiting_ranks"] == [0] and hang["late"]
    assert hang["op"] == "all_reduce" and hang["seq"] == 3
    assert report["findings"][0]["code"] == "hang-rank"


def test_a_missing_rank_is_named_from_what_the_others_show(
    hangs: dict[str, Path], tmp_path: Path
) -> None:
    shutil.copy(hangs["never"] / "rank-0", tmp_path / "rank-0")
    res = diagnose("--flight-recorder", str(tmp_path))
    assert res.returncode == 1, res.stderr
    assert "rank 1  no dump" in res.stdout
    assert "rank 1 left no dump and never reached collective 3" in res.stdout


def test_a_truncated_dump_is_one_line_and_exit_2(hangs: dict[str, Path], tmp_path: Path) -> None:
    shutil.copy(hangs["never"] / "rank-0", tmp_path / "rank-0")
    data = (hangs["never"] / "rank-1").read_bytes()
    (tmp_path / "rank-1").write_bytes(data[: len(data) // 2])
    res = diagnose("--flight-recorder", str(tmp_path))
    assert res.returncode == 2
    lines = res.stderr.splitlines()
    assert (
        lines[0].startswith("error: ")
        and "rank-1: truncated or not a Flight Recorder dump" in lines[0]
    )
    assert lines[1].startswith("hint: ") and len(lines) == 2
    assert "Traceback" not in res.stderr


def test_a_foreign_file_is_refused_and_nothing_in_it_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    (tmp_path / "rank-0").write_bytes(pickle.dumps({"entries": [Payload()]}))
    (tmp_path / "rank-1").write_text("not a dump\n")
    res = diagnose("--flight-recorder", str(tmp_path))
    assert res.returncode == 2 and not marker.exists()
    assert "rank-0: truncated or not a Flight Recorder dump" in res.stderr
    assert "refuses to load" in res.stderr


def test_dumps_of_two_runs_in_one_directory_are_refused(
    hangs: dict[str, Path], tmp_path: Path
) -> None:
    """rank-1 as the same rank would have written it in an attempt an hour earlier."""
    shutil.copy(hangs["never"] / "rank-0", tmp_path / "rank-0")
    older = pickle.loads((hangs["never"] / "rank-1").read_bytes())
    for entry in older["entries"]:
        entry["time_created_ns"] -= 3600 * 10**9
    (tmp_path / "rank-1").write_bytes(pickle.dumps(older))
    res = diagnose("--flight-recorder", str(tmp_path))
    assert res.returncode == 2
    assert "dumps from different runs in one directory" in res.stderr
    assert "hint: keep one run's rank-N files" in res.stderr


def test_an_empty_or_absent_directory_says_what_to_do(tmp_path: Path) -> None:
    res = diagnose("--flight-recorder", str(tmp_path))
    assert res.returncode == 2 and "no rank-N dump files" in res.stderr
    res = diagnose("--flight-recorder", str(tmp_path / "nope"))
    assert res.returncode == 2 and "no such directory" in res.stderr
