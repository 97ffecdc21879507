"""The client is written once (async); the sync API runs the same coroutines. These tests check
that the twins really are the async methods, and that the sync path still cleans up after Ctrl-C
(a real `runai-tui logs -f` process, interrupted)."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from runai_tui.runai import runner
from runai_tui.runai.client import RunaiClient
from tests.core.test_client import DESCRIBE_LOCAL, pid_alive, wait_gone
from tests.fakes import FakeRunai, rule

REPO = Path(__file__).resolve().parents[2]
TWINS = {
    "list_jobs": "alist_jobs",
    "describe": "adescribe",
    "submit": "asubmit",
    "delete": "adelete",
    "suspend": "asuspend",
    "resume": "aresume",
    "whoami": "awhoami",
    "cli_version": "acli_version",
}


@pytest.mark.parametrize(("sync", "async_"), sorted(TWINS.items()))
def test_each_sync_method_runs_its_async_twin(sync: str, async_: str) -> None:
    assert getattr(RunaiClient, sync).__wrapped__ is getattr(RunaiClient, async_)


def test_sync_logs_iterates_stream_logs(
    make_fake: Callable[..., FakeRunai], client_for: Callable[..., RunaiClient], monkeypatch
) -> None:
    fake = make_fake([rule("logs", lines=["a", "b"])])
    client = client_for(fake)
    streamed: list[tuple] = []
    real = RunaiClient.stream_logs

    def spy(self, *args):
        streamed.append(args)
        return real(self, *args)

    monkeypatch.setattr(RunaiClient, "stream_logs", spy)
    assert list(client.logs("job", tail=3)) == ["a", "b"]
    assert streamed == [("job", None, False, 3, None, False)]


async def test_a_sync_call_inside_an_event_loop_still_works(
    make_fake: Callable[..., FakeRunai], client_for: Callable[..., RunaiClient]
) -> None:
    # Sync code called from async code (a test, a helper) blocks like any sync call, and works.
    fake = make_fake([rule("version", stdout="Version: 2.25.3\n"), rule("logs", lines=["a", "b"])])
    client = client_for(fake)
    assert client.cli_version().line == "Version: 2.25.3"
    assert list(client.logs("job-a")) == ["a", "b"]
    assert (await client.acli_version()).version == "2.25.3"  # the caller's loop is untouched


def test_ctrl_c_on_a_sync_follow_kills_the_runai_process_group(
    make_fake: Callable[..., FakeRunai],
) -> None:
    # `logs -f` asks describe first (a Pending pod is waited for): this one runs.
    running = rule("describe", stdout=json.dumps(DESCRIBE_LOCAL))
    fake = make_fake([running, rule("logs", lines=["epoch 1"], block=True, spawn_child=True)])
    proc = subprocess.Popen(
        [sys.executable, "-m", "runai_tui.cli", "logs", "job-a", "-f"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **fake.env(), "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"epoch 1\n"
        record = fake.records()[-1]  # the `logs`, after the describe
        assert record["argv"][2] == "logs"
        assert pid_alive(record["pid"])
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()  # reap it and close its pipes
    assert wait_gone(record["pid"])
    assert wait_gone(record["child_pid"])  # the whole group, grandchild included


def test_run_sync_cancels_the_coroutine_on_interrupt() -> None:
    events: list[str] = []

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
            events.append("slept")
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        finally:
            events.append("cleaned")

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.run_sync(slow())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    # The sleep was cancelled inside the loop, then cleaned up: it never ran to its end.
    assert events == ["cancelled", "cleaned"]


def test_ctrl_c_cancels_a_running_child_reaps_it_and_raises(tmp_path: Path) -> None:
    """A real SIGINT while a child runs: the coroutine is cancelled inside the loop, the child
    is killed and reaped, and run_sync raises KeyboardInterrupt (not a hang, on any Python)."""
    pid_file, slept = tmp_path / "pid", tmp_path / "slept"
    child = [
        sys.executable,
        "-c",
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(30); "
        f"open({str(slept)!r}, 'w')",
    ]
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    def interrupt_once_the_child_runs() -> None:
        while not pid_file.exists() or not pid_file.read_text():
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Thread(target=interrupt_once_the_child_runs, daemon=True)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.run_sync(runner.run(child, None, None))
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # given back
    finally:
        timer.join(timeout=30)
        signal.signal(signal.SIGINT, previous)
    assert wait_gone(int(pid_file.read_text()))  # killed and reaped
    assert not slept.exists()  # killed in its sleep, never let run to its end


@pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="SIGINT goes to main thread"
)
def test_a_ctrl_c_while_the_private_loop_is_made_waits_until_it_is_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A Ctrl-C landing inside asyncio's loop constructor left a half-made loop whose finaliser
    # printed a traceback ("Exception ignored ... '_ssock'"), and a "coroutine was never awaited"
    # warning; `top --watch` showed both now and then. Here the Ctrl-C arrives as the loop is made.
    made: list[asyncio.AbstractEventLoop] = []
    new_event_loop = asyncio.new_event_loop

    def interrupted_while_made() -> asyncio.AbstractEventLoop:
        signal.raise_signal(signal.SIGINT)
        made.append(new_event_loop())
        return made[-1]

    async def reading() -> int:
        return 1

    monkeypatch.setattr(asyncio, "new_event_loop", interrupted_while_made)
    coroutine = reading()
    # Ctrl-C as at a terminal, whatever an earlier test in this process left in place.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.run_sync(coroutine)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(made) == 1, "the Ctrl-C did not wait for the loop to be made"
    assert coroutine.cr_frame is None  # closed: nothing warns that it was never awaited
    made[0].close()


@pytest.mark.parametrize("ending", ["cancelled twice", "cancelled as the loop ends"])
def test_a_stopped_command_is_reaped_and_closed_whatever_cancels_it_again(ending: str) -> None:
    """A command cancelled again while it is being killed: an exclusive worker restarted twice
    in a row, or an app that quits while a worker stops (the loop's end cancels every task left,
    the cleanup among them). The child is still reaped and its pipes closed: nothing is left for
    the collector to close after the event loop has gone, which CPython prints as "Exception
    ignored ... Event loop is closed"."""
    unraisable: list[str] = []
    pids: list[int] = []

    async def stop_it() -> None:
        task = asyncio.ensure_future(runner.run([sys.executable, "-c", SLEEPER], None, None))
        while not pids:
            await asyncio.sleep(0.02)
            pids.extend(child_pids(os.getpid(), SLEEPER))
        task.cancel()
        for _ in range(3):  # the first cancel lands: the child is killed, its reaping begins
            await asyncio.sleep(0)
        if ending == "cancelled twice":
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        # else: return now; asyncio.run cancels what is still running, then closes the loop

    previous = sys.unraisablehook
    sys.unraisablehook = lambda info: unraisable.append(
        f"{info.exc_type.__name__}: {info.exc_value}"
    )
    try:
        asyncio.run(stop_it())
        assert wait_gone(pids[0])
        for thread in threading.enumerate():  # asyncio's waitpid threads hold the transport
            if thread.name.startswith("asyncio-waitpid"):
                thread.join(timeout=10)
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert unraisable == []


SLEEPER = "import time; time.sleep(30)  # cancelled twice"


def child_pids(parent: int, marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent and marker.encode() in cmdline:
            found.append(int(entry.name))
    return found
