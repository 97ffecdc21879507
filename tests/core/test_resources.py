"""Resources per pod: the probe's output (real cgroup v1/v2, /proc and nvidia-smi formats) into
figures, and `runai-tui top` on the cluster path through a fake `runai` answering the exec."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runai_tui.knowledge.probes.resources import (
    COMMAND,
    SCRIPT,
    parse_gpu_line,
    parse_probe,
    render_text,
)
from runai_tui.shapes.errors import RunaiError
from runai_tui.workflows.pod_probes import top_job
from tests.fakes import rule

# cgroup v2 cpu.stat, memory.current/max and memory.stat as a container sees them; nvidia-smi's
# --format=csv,noheader,nounits rows for two A100 80GB (the second one MIG: [N/A] utilisation).
V2 = """\
@@rs source cgroup-v2
@@rs mem_current 7784628224
@@rs mem_max 8589934592
@@rs mem_inactive_file 104857600
@@rs uptime0 8121.43
@@rs cpu_usec0 50000000
@@rs uptime1 8122.45
@@rs cpu_usec1 52040000
@@rs gpu 87, 30215, 81920
@@rs gpu [N/A], 1024, 81920
@@rs end ok
"""
# cgroup v1 (this machine's own figures, read once): no limit is 9223372036854771712.
V1 = """\
@@rs source cgroup-v1
@@rs mem_current 2801074176
@@rs mem_max 9223372036854771712
@@rs mem_inactive_file 951025664
@@rs uptime0 100.00
@@rs cpu_nsec0 1020144093880
@@rs uptime1 101.00
@@rs cpu_nsec1 1020644093880
@@rs gpu_tool none
@@rs end ok
"""
# The local cluster: /proc/PID/stat after "comm) ", for the pod's two processes, 19402 and 19410.
STAT = "S 19401 19402 11189 0 -1 4194304 100 0 0 0 {u} {s} 0 0 20 0 1 0 715673 3133440 {rss} 1"
PROC = f"""\
@@rs source processes 19402 19410
@@rs clk_tck 100
@@rs page_size 4096
@@rs mem_max 1073741824
@@rs uptime0 10.00
@@rs proc0 {STAT.format(u=100, s=20, rss=1000)}
@@rs proc0 {STAT.format(u=5, s=5, rss=50000)}
@@rs uptime1 11.00
@@rs proc1 {STAT.format(u=190, s=30, rss=1000)}
@@rs proc1 {STAT.format(u=5, s=5, rss=250000)}
@@rs gpu_tool none
@@rs end ok
"""


def test_cgroup_v2_with_two_gpus() -> None:
    res = parse_probe("p-0", "motd line\n" + V2)
    assert res.error == "" and res.source == "cgroup-v2"
    assert res.cpu_cores == pytest.approx(2.04 / 1.02)
    assert res.memory_bytes == 7784628224 - 104857600
    assert res.memory_limit_bytes == 8589934592
    assert res.memory_fraction == pytest.approx(0.894, abs=0.001)
    assert not res.memory_warning  # 89%: under the 90% line
    assert [(g.index, g.util_percent, g.memory_used_mib) for g in res.gpus] == [
        (0, 87.0, 30215.0),
        (1, None, 1024.0),
    ]
    row = render_text_of(res)
    assert "GPU0 87% 29.5/80.0 GiB; GPU1 ? 1.0/80.0 GiB" in row
    assert "7.2 GiB / 8.0 GiB 89%" in row


def test_memory_at_90_percent_is_a_warning() -> None:
    res = parse_probe("p-0", V2.replace("mem_inactive_file 104857600", "mem_inactive_file 0"))
    assert res.memory_warning
    text = render_text_of(res)
    assert "91% !" in text and "warning: p-0: memory at 91% of its limit" in text


def test_cgroup_v1_without_limit_and_without_nvidia_smi() -> None:
    res = parse_probe("p-0", V1)
    assert res.error == "" and res.cpu_cores == pytest.approx(0.5)
    assert res.memory_limit_bytes is None and res.memory_fraction is None
    assert not res.gpu_tool and res.gpu_error == ""
    assert "1.7 GiB (no limit)" in render_text_of(res) and "no GPU tool" in render_text_of(res)


def test_local_pod_processes_are_summed() -> None:
    res = parse_probe("p-0", PROC)
    assert res.cpu_cores == pytest.approx(1.0)  # 100 ticks at 100/s over 1 s
    assert res.memory_bytes == 251000 * 4096 and res.memory_limit_bytes == 1073741824
    assert res.memory_warning  # 0.96 of the limit


def test_what_could_not_be_read_is_an_error_never_a_number() -> None:
    none = parse_probe("p-0", "@@rs source none\n@@rs gpu_tool none\n@@rs end ok\n")
    assert none.error.startswith("no cgroup files in the pod") and none.cpu_cores is None
    ended = parse_probe("p-0", "@@rs source processes 77\n@@rs gpu_tool none\n@@rs end ok\n")
    assert ended.error == "none of the pod's processes is left in /proc: the pod has ended"
    cut = parse_probe("p-0", V2.replace("@@rs end ok\n", ""))
    assert cut.error.startswith("the probe did not finish")
    failed = parse_probe("p-0", V1.replace("gpu_tool none", "gpu_error NVIDIA-SMI has failed"))
    assert failed.error == "" and failed.gpu_tool
    assert "nvidia-smi failed: NVIDIA-SMI has failed" in render_text_of(failed)
    assert parse_gpu_line(3, "12").memory_total_mib is None


def render_text_of(res: object) -> str:
    from runai_tui.knowledge.probes.resources import TopReport

    return render_text(TopReport("job", [res]))  # type: ignore[list-item]


@pytest.mark.skipif(
    not (Path("/sys/fs/cgroup/memory.current").exists() or
         Path("/sys/fs/cgroup/memory/memory.usage_in_bytes").exists()),
    reason="this machine shows no cgroup files",
)  # fmt: skip
def test_the_probe_reads_this_machines_cgroup() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNAI_LOCAL_")}
    out = subprocess.run(COMMAND, capture_output=True, text=True, env=env, check=True).stdout
    res = parse_probe("here", out)
    assert res.error == "" and res.source in ("cgroup-v1", "cgroup-v2")
    assert res.memory_bytes is not None and res.memory_bytes > 0
    assert res.cpu_cores is not None and res.cpu_cores >= 0


DESCRIBE = json.dumps(
    {
        "name": "job-a",
        "phase": "Running",
        "pods": [
            {"name": "job-a-master-0", "phase": "Running", "role": "master"},
            {"name": "job-a-worker-0", "phase": "Running", "role": "worker"},
            {"name": "job-a-worker-1", "phase": "Succeeded", "role": "worker"},
        ],
    }
)


async def test_top_job_runs_one_probe_per_running_pod(make_fake, client_for) -> None:
    fake = make_fake(
        [
            rule("describe", "job-a", stdout=DESCRIBE),
            rule("exec", "--pod", "job-a-master-0", stdout=V2),
            rule("exec", "--pod", "job-a-worker-0", stdout="@@rs source none\n@@rs end ok\n"),
        ]
    )
    report = await top_job(client_for(fake), "job-a")
    execs = sorted(c for c in fake.calls() if "exec" in c)
    assert execs == [
        ["training", "pytorch", "exec", "job-a", "--pod", f"job-a-{pod}", "--", "sh", "-c", SCRIPT]
        for pod in ("master-0", "worker-0")
    ]  # no --tty, no --stdin; the pod that ended is not asked
    assert [(p.pod, p.phase, bool(p.error)) for p in report.pods] == [
        ("job-a-master-0", "Running", False),
        ("job-a-worker-0", "Running", True),
        ("job-a-worker-1", "Completed", False),
    ]
    assert report.exit_code == 1
    with pytest.raises(RunaiError) as info:
        await top_job(client_for(fake), "job-a", pod="job-a-worker-1")
    assert "pod 'job-a-worker-1' is Completed" in info.value.message


def test_top_cli_on_the_cluster_path(tmp_path: Path, make_fake) -> None:
    fake = make_fake(
        [
            rule("describe", "job-a", stdout=DESCRIBE),
            rule("describe", "nope", stderr="workload 'nope' could not be found\n", exit=1),
            rule("exec", "--pod", "job-a-master-0", stdout=V2),
            rule("exec", "--pod", "job-a-worker-0", stdout=V1),
        ]
    )
    env = {**os.environ, **fake.env()}

    def top(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "runai_tui.cli", "top", *args]
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)

    res = top("job-a")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["POD", "STATUS", "CPU", "MEMORY", "GPUS"]
    assert lines[1].split()[:4] == ["job-a-master-0", "Running", "2.00", "cores"]
    assert "no GPU tool" in lines[2] and lines[3].split() == ["job-a-worker-1", "Completed"]
    doc = json.loads(top("job-a", "--pod", "job-a-master-0", "--json").stdout)
    assert [g["util_percent"] for g in doc["pods"][0]["gpus"]] == [87.0, None]
    res = top("nope")
    assert res.returncode == 1 and res.stderr.startswith("error: ") and res.stdout == ""
    res = top("job-a", "--watch", "--every", "0")
    assert res.returncode == 2 and res.stderr.startswith(
        "error: argument --every: '0': must be more than 0"
    )


def test_the_probe_runs_nvidia_smi_and_reads_its_csv(tmp_path: Path) -> None:
    """The sh probe itself, with an `nvidia-smi` on PATH that prints what the real one prints for
    two GPUs (and then one that fails, as on a node whose driver is gone)."""
    tool = tmp_path / "nvidia-smi"
    tool.write_text(
        '#!/bin/sh\ncase "$*" in *--query-gpu=utilization.gpu,memory.used,memory.total*'
        "--format=csv,noheader,nounits*) printf '100, 79001, 81559\\n3, 512, 81559\\n' ;; "
        "*) exit 9 ;; esac\n"
    )
    tool.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNAI_LOCAL_")}
    env["PATH"] = f"{tmp_path}:{env['PATH']}"
    out = subprocess.run(COMMAND, capture_output=True, text=True, env=env, check=True).stdout
    res = parse_probe("here", out)
    assert res.gpu_tool and [(g.util_percent, g.memory_used_mib) for g in res.gpus] == [
        (100.0, 79001.0),
        (3.0, 512.0),
    ]
    tool.write_text(
        "#!/bin/sh\necho 'NVIDIA-SMI has failed because it couldn'\"'\"'t communicate'\nexit 9\n"
    )
    out = subprocess.run(COMMAND, capture_output=True, text=True, env=env, check=True).stdout
    res = parse_probe("here", out)
    assert res.gpus == [] and res.gpu_error.startswith("NVIDIA-SMI has failed")
