"""Two real 2-pod gloo jobs on the local cluster, one trained, one with a GLOO_SOCKET_IFNAME that
names no interface: `runai-tui diagnose` and the describe screen's health panel show each pod's
transport as the trainer says it (gloo/TCP and the interface), and the bad interface as one
finding naming both pods."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runai_tui.runai.client import RunaiClient
from runai_tui.tui.app import RunaiTuiApp
from runai_tui.tui.screens.describe import DescribeScreen
from runai_tui.tui.widgets.health import HealthPanel
from tests.local.resubmit_loop import tiny, until
from tests.local.test_through_runai_tui import tui
from tests.tui.helpers import wait_for
from tests.tui.screen_text import screen_text

PODS = {"gl": ["gl-master-0", "gl-worker-0"], "ifbad": ["ifbad-master-0", "ifbad-worker-0"]}


def finished(client: RunaiClient, name: str) -> bool:
    return client.describe(name).job.phase.value in ("Completed", "Failed")


@pytest.mark.slow
async def test_gloo_transport_and_one_finding_for_a_fault_on_both_pods(
    local_client: RunaiClient,
) -> None:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "runai-tui" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gl.yaml").write_text(tiny("gl"))
    (folder / "ifbad.yaml").write_text(tiny("ifbad", extra="env: {GLOO_SOCKET_IFNAME: bad0}"))
    for name in PODS:  # both at once: each pod starts torch, the waits overlap
        assert tui("submit", "--profile", name).returncode == 0
    until(lambda: all(finished(local_client, n) for n in PODS), "both jobs to end", 600)
    assert local_client.describe("gl").job.phase.value == "Completed"

    # The trained job: every pod's transport from its log, the interface with it.
    res = tui("diagnose", "gl", "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    pods = json.loads(res.stdout)["pods"]
    # The local cluster's pods share this machine's network: an interface of this machine.
    assert [(p["pod"], p["transport"]) for p in pods] == [(pod, "gloo/TCP") for pod in PODS["gl"]]
    device = pods[0]["device"]
    assert device in os.listdir("/sys/class/net") and pods[1]["device"] == device
    logs = tui("logs", "gl", "--pod", "gl-worker-0").stdout
    assert f"trainer: rank 1: Using network gloo/TCP on {device} (" in logs

    # The bad interface: one finding naming both pods, with the first one's evidence.
    res = tui("diagnose", "ifbad")
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.stdout.count("ERROR socket-ifname") == 1
    assert "\n  pods:     ifbad-master-0, ifbad-worker-0\n" in res.stdout
    assert res.stdout.count("remedy:   --set env.GLOO_SOCKET_IFNAME=lo") == 1
    assert "Unable to find address for: bad0" in res.stdout
    doc = json.loads(tui("diagnose", "ifbad", "--json").stdout)
    found = [f for f in doc["findings"] if f["code"] == "socket-ifname"]
    assert [(f["pod"], f["pods"]) for f in found] == [("ifbad-master-0", PODS["ifbad"])]
    # Its process group never started: the logs do not say a transport, so neither do we.
    assert {p["transport"] for p in doc["pods"]} == {"unknown"}

    app = RunaiTuiApp(local_client, refresh_interval=0.5)
    async with app.run_test(size=(150, 50)) as pilot:
        table = app.screen.table
        for name in PODS:
            await wait_for(pilot, lambda n=name: table.select_name(n), f"the {name} row")
            await pilot.press("d")
            assert isinstance(app.screen, DescribeScreen)
            panel = app.screen.query_one(HealthPanel)
            await wait_for(pilot, lambda p=panel: p.diagnosis is not None, "the diagnosis")
            assert panel.diagnosis is not None
            if name == "gl":
                badge = f"gloo/TCP {device}"
                await wait_for(pilot, lambda b=badge: b in screen_text(app), "the badges")
                assert screen_text(app).count(badge) == 2
            else:
                shown = "pods: ifbad-master-0, ifbad-worker-0"
                await wait_for(pilot, lambda s=shown: s in screen_text(app), "the grouped finding")
                codes = [f.code for f in panel.diagnosis.findings]
                assert codes.count("socket-ifname") == 1
                assert screen_text(app).count("✗ socket-ifname") == 1
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, DescribeScreen), "jobs")
        # The HEALTH column: the one fault's code, no "+N" for its second pod.
        assert str(table.get_cell("ifbad", "health")) == "✗ socket-ifname"
        assert str(table.get_cell("gl", "health")) == "ok"
