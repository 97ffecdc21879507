"""The block reader behind `diagnose --log` (issue 12): a saved log is read in big byte blocks
and only candidate lines are decoded. Whatever the block size and wherever a block cuts a line,
it must say exactly what a line-at-a-time reading says (the line numbers included)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from runai_tui import diagnose
from runai_tui.diagnose import PodDiagnoser, combine, diagnose_files, read_log_file

LOGS = Path(__file__).parent / "diagnose_logs"
NOW = 1795000020.0 + 3600


def summary(report: diagnose.Diagnosis) -> tuple:
    return (
        [(p.pod, p.transport, p.device, p.lines) for p in report.pods],
        [(f.code, f.pod, f.line, f.evidence) for f in report.findings],
        sorted(report.counts.items()),
    )


def line_by_line(path: Path, monkeypatch: pytest.MonkeyPatch, running: bool = False):
    """The reference: every line examined on its own (a block per line)."""
    with monkeypatch.context() as m:
        m.setattr(diagnose, "LINE_BATCH_CHARS", 1)
        pod = PodDiagnoser(path.stem).feed_all(diagnose.read_log_lines(path))
    return combine([pod], running=running, now=NOW)


def in_blocks(path: Path, size: int, monkeypatch: pytest.MonkeyPatch, running: bool = False):
    with monkeypatch.context() as m:
        m.setattr(diagnose, "BLOCK_BYTES", size)
        return combine([read_log_file(path)], running=running, now=NOW)


@pytest.mark.parametrize("size", [1, 7, 64, 1000, 1 << 20])
def test_every_fixture_log_reads_the_same_in_blocks_of_any_size(
    size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in sorted(LOGS.glob("*.log")):
        expected = summary(line_by_line(path, monkeypatch, running=True))
        assert summary(in_blocks(path, size, monkeypatch, running=True)) == expected, path.name


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


TIMEOUT = (
    b"[rank1]:[E1123 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
    b"timeout: WorkNCCL(SeqNum=2144, OpType=ALLREDUCE) ran for 1800087 milliseconds before timing out."
)
OOM = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
FILLER = b"host:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] via NET/Socket/0"


def test_a_line_cut_by_a_block_and_hits_at_the_very_start_and_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = [TIMEOUT] + [FILLER] * 5 + [OOM] + [FILLER] * 5 + [TIMEOUT]
    path = write(tmp_path, "edges.log", b"\n".join(body))  # no newline after the last hit
    for size in (len(TIMEOUT) // 2, len(FILLER) + 3, 4096):  # the hits straddle blocks
        report = in_blocks(path, size, monkeypatch)
        assert [(f.code, f.line) for f in report.findings] == [
            ("nccl-timeout", 1),
            ("cuda-oom", 7),
            ("nccl-timeout", 13),
        ], size
        assert report.pods[0].lines == 13
        assert all(f.evidence in (TIMEOUT.decode(), OOM.decode()) for f in report.findings)


def test_an_empty_file_a_file_without_newline_and_crlf(tmp_path: Path) -> None:
    empty = diagnose_files([write(tmp_path, "empty.log", b"")])
    assert summary(empty) == ([("empty", "unknown", "", 0)], [], [])
    one = diagnose_files([write(tmp_path, "one.log", OOM)])
    assert [(f.code, f.line, f.evidence) for f in one.findings] == [("cuda-oom", 1, OOM.decode())]
    crlf = diagnose_files(
        [
            write(
                tmp_path,
                "crlf.log",
                b"x NCCL INFO NCCL_IB_HCA set to mlx5\r\n"
                b"x NCCL INFO NET/Socket : Using [0]net1:10.0.0.2<0>\r\n\r\n" + OOM + b"\r\n",
            )
        ]
    )
    assert crlf.pods[0].to_dict() == {"pod": "crlf", "transport": "Socket", "device": "net1"}
    assert crlf.pods[0].lines == 4
    found = [(f.code, f.line, f.evidence) for f in crlf.findings]
    assert ("cuda-oom", 4, OOM.decode()) in found  # the \r is not part of the evidence
    assert ("tcp-fallback", 2, "x NCCL INFO NET/Socket : Using [0]net1:10.0.0.2<0>") in found


def test_a_line_longer_than_a_block_is_taken_in_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "huge.log", b"y" * 5000 + b"\n" + OOM + b"\n")
    monkeypatch.setattr(diagnose, "MAX_LINE_READ", 1024)
    report = in_blocks(path, 1024, monkeypatch)  # memory holds about a block, not the line
    assert report.codes() == ["cuda-oom"]
    assert report.pods[0].lines == 1 + 5000 // 1024 + 1


def channel(transport: str) -> bytes:
    return b"h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/" + transport + b"/0"


def test_the_transport_follows_every_change_between_channel_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only channel lines naming another transport than the current one are looked at: the
    final transport and its line must still be those of the last change, across blocks."""
    lines = [
        b"x NCCL INFO NCCL_IB_HCA set to mlx5",
        b"x NCCL INFO NET/IB : Using [0]mlx5_2:1/RoCE; OOB net1:10.0.0.2<0>",
        *[channel(b"IB")] * 30,
        *[channel(b"Socket")] * 20,  # line 33: the change to sockets
        b"x NCCL INFO NET/Socket : Using [0]net1:10.0.0.2<0>",
        *[channel(b"Foo")] * 3,  # no transport: ignored
        *[channel(b"Socket")] * 10,
    ]
    path = write(tmp_path, "switch.log", b"\n".join(lines) + b"\n")
    for size in (50, 333, 1 << 20):
        report = in_blocks(path, size, monkeypatch)
        assert report.pods[0].to_dict() == {
            "pod": "switch",
            "transport": "Socket",
            "device": "net1",
        }
        assert [(f.code, f.line) for f in report.findings] == [("tcp-fallback", 33)]
        assert summary(report) == summary(line_by_line(path, monkeypatch))
    back = write(tmp_path, "back.log", b"\n".join([*lines, channel(b"IBext_v8")]) + b"\n")
    report = in_blocks(back, 333, monkeypatch)
    assert (report.pods[0].transport, report.findings) == ("IB", [])


def record(step: int, data: float, step_time: float = 1.0, loss: float = 1.0) -> bytes:
    return json.dumps(
        {
            "kind": "train",
            "step": step,
            "loss": loss,
            "data_time": data,
            "step_time": step_time,
            "time": 1795000000.0 + step,
        }  # fmt: skip
    ).encode()


def test_data_starved_reads_the_newest_records_and_nan_loss_every_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = diagnose.RECORDS_KEPT
    starved_then_fine = [record(i, 0.9) for i in range(kept)] + [
        record(kept + i, 0.1) for i in range(kept)
    ]
    # A non-finite loss long before the newest records is still found (JSON writes NaN).
    starved_then_fine[5] = record(5, 0.9, loss=float("nan"))
    path = write(tmp_path, "recs.log", b"\n".join(starved_then_fine) + b"\n")
    for size in (4096, 1 << 20):
        report = in_blocks(path, size, monkeypatch)
        assert [(f.code, f.line) for f in report.findings] == [("nan-loss", 6)]
    fine_then_starved = [record(i, 0.1) for i in range(kept)] + [
        record(kept + i, 0.9) for i in range(kept)
    ]
    path = write(tmp_path, "recs2.log", b"\n".join(fine_then_starved) + b"\n")
    report = in_blocks(path, 4096, monkeypatch)
    assert [(f.code, f.line) for f in report.findings] == [("data-starved", kept + 1)]
    assert summary(report) == summary(line_by_line(path, monkeypatch))


# One line per alternative of every code's pattern: the coarse needles must let each through,
# in any case (the patterns ignore case).
ALTERNATIVES = {
    "memlock": ["Call to ibv_reg_mr failed with error x", "ibv_reg_mr_iova2() failed: x"],
    "nccl-timeout": [
        "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)",
        "WorkNCCL(SeqNum=2, OpType=ALLREDUCE) ran for 1800087 milliseconds before timing out.",
        "ProcessGroupNCCL's watchdog got stuck for 480 seconds",
    ],
    "nccl-error": [
        "DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970",
        "ncclRemoteError: A call failed possibly due to a network error",
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
        "NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1234> with status=12",
    ],
    "shm": [
        "ERROR: Unexpected bus error encountered in worker.",
        "This might be caused by insufficient shared memory (shm).",
        "DataLoader worker (pid 9) is killed by signal: Bus error.",
        "NCCL WARN Error: failed to extend /dev/shm/nccl-x to 9637892 bytes",
        "RuntimeError: unable to write to file </torch_123_456_0>: No space left on device (28)",
    ],
    "cuda-oom": [
        "torch.OutOfMemoryError: CUDA out of memory.",
        "CUDA out of memory. Tried to allocate 2.00 GiB",
        "RuntimeError: CUDA error: out of memory",
    ],
    "rendezvous": [
        "torch.distributed.DistNetworkError: Connection reset by peer",
        "The client socket has timed out after 1800s while trying to connect to (10.0.0.1, 29500).",
        "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
        "RendezvousConnectionError: The connection to the C10d store has failed.",
        "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients.",
    ],
    "dataloader-killed": [
        "RuntimeError: DataLoader worker (pid(s) 1234, 1235) exited unexpectedly",
        "RuntimeError: DataLoader worker (pid 77) is killed by signal: Killed.",
    ],
    "nan-loss": ["trainer: error: [rank 0] non-finite loss inf at step 3"],
    "trainer-error": ["trainer: error: [rank 1] --resume: no such file: ckpt.pt"],
    "process-failed": ["api.py:869] failed (exitcode: 1) local_rank: 0 (pid: 7) of binary: x"],
}


@pytest.mark.parametrize("code", sorted(ALTERNATIVES))
def test_every_pattern_alternative_passes_the_needles_in_any_case(
    code: str, tmp_path: Path
) -> None:
    for line in ALTERNATIVES[code]:
        for variant in (line, line.upper(), line.lower()):
            path = write(tmp_path, "alt.log", b"filler\n" + variant.encode() + b"\nfiller\n")
            report = diagnose_files([path])
            assert code in report.codes(), variant
            assert [f.line for f in report.findings if f.code == code] == [2]


# -- the grep screen (read_log_file with a `grep` on PATH) -------------------------------------

needs_grep = pytest.mark.skipif(shutil.which("grep") is None, reason="no grep on PATH")


def both_paths(path: Path, block: int, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple, tuple]:
    """(python screen, grep screen) summaries of one saved log, read in blocks of `block`."""
    with monkeypatch.context() as m:
        m.setattr(diagnose, "BLOCK_BYTES", block)
        python = read_log_file(path, use_grep=False)
        grep = read_log_file(path)
    assert python.screen == "python"
    assert grep.screen == "grep", path.name  # really screened by grep, not fallen back
    return tuple(
        summary(combine([d], running=True, now=NOW)) + (d.ib_wanted, d.finished)
        for d in (python, grep)
    )


@needs_grep
@pytest.mark.parametrize("block", [64, 1 << 20])
def test_every_fixture_log_gives_the_same_through_grep_and_python(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in sorted(LOGS.glob("*.log")):
        python, grep = both_paths(path, block, monkeypatch)
        assert grep == python, path.name


@needs_grep
def test_grep_screen_agrees_on_case_nan_crlf_and_a_last_line_without_newline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mixed case (the patterns ignore it), non-finite JSON numbers next to `retinanet`-like
    words, settings, CRLF, and a last line without its newline."""
    lines = [
        b"retinanet-master-0 NCCL INFO NCCL_IB_HCA set to mlx5_2",
        b"x NCCL INFO NET/IB : Using [0]mlx5_2:1/RoCE ; OOB net1:10.0.0.1<0>",
        channel(b"IB"),
        b"[Rank 1] WaTcHdOg caught collective operation timeout: WorkNCCL(SeqNum=1)\r",
        channel(b"Socket"),
        b'{"kind": "train", "step": 1, "loss": NaN, "data_time": 0.1, "step_time": 1.0}',
        b'{"kind":"train","step":2,"loss":-Infinity,"data_time":0.1,"step_time":1.0}',
        b'{"kind": "train", "step": 3, "loss": 0.5, "note": "nan", "time": 5.0}',
        b"torch.OutOfMemoryError: CUDA OUT OF MEMORY. Tried to allocate 2.00 GiB",
        b"trainer: error: [rank 1] --resume: no such file: ckpt.pt",
        b"E api.py:869] failed (exitcode: 1) local_rank: 0 (pid: 7) of binary: x",
    ]
    path = write(tmp_path, "mixed.log", b"\n".join(lines))  # no newline at the end
    for block in (7, 1 << 20):
        python, grep = both_paths(path, block, monkeypatch)
        assert grep == python
    codes = {f[0] for f in python[1]}
    assert {"nccl-timeout", "nan-loss", "cuda-oom", "trainer-error", "tcp-fallback"} <= codes


def fake_grep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """A `grep` first on PATH that runs `script` (POSIX sh)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    grep = bin_dir / "grep"
    grep.write_text("#!/bin/sh\n" + script + "\n")
    grep.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.mark.parametrize(
    "script",
    [
        "echo 'grep: bad option' >&2; exit 2",  # grep fails
        "echo '1:a line' ; echo '2:cut'; exit 2",  # output, then fails
        "echo 'not grep -n output'; exit 0",  # output that is not grep's
        "echo '999999:past the end'; exit 0",  # line numbers the file does not have
        "exit 1",  # no match: "no candidates", which is wrong here, but grep said so
    ],
)
def test_a_failing_or_odd_grep_falls_back_to_python_unseen(
    script: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = LOGS / "nccl-timeout.log"
    expected = summary(combine([read_log_file(path, use_grep=False)], now=NOW))
    fake_grep(tmp_path, monkeypatch, script)
    pod = read_log_file(path)
    if script == "exit 1":  # exit 1 is trusted: no candidate lines from grep
        assert pod.screen == "grep"
        assert "nccl-timeout" not in {f.code for f in combine([pod]).findings}
        return
    assert pod.screen == "python"
    assert summary(combine([pod], now=NOW)) == expected


def test_without_grep_on_path_the_python_screen_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    pod = read_log_file(LOGS / "memlock.log")
    assert pod.screen == "python"
    assert "memlock" in pod.counts


@needs_grep
def test_a_huge_line_makes_the_grep_path_fall_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """grep numbers real lines; the block reader takes a line longer than MAX_LINE_READ in
    pieces (each a line): such a file is read by the Python screen, numbered as before."""
    path = write(tmp_path, "huge.log", b"y" * 5000 + b"\n" + OOM + b"\n")
    monkeypatch.setattr(diagnose, "MAX_LINE_READ", 1024)
    monkeypatch.setattr(diagnose, "BLOCK_BYTES", 1024)
    pod = read_log_file(path)
    assert pod.screen == "python"
    assert pod.lines == 1 + 5000 // 1024 + 1 and "cuda-oom" in pod.counts


@needs_grep
def test_stopping_early_kills_grep_and_ends_its_reader(tmp_path: Path) -> None:
    """A reader that stops before grep is done (an error, Ctrl-C) kills the grep child."""
    path = write(tmp_path, "many.log", (OOM + b"\n") * 200_000)
    lines = diagnose._GrepLines(shutil.which("grep") or "grep", path)
    assert lines.upto(10) == [(n, OOM.decode()) for n in range(1, 11)]
    lines.stop()
    assert not lines._thread.is_alive()
    assert lines.stream.returncode is not None  # reaped (killed, or it had just finished)
