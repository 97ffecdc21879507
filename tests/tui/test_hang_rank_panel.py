"""The describe screen's health panel names the rank that hung, from real Flight Recorder dumps
(a real two-process gloo hang, tests/hang/) read through the pod's exec path; `h` reads them
again."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

import pytest

from runai_tui.shapes.models import Phase
from runai_tui.tui.screens.describe import DescribeScreen
from runai_tui.tui.widgets.health import HealthPanel
from tests.hang.test_gloo_hang import run_pair
from tests.tui.fakeclient import FakeClient, make_job
from tests.tui.helpers import wait_for
from tests.tui.screen_text import screen_text
from tests.tui.test_jobs_screen import make_app

pytestmark = pytest.mark.slow  # a real two-process gloo hang


@dataclass
class PvcClient(FakeClient):
    """A stand-in whose pods see `pvc` (a real directory): `ls -1 DIR` and `base64 FILE`, the two
    commands the dumps are read with, answered from it."""

    pvc: Path = Path("/nonexistent")

    async def aexec_output(self, name, pod, command, timeout=None) -> str:
        self.calls.append(("exec_output", name, pod, list(command)))
        path = Path(command[-1])
        if command[:2] == ["ls", "-1"]:
            return "".join(f"{p.name}\n" for p in sorted(path.iterdir()))
        return base64.encodebytes(path.read_bytes()).decode()


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("never")
    for proc in run_pair(out, "never"):
        proc.communicate(timeout=120)
    return out / "flight-recorder"


async def test_health_panel_shows_hang_rank_and_h_reads_the_dumps_again(dumps: Path) -> None:
    client = PvcClient(
        jobs=[make_job("run", Phase.RUNNING, pods=2)],
        logs={
            "run-master-0": [
                f"trainer: flight recorder: a hang dumps each rank's collectives to {dumps}/rank-N",
                f"trainer: [rank 0] flight recorder dump (collective failed): {dumps}/rank-0",
            ],
            "run-worker-0": ["trainer: [rank 1] TEST HOOK: stalling"],
        },
        pvc=dumps,
    )
    app = make_app(client)
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.press("d")
        assert isinstance(app.screen, DescribeScreen)
        panel = app.screen.query_one(HealthPanel)
        await wait_for(pilot, lambda: panel.diagnosis is not None)
        assert panel.has_class("-errors")
        assert [f.code for f in panel.diagnosis.findings] == ["hang-rank"]
        text = screen_text(app)
        assert "hang-rank" in text and "rank 1 never entered collective 3" in text
        # The operator copies away rank 1's dump; `h` reads the directory again.
        (dumps / "rank-1").rename(dumps.parent / "rank-1.moved")
        await pilot.press("h")
        await wait_for(pilot, lambda: "left no dump" in panel.diagnosis.findings[0].message)
        assert "rank 1 left no dump" in screen_text(app)
