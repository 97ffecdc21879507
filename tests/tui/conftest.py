"""Fixtures for TUI tests on the real embedded local cluster (`runai-local`, real processes)."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from runai_tui.profiles import ProfileStore
from runai_tui.runai.backend import select_backend
from runai_tui.runai.client import RunaiClient
from runai_tui.shapes.errors import RunaiError
from tests.tui.showcase import steady_cursors

# A pod that prints a greeting, a hostile line, five trainer metric lines, then idles.
JOB_SCRIPT = r"""
echo "hello from the pod"
printf '[bold red]not markup[/] \033[2J \033]0;pwned\007 end\n'
i=1
while [ $i -le 5 ]; do
  echo "{\"kind\":\"train\",\"step\":$i,\"epoch\":0,\"loss\":0.$((10 - i)),\"lr\":0.01,\"images_per_sec\":12.5}"
  i=$((i + 1))
done
echo ready
exec sleep 600
"""

DEMO_PROFILE = """\
description: demo job for the TUI tests
job_name: demo
image: local/demo:1
workers: 1
gpus: 0
env:
  GREETING: hi
command: [sh, {script}]
"""


@pytest.fixture
def local_client() -> Iterator[RunaiClient]:
    """A client on the local cluster; every job left at the end is deleted (pods killed)."""
    client = RunaiClient(select_backend("local"), timeout=30)
    yield client
    with contextlib.suppress(RunaiError):
        for job in client.list_jobs():
            with contextlib.suppress(RunaiError):
                client.delete(job.name)


@pytest.fixture
def demo_store(tmp_path: Path) -> ProfileStore:
    """A profile store with one `demo` profile whose pods run JOB_SCRIPT."""
    script = tmp_path / "job.sh"
    script.write_text(JOB_SCRIPT)
    shipped = tmp_path / "profiles"
    shipped.mkdir()
    (shipped / "demo.yaml").write_text(DEMO_PROFILE.format(script=script))
    return ProfileStore([shipped, tmp_path / "user-profiles"])


@pytest.fixture(autouse=True)
def no_animations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scrolls and tab underlines jump instead of animating: the same end state, sooner."""
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")


@pytest.fixture
def snap_compare(snap_compare: Callable[..., bool]) -> Callable[..., bool]:
    """pytest-textual-snapshot's snap_compare, with every input's cursor steady (Textual's public
    `cursor_blink = False`, as posting's snapshot tests do) once `run_before` is done: a snapshot
    must not depend on the phase of the cursor's blink."""

    def compare(app: Any, *, run_before: Callable[[Pilot], Awaitable[None]] | None = None,
                **options: Any) -> bool:  # fmt: skip
        async def steady(pilot: Pilot) -> None:
            if run_before is not None:
                await run_before(pilot)
            await steady_cursors(pilot)

        return snap_compare(app, run_before=steady, **options)

    return compare
