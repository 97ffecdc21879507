"""Diagnosis from logs: a fixture log for every code (written from the formats NCCL, PyTorch and
the trainer print), near-misses that must stay quiet, the transport decision, bounds, hostile
lines, and the CLI's output and exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from runai_tui.cli import main
from runai_tui.knowledge import diagnose
from runai_tui.knowledge.diagnose import (
    CODES,
    PodDiagnoser,
    combine,
    diagnose_files,
    diagnose_lines,
    render_text,
)
from runai_tui.knowledge.docs import DIAGNOSE_CODES, diagnose_codes_table

LOGS = Path(__file__).parent / "diagnose_logs"
STALL_NOW = 1795000020.0 + 3600  # an hour after stalled.log's newest record

# fixture file -> the codes it must produce (and no others)
EXPECTED = {
    "memlock": {"memlock"},
    "tcp-fallback": {"tcp-fallback"},
    "nccl-timeout": {"nccl-timeout"},
    "nccl-error": {"nccl-error"},
    "shm": {"shm"},
    "cuda-oom": {"cuda-oom"},
    "rendezvous": {"rendezvous"},
    # A worker pod's torchrun left after the master's: its exit barrier's error and C++ stack
    # (a real local-cluster log) are not a rendezvous failure.
    "exit-barrier": {"exit-barrier"},
    "socket-ifname": {"socket-ifname"},  # a local-cluster job with GLOO_SOCKET_IFNAME=bad0
    "dataloader-killed": {"dataloader-killed"},
    "nan-loss": {"nan-loss"},
    "trainer-error": {"trainer-error"},  # the torchrun failure after it is explained by it
    "process-failed": {"process-failed"},
    "data-starved": {"data-starved"},
    "ib-ok": set(),
    "tcp-intended": set(),
    "near-misses": set(),
}


def run(name: str, running: bool = False, now: float | None = None) -> diagnose.Diagnosis:
    lines = diagnose.read_log_lines(LOGS / f"{name}.log")
    return combine([PodDiagnoser(name).feed_all(lines)], running=running, now=now)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_fixture_log_gives_exactly_its_codes(name: str) -> None:
    report = run(name)
    assert set(report.codes()) == EXPECTED[name]
    for finding in report.findings:
        assert finding.pod == name
        assert finding.line >= 1
        assert finding.evidence in (LOGS / f"{name}.log").read_text().splitlines()
        assert finding.fix and finding.message == CODES[finding.code].message


def test_every_code_has_a_fixture_and_its_example_line_is_found() -> None:
    # Codes found from things other than a log line: tests/hang/ has the dumps, the others
    # their own modules.
    from_elsewhere = {"stalled", "log-unavailable", "straggler", "pending", "hang-rank"}
    from_elsewhere |= {"flight-recorder-unreadable", "pod-lost"}
    from_elsewhere |= {"wire-slow", "wire-slow-pair"}  # tests/core/test_wire.py: a summary
    covered = set().union(*EXPECTED.values()) | from_elsewhere
    assert covered == set(CODES)
    for spec in CODES.values():
        if spec.pattern is None:
            continue
        pod = PodDiagnoser("p").feed_all([spec.example])
        assert pod.counts == {spec.code: 1}, spec.code


def test_stalled_only_for_a_running_job_silent_far_longer_than_usual() -> None:
    assert run("stalled", running=True, now=STALL_NOW).codes() == ["stalled"]
    finding = run("stalled", running=True, now=STALL_NOW).findings[0]
    assert finding.line == 3 and "no record for 60 min; usually one every 10 s" in finding.message
    assert run("stalled", running=False, now=STALL_NOW).codes() == []  # finished or failed
    assert run("stalled", running=True, now=1795000020.0 + 60).codes() == []  # just a pause
    # A trainer that said "done" is not stalled, however old its last record.
    assert run("near-misses", running=True, now=STALL_NOW + 10**6).codes() == []


def transport(*lines: str) -> tuple[str, str]:
    health = PodDiagnoser("p").feed_all(lines).health()
    return health.transport, health.device


def test_transport_is_what_nccl_finally_uses() -> None:
    prefix = "host:1:1 [0] NCCL INFO "
    bootstrap = prefix + "Bootstrap : Using net1:10.0.0.2<0>"
    sock = prefix + "NET/Socket : Using [0]net1:10.0.0.2<0>"
    ib = prefix + "NET/IB : Using [0]mlx5_2:1/RoCE [1]mlx5_3:1/RoCE ; OOB net1:10.0.0.2<0>"
    # A bootstrap NET/Socket line on an IB run does not make it Socket, in either order.
    assert transport(bootstrap, sock, ib) == ("IB", "mlx5_2:1/RoCE,mlx5_3:1/RoCE")
    assert transport(ib, sock) == ("IB", "mlx5_2:1/RoCE,mlx5_3:1/RoCE")
    assert transport(bootstrap, sock) == ("Socket", "net1")
    assert transport(bootstrap) == ("unknown", "")
    # The final word: "Using network X" or the channels' "via NET/X".
    assert transport(ib, sock, prefix + "Using network Socket") == ("Socket", "net1")
    assert transport(sock, ib, prefix + "Channel 00/0 : 0[0] -> 1[0] via NET/IB/0/GDRDMA") == (
        "IB",
        "mlx5_2:1/RoCE,mlx5_3:1/RoCE",
    )
    assert transport(prefix + "Using network IB", ib) == ("IB", "mlx5_2:1/RoCE,mlx5_3:1/RoCE")


@pytest.mark.parametrize("hyperscan", [True, False])
def test_a_gloo_pod_s_transport_is_what_the_trainer_says(hyperscan: bool) -> None:
    # Gloo prints nothing about its network: the trainer's line says it (trainer/distributed.py),
    # read by either prefilter, in a block of its own or among other lines.
    said = "trainer: rank 1: Using network gloo/TCP on eth0 (10.0.0.7, the address of pod-w)"
    lines = ["trainer: world size 2 (gloo), device cpu", said, '{"kind": "train", "loss": 1.0}']
    health = PodDiagnoser("p", hyperscan=hyperscan).feed_all(lines).health()
    assert (health.transport, health.device) == ("gloo/TCP", "eth0")
    listed = "trainer: rank 0: Using network gloo/TCP on lo,eth0 (GLOO_SOCKET_IFNAME)"
    assert transport(listed) == ("gloo/TCP", "lo,eth0")
    # The logs do not say (a gloo job that failed before its process group): unknown.
    assert transport("trainer: world size 2 (gloo), device cpu") == ("unknown", "")
    text = render_text(diagnose_lines({"j-master-0": [listed], "j-worker-0": [said]}))
    assert "j-master-0  gloo/TCP   lo,eth0\nj-worker-0  gloo/TCP   eth0\n" in text


def test_tcp_fallback_needs_ib_asked_for_somewhere_in_the_job() -> None:
    # Rank 0 prints the NCCL settings; a worker that fell back to sockets is flagged.
    master = PodDiagnoser("m").feed_all(["trainer: NCCL settings: NCCL_IB_HCA=mlx5"])
    worker = PodDiagnoser("w").feed_all(["x NCCL INFO NET/Socket : Using [0]eth0:10.1.1.1<0>"])
    report = combine([master, worker])
    assert [(f.code, f.pod, f.line) for f in report.findings] == [("tcp-fallback", "w", 1)]
    quiet = PodDiagnoser("w").feed_all(["x NCCL INFO NET/Socket : Using [0]eth0:10.1.1.1<0>"])
    assert combine([quiet]).findings == []  # nobody asked for IB


def test_findings_are_bounded_per_code_and_counted() -> None:
    line = "h:1:2 [0] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_reg_mr failed with error x"
    report = combine([PodDiagnoser("w").feed_all(line for _ in range(1000))])
    # One finding per fault: the first line, every line counted.
    assert [(f.line, f.seen) for f in report.findings if f.code == "memlock"] == [(1, 1000)]
    assert report.counts[("w", "memlock")] == 1000
    assert "  seen:     1000 lines, on 1 pod\n" in render_text(report)


def test_evidence_is_cut_and_hostile_lines_stay_inert() -> None:
    long = "torch.OutOfMemoryError: CUDA out of memory. " + "x" * 10_000
    hostile = "\x1b]0;owned\x07[bold red]RuntimeError: DataLoader worker (pid 7) exited unexpectedly\x1b[2J"
    report = combine([PodDiagnoser("[red]pod\x1b[0m").feed_all([long, hostile])])
    evidence = {f.code: f.evidence for f in report.findings}
    assert len(evidence["cuda-oom"]) <= diagnose.EVIDENCE_MAX + 2
    assert evidence["dataloader-killed"] == hostile  # kept literally (JSON escapes it)
    text = render_text(report)
    assert "\x1b" not in text and "\x07" not in text
    assert "^[]0;owned^G[bold red]RuntimeError" in text and "[red]pod^[[0m" in text


def test_a_saved_log_with_a_huge_line_is_read_in_pieces(tmp_path: Path) -> None:
    path = tmp_path / "w.txt"
    path.write_bytes(b"a" * (diagnose.MAX_LINE_READ * 2 + 5) + b"\nDistNetworkError: x\r\n")
    lines = list(diagnose.read_log_lines(path))
    assert [len(x) for x in lines[:3]] == [diagnose.MAX_LINE_READ] * 2 + [5]
    assert diagnose_files([path]).codes() == ["rendezvous"]


def test_cli_reads_saved_logs_as_json_with_exit_codes(capsys: pytest.CaptureFixture) -> None:
    assert main(["diagnose", "--log", str(LOGS / "ib-ok.log"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == {
        "pods": [{"pod": "ib-ok", "transport": "IB", "device": "mlx5_2:1/RoCE"}],
        "findings": [],
    }
    args = ["diagnose", "--log", str(LOGS / "memlock.log"), "--log", str(LOGS / "data-starved.log")]
    assert main([*args, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [p["pod"] for p in doc["pods"]] == ["memlock", "data-starved"]
    first = doc["findings"][0]
    assert set(first) == {  # the one shape of a finding (Finding.to_dict)
        "code",
        "severity",
        "message",
        "fix",
        "field",
        "pod",
        "pods",
        "seen",
        "restarts",
        "line",
        "evidence",
        "ok",
        "remedy",
    }
    assert (first["code"], first["severity"], first["pod"], first["line"]) == (
        "memlock",
        "error",
        "memlock",
        4,
    )
    assert first["pods"] == ["memlock"]
    assert doc["findings"][-1]["code"] == "data-starved"  # errors first, then warnings
    assert main(["diagnose", "--log", str(LOGS / "data-starved.log")]) == 0  # a warning only
    assert "WARNING data-starved  data-starved:3" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["diagnose"], "error: diagnose needs a JOB or --log FILE"),
        (["diagnose", "job", "--log", "x.log"], "error: diagnose takes a JOB or --log FILE"),
        (["diagnose", "--log", "/nonexistent/x.log"], "error: --log /nonexistent/x.log: no such"),
    ],
)
def test_cli_usage_errors_exit_2(argv: list[str], message: str, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and re.search(r"^hint: ", err, re.M)


def test_the_docs_document_every_code_with_its_evidence() -> None:
    assert DIAGNOSE_CODES.doc == "docs/health.md"
    doc = (Path(__file__).parents[2] / DIAGNOSE_CODES.doc).read_text()
    for spec in CODES.values():
        row = f"| `{spec.code}` | {spec.severity} | {spec.retry} | {spec.message} | `{spec.example}` |"
        assert row in doc
    assert DIAGNOSE_CODES.current(doc) == diagnose_codes_table(), DIAGNOSE_CODES.stale
    assert "runai-tui diagnose" in doc and "runai-tui preflight" in doc


BIG_LOG_SCRIPT = r"""
import itertools, resource, sys
from runai_tui.knowledge.diagnose import PodDiagnoser, combine
LINES = [
    "host:312:340 [0] NCCL INFO Channel 00/0 : 2[0] -> 0[0] [receive] via NET/IB/0/GDRDMA",
    '{"kind": "train", "step": 40, "epoch": 0, "loss": 1.3, "lr": 0.01, "data_time": 0.02, '
    '"step_time": 0.5, "time": 1795000010.0}',
    "[rank1]:[E1123 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=2144, OpType=ALLREDUCE) ran for 1800087 milliseconds before timing out.",
    "epoch 3 step 1000 " + "y" * 400,
]
target = int(sys.argv[1]) * 2**20
def lines():  # made as they are read: the log is never in memory, only the diagnoser's state
    size = 0
    for i in itertools.count():
        line = LINES[i % 50] if i % 50 < 3 else LINES[3]
        size += len(line) + 1
        if size > target:
            return
        yield line
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
pod = PodDiagnoser("big").feed_all(lines())
report = combine([pod])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(pod.lines, before, after, len(report.findings), report.counts[("big", "nccl-timeout")])
"""


@pytest.mark.slow
def test_a_large_log_is_streamed_with_flat_memory() -> None:
    """300 MB of log through the diagnoser in a fresh process: its peak RSS barely moves."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", BIG_LOG_SCRIPT, "300"], capture_output=True, text=True, check=True
    ).stdout.split()
    lines, before_kb, after_kb, findings, timeouts = map(int, out)
    assert lines > 600_000
    assert after_kb - before_kb < 16 * 1024  # well under 16 MB for 300 MB of log
    assert findings == 1 and timeouts > 10_000  # one finding per fault, every line counted


def test_transport_in_the_formats_of_other_nccl_versions_and_plugins() -> None:
    prefix = "node-3:2201:2290 [0] NCCL INFO "
    # Relaxed ordering marker after the devices (NCCL 2.19+).
    ro = prefix + "NET/IB : Using [0]mlx5_4:1/RoCE [1]mlx5_5:1/RoCE [RO]; OOB bond0:10.2.0.7<0>"
    assert transport(ro, prefix + "Using network IB") == ("IB", "mlx5_4:1/RoCE,mlx5_5:1/RoCE")
    # The IB plugin (IBext) with merged NICs, and its channels.
    merged = (
        prefix + "NET/IB : Using [0]={[0] mlx5_4:1/RoCE, [1] mlx5_5:1/RoCE} "
        "[1]={[2] mlx5_6:1/RoCE} [RO]; OOB bond0:10.2.0.7<0>"
    )
    plugin = prefix + "Using network IBext_v8"
    channel = prefix + "Channel 01/0 : 1[0] -> 2[0] [send] via NET/IBext_v8/1"
    assert transport(merged, plugin, channel) == (
        "IB",
        "mlx5_4:1/RoCE,mlx5_5:1/RoCE,mlx5_6:1/RoCE",
    )
    # Sockets on several interfaces, IPv6 ones included.
    sockets = (
        prefix
        + "NET/Socket : Using [0]eno2:10.2.0.7<0> [1]veth9a:fe80::1c2:3ff:fe4d:5e6f%veth9a<0>"
    )
    assert transport(prefix + "NET/IB : No device found.", sockets) == ("Socket", "eno2,veth9a")
    # A network that is neither decides nothing.
    assert transport(prefix + "Using network AWS Libfabric") == ("unknown", "")
