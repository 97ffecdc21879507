"""A wrong GLOO_SOCKET_IFNAME on a real 2-pod gloo job on the local cluster, diagnosed and fixed
by a resubmit (the resubmit loop: NAME-2 trains with GLOO_SOCKET_IFNAME=lo and completes); then
`runai-tui diagnose` and the describe screen's health panel show each pod's transport of the
trained job as the trainer says it (gloo/TCP and the interface), and the bad interface as one
finding naming both pods. One pair of jobs serves both: the loop's two are the failed and the
trained job this module needs (each job is two pods that import torch: about 30 CPU-s)."""

from __future__ import annotations

import json
import os

import pytest

from runai_tui.knowledge.findings import ERROR
from runai_tui.runai.client import RunaiClient
from runai_tui.tui.app import RunaiTuiApp
from runai_tui.tui.screens.describe import DescribeScreen
from runai_tui.tui.widgets.health import HealthPanel
from tests.local.resubmit_loop import loop, tiny, until, user_profile
from tests.local.test_through_runai_tui import tui
from tests.tui.helpers import wait_for
from tests.tui.screen_text import screen_text

PODS = {
    "ifbad-2": ["ifbad-2-master-0", "ifbad-2-worker-0"],
    "ifbad": ["ifbad-master-0", "ifbad-worker-0"],
}


def finished(client: RunaiClient, name: str) -> bool:
    # Stopped: the failed job, still Running at the resubmit, suspended by it (its run held the
    # output dir the new job writes); its logs stay for diagnose.
    return client.describe(name).job.phase.value in ("Completed", "Failed", "Stopped")


# Two jobs one after the other (the failed one, then its resubmit): its own guard is twice the
# suite's 300 s, as for the other resubmit loops on a loaded host.
@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_a_wrong_gloo_interface_is_fixed_by_a_resubmit_and_shown_on_both_pods(
    local_client: RunaiClient,
) -> None:
    user_profile("ifbad", tiny("ifbad", extra="env: {GLOO_SOCKET_IFNAME: bad0}"))
    loop("ifbad", "socket-ifname", "env.GLOO_SOCKET_IFNAME=lo")
    until(lambda: all(finished(local_client, n) for n in PODS), "both jobs to end", 600)
    assert local_client.describe("ifbad-2").job.phase.value == "Completed"

    # The trained job: every pod's transport from its log, the interface with it.
    res = tui("diagnose", "ifbad-2", "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    pods = json.loads(res.stdout)["pods"]
    assert [(p["pod"], p["transport"]) for p in pods] == [
        (pod, "gloo/TCP") for pod in PODS["ifbad-2"]
    ]
    # The remedy's interface, one of this machine's (the local cluster's pods share its network).
    device = pods[0]["device"]
    assert device == "lo" and device in os.listdir("/sys/class/net")
    assert pods[1]["device"] == device
    logs = tui("logs", "ifbad-2", "--pod", "ifbad-2-worker-0").stdout
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
            if name == "ifbad-2":
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
        # The HEALTH column: the fault's code once, not again for its second pod. "+N" counts
        # the job's other error codes only; a loaded host once gave the failed job a second one
        # (a clean clone, 2026-11-29; which one was not kept: this message names them now).
        (failed,) = [job for job in local_client.list_jobs() if job.name == "ifbad"]
        diagnosis = app.health.get(failed)
        assert diagnosis is not None
        errors = diagnosis.codes(ERROR)
        assert errors[0] == "socket-ifname", errors
        more = f" +{len(errors) - 1}" if len(errors) > 1 else ""
        assert str(table.cell("ifbad", "health")) == f"✗ socket-ifname{more}", errors
        # The fault is gone from the fixed job. Its health may still carry a straggler warning:
        # that rule measures the ranks' timing, which the suite's other workers disturb.
        fixed = str(table.cell("ifbad-2", "health"))
        assert fixed in ("ok", "! straggler"), fixed
