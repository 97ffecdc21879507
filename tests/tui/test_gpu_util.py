"""The GPU UTIL pass: which running jobs it reads (bounded, longest unread first, not too often)
and what their cell says, from real-format probe outputs."""

from __future__ import annotations

from runai_tui.knowledge.probes.resources import TopReport, parse_probe
from runai_tui.shapes.models import Phase
from runai_tui.tui.gpu_util import JOBS_PER_PASS, REREAD_SECONDS, GpuUtilReader, util_text
from tests.core.test_resources import V1, V2
from tests.tui.fakeclient import FakeClient, make_job


def test_cell_text_is_the_mean_over_gpus_or_no_gpu_tool() -> None:
    assert util_text(TopReport("j", [parse_probe("a", V2)])) == "87%"  # the [N/A] GPU is left out
    assert util_text(TopReport("j", [parse_probe("a", V1)])) == "no GPU tool"
    failed = parse_probe("a", "@@rs source none\n@@rs end ok\n")
    failed.error = "exec failed"
    assert util_text(TopReport("j", [failed])) is None


async def test_a_pass_reads_a_few_running_gpu_jobs_longest_unread_first() -> None:
    now = [1000.0]
    jobs = [make_job(f"r{i}", Phase.RUNNING) for i in range(5)]
    jobs += [make_job("pend", Phase.PENDING), make_job("cpu", Phase.RUNNING)]
    jobs[-1].gpus = 0.0
    client = FakeClient(jobs=jobs, resources={f"r{i}-master-0": V2 for i in range(5)})
    reader = GpuUtilReader(clock=lambda: now[0])
    shown: dict[str, str | None] = {}

    await reader.read(client, jobs, shown.__setitem__)
    assert list(shown) == ["r0", "r1"][:JOBS_PER_PASS] and shown["r0"] == "87%"
    await reader.read(client, jobs, shown.__setitem__)
    await reader.read(client, jobs, shown.__setitem__)
    assert sorted(shown) == ["r0", "r1", "r2", "r3", "r4"]  # never the Pending or GPU-less one
    assert reader.due(jobs) == []  # each read within REREAD_SECONDS
    now[0] += REREAD_SECONDS
    assert [j.name for j in reader.due(jobs)] == ["r0", "r1"]
    # Pods that cannot be read this time leave the last figure; a job gone clears it.
    client.resources.clear()
    await reader.read(client, jobs, shown.__setitem__)
    assert shown["r0"] == "87%"
    now[0] += REREAD_SECONDS
    client.jobs = [j for j in client.jobs if j.name not in ("r2", "r3")]
    await reader.read(client, jobs, shown.__setitem__)
    assert shown["r2"] is None and shown["r3"] is None  # r2, r3: read longest ago
