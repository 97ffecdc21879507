"""The block reader behind `diagnose --log`: a saved log is read in big byte blocks
and only candidate lines are decoded. Whatever the block size and wherever a block cuts a line,
it must say exactly what a line-at-a-time reading says (the line numbers included)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runai_tui.knowledge import diagnose
from runai_tui.knowledge.diagnose import (
    DEFAULT_LIMITS,
    Limits,
    PodDiagnoser,
    combine,
    diagnose_files,
    read_log_file,
)
from runai_tui.knowledge.diagnose.prefilter import NEWLINES_SAMPLE, hyperscan_installed, newlines

LOGS = Path(__file__).parent / "diagnose_logs"
NOW = 1795000020.0 + 3600


def summary(report: diagnose.Diagnosis) -> tuple:
    return (
        [(p.pod, p.transport, p.device, p.lines) for p in report.pods],
        [(f.code, f.pod, f.line, f.evidence) for f in report.findings],
        sorted(report.counts.items()),
    )


def line_by_line(path: Path, running: bool = False, limits: Limits = DEFAULT_LIMITS):
    """The reference: every line examined on its own (a block per line)."""
    one = Limits(batch_chars=1, max_line=limits.max_line, records_kept=limits.records_kept)
    pod = PodDiagnoser(path.stem, limits=one).feed_all(diagnose.read_log_lines(path))
    return combine([pod], running=running, now=NOW)


def in_blocks(path: Path, size: int, running: bool = False, limits: Limits = DEFAULT_LIMITS):
    return combine([read_log_file(path, block_bytes=size, limits=limits)], running=running, now=NOW)


@pytest.mark.parametrize("size", [1, 7, 64, 1000, 1 << 20])
def test_every_fixture_log_reads_the_same_in_blocks_of_any_size(size: int) -> None:
    for path in sorted(LOGS.glob("*.log")):
        expected = summary(line_by_line(path, running=True))
        assert summary(in_blocks(path, size, running=True)) == expected, path.name


@pytest.mark.parametrize("size", [7, 64, 1000])
def test_the_newest_records_read_again_at_the_end_are_those_a_stream_keeps(size: int) -> None:
    """A saved log's records are numbered once, from the blocks that hold the newest ones
    (`reread_records`); a stream keeps them block by block. Few kept: most blocks are dropped."""
    for path in sorted(LOGS.glob("*.log")):
        one_line = Limits(batch_chars=1, records_kept=3)
        stream = PodDiagnoser(path.stem, limits=one_line).feed_all(diagnose.read_log_lines(path))
        saved = read_log_file(path, block_bytes=size, limits=Limits(records_kept=3))
        assert saved.record_lines() == stream.record_lines(), path.name
        assert saved.records_dropped == stream.records_dropped, path.name
        assert summary(combine([saved], running=True, now=NOW)) == summary(
            combine([stream], running=True, now=NOW)
        )


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


def test_a_line_cut_by_a_block_and_hits_at_the_very_start_and_end(tmp_path: Path) -> None:
    body = [TIMEOUT] + [FILLER] * 5 + [OOM] + [FILLER] * 5 + [TIMEOUT]
    path = write(tmp_path, "edges.log", b"\n".join(body))  # no newline after the last hit
    for size in (len(TIMEOUT) // 2, len(FILLER) + 3, 4096):  # the hits straddle blocks
        report = in_blocks(path, size)
        # one finding per fault: the timeout at the very end is counted in the first one's lines
        assert [(f.code, f.line, f.seen) for f in report.findings] == [
            ("nccl-timeout", 1, 2),
            ("cuda-oom", 7, 1),
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


def test_a_line_longer_than_a_block_is_taken_in_pieces(tmp_path: Path) -> None:
    path = write(tmp_path, "huge.log", b"y" * 5000 + b"\n" + OOM + b"\n")
    # memory holds about a block, not the line
    report = in_blocks(path, 1024, limits=Limits(max_line=1024))
    assert report.codes() == ["cuda-oom"]
    assert report.pods[0].lines == 1 + 5000 // 1024 + 1


def channel(transport: str) -> bytes:
    return b"h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/" + transport + b"/0"


def test_the_transport_follows_every_change_between_channel_lines(tmp_path: Path) -> None:
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
        report = in_blocks(path, size)
        assert report.pods[0].to_dict() == {
            "pod": "switch",
            "transport": "Socket",
            "device": "net1",
        }
        assert [(f.code, f.line) for f in report.findings] == [("tcp-fallback", 33)]
        assert summary(report) == summary(line_by_line(path))
    back = write(tmp_path, "back.log", b"\n".join([*lines, channel(b"IBext_v8")]) + b"\n")
    report = in_blocks(back, 333)
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


def test_data_starved_reads_the_newest_records_and_nan_loss_every_record(tmp_path: Path) -> None:
    kept = diagnose.RECORDS_KEPT
    starved_then_fine = [record(i, 0.9) for i in range(kept)] + [
        record(kept + i, 0.1) for i in range(kept)
    ]
    # A non-finite loss long before the newest records is still found (JSON writes NaN).
    starved_then_fine[5] = record(5, 0.9, loss=float("nan"))
    path = write(tmp_path, "recs.log", b"\n".join(starved_then_fine) + b"\n")
    for size in (4096, 1 << 20):
        report = in_blocks(path, size)
        assert [(f.code, f.line) for f in report.findings] == [("nan-loss", 6)]
    fine_then_starved = [record(i, 0.1) for i in range(kept)] + [
        record(kept + i, 0.9) for i in range(kept)
    ]
    path = write(tmp_path, "recs2.log", b"\n".join(fine_then_starved) + b"\n")
    report = in_blocks(path, 4096)
    assert [(f.code, f.line) for f in report.findings] == [("data-starved", kept + 1)]
    assert summary(report) == summary(line_by_line(path))


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


# -- the two line prefilters: Hyperscan (C) and bytes.find passes (Python) ---------------------

needs_hyperscan = pytest.mark.skipif(
    not hyperscan_installed(), reason="the hyperscan package is not installed here"
)


@pytest.mark.parametrize("hyperscan", [True, False])
@pytest.mark.parametrize("code", sorted(ALTERNATIVES))
def test_every_pattern_alternative_passes_the_needles_in_any_case(
    code: str, hyperscan: bool, tmp_path: Path
) -> None:
    for line in ALTERNATIVES[code]:
        for variant in (line, line.upper(), line.lower()):
            path = write(tmp_path, "alt.log", b"filler\n" + variant.encode() + b"\nfiller\n")
            report = combine([read_log_file(path, hyperscan=hyperscan)])
            assert code in report.codes(), variant
            assert [f.line for f in report.findings if f.code == code] == [2]


def both_prefilters(path: Path, block: int, limits: Limits = DEFAULT_LIMITS) -> tuple[tuple, tuple]:
    """(python prefilter, hyperscan prefilter) summaries of one saved log, read in blocks of `block`."""
    fast = read_log_file(path, block_bytes=block, limits=limits)
    python = read_log_file(path, block_bytes=block, limits=limits, hyperscan=False)
    assert (python.prefilter.name, fast.prefilter.name) == ("python", "hyperscan"), path.name
    return tuple(
        summary(combine([d], running=True, now=NOW)) + (d.ib_wanted, d.finished)
        for d in (python, fast)
    )


@needs_hyperscan
@pytest.mark.parametrize("block", [64, 1 << 20])
def test_every_fixture_log_gives_the_same_through_hyperscan_and_python(block: int) -> None:
    for path in sorted(LOGS.glob("*.log")):
        python, fast = both_prefilters(path, block)
        assert fast == python, path.name


@needs_hyperscan
def test_the_prefilters_agree_on_case_nan_crlf_a_long_line_and_a_last_line_without_newline(
    tmp_path: Path,
) -> None:
    """Mixed case (the patterns ignore it), non-finite JSON numbers next to `retinanet`-like
    words, settings, CRLF, a line in pieces, and a last line without its newline."""
    lines = [
        b"retinanet-master-0 NCCL INFO NCCL_IB_HCA set to mlx5_2",
        b"x NCCL INFO NET/IB : Using [0]mlx5_2:1/RoCE ; OOB net1:10.0.0.1<0>",
        channel(b"IB"),
        b"[Rank 1] WaTcHdOg caught collective operation timeout: WorkNCCL(SeqNum=1)\r",
        channel(b"Socket"),
        b'{"kind": "train", "step": 1, "loss": NaN, "data_time": 0.1, "step_time": 1.0}',
        b'{"kind":"train","step":2,"loss":-Infinity,"data_time":0.1,"step_time":1.0}',
        b'{"kind": "train", "step": 3, "loss": 0.5, "note": "nan", "time": 5.0}',
        b"y" * 3000 + OOM,  # taken in pieces of MAX_LINE_READ: the needle is in the third
        b"torch.OutOfMemoryError: CUDA OUT OF MEMORY. Tried to allocate 2.00 GiB",
        b"trainer: error: [rank 1] --resume: no such file: ckpt.pt",
        b"E api.py:869] failed (exitcode: 1) local_rank: 0 (pid: 7) of binary: x",
    ]
    path = write(tmp_path, "mixed.log", b"\n".join(lines))  # no newline at the end
    for block in (7, 1024, 1 << 20):
        python, fast = both_prefilters(path, block, Limits(max_line=1024))
        assert fast == python
    codes = {f[0] for f in python[1]}
    assert {"nccl-timeout", "nan-loss", "cuda-oom", "trainer-error", "tcp-fallback"} <= codes


def test_an_error_storm_counts_every_line_and_keeps_the_first_findings(tmp_path: Path) -> None:
    """Lines whose codes have all their findings are only counted, not decoded again."""
    storm = [TIMEOUT, OOM, FILLER] * 2000 + [channel(b"IB")]
    path = write(tmp_path, "storm.log", b"\n".join(storm) + b"\n")
    pod = read_log_file(path)
    assert pod.counts == {"nccl-timeout": 2000, "cuda-oom": 2000}
    kept = [(f.code, f.line) for f in pod.findings]
    assert kept == [("nccl-timeout", 1), ("cuda-oom", 2), ("nccl-timeout", 4), ("cuda-oom", 5),
                    ("nccl-timeout", 7), ("cuda-oom", 8)]  # fmt: skip
    assert pod.lines == 6001 and pod.transport is not None
    assert (pod.transport.transport, pod.transport.line) == ("IB", 6001)


# -- newlines: a block's lines counted through memchr, or byte by byte -------------------------


@pytest.mark.parametrize("width", [4, 31, 33, 200])
def test_newlines_agrees_with_count_on_every_span(width: int) -> None:
    """`newlines` counts most of a block through `bytes.replace`, a small span or short lines
    by `bytes.count`: the same figure for spans at the edges, inside and over the whole block."""
    line = b"x" * (width - 1) + b"\n"
    block = line * (3 * NEWLINES_SAMPLE // width) + b"tail without newline"
    size = len(block)
    for lo, hi in [(0, size), (0, size - 20), (1, size), (width, size - 1), (size // 9, size),
                   (5, NEWLINES_SAMPLE + 5), (size // 2, size // 2), (0, 0)]:  # fmt: skip
        assert newlines(block, lo, hi) == block.count(b"\n", lo, hi), (lo, hi)


@pytest.mark.parametrize("size", [100_000, 1 << 20, 8 << 20])
def test_line_numbers_hold_in_big_blocks_of_long_and_short_lines(tmp_path: Path, size: int) -> None:
    """Blocks big enough for the memchr count, of long lines and of short ones (the byte count),
    number every finding and the transport as a line-at-a-time reading does."""
    body = []
    for i in range(40_000):
        body.append(b"ok" if (i // 5000) % 2 else b"step %d " % i + b"y" * 150)
        if i % 3001 == 0:
            body.append(OOM if i % 2 else TIMEOUT)
    body.append(channel(b"IB"))
    path = write(tmp_path, "mixed-widths.log", b"\n".join(body) + b"\n")
    assert summary(in_blocks(path, size)) == summary(line_by_line(path))


def test_diagnose_of_a_saved_log_starts_without_the_profiles_yaml_or_an_event_loop(
    tmp_path: Path,
) -> None:
    """The `diagnose` figure counts its start-up: a saved log's findings carry no remedy, so
    `diagnose --log` loads neither the remedies with their profiles and YAML, nor asyncio and the
    Flight Recorder reader (a job's pass needs them)."""
    path = write(tmp_path, "pod.log", TIMEOUT + b"\n" + OOM + b"\n")
    unwanted = [
        "yaml",
        "runai_tui.profiles",
        "runai_tui.knowledge.remedies",
        "asyncio",
        "runai_tui.knowledge.records.flight_recorder",
    ]
    probe = (
        "import contextlib, io, sys\n"
        "from runai_tui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    assert main(['diagnose', '--log', {str(path)!r}]) == 1\n"
        "assert 'nccl-timeout' in out.getvalue()\n"
        f"print(sorted(m for m in {unwanted!r} if m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"
