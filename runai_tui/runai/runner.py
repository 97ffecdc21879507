"""The core's process runner: the one place that starts `runai` (or `runai-local`) processes.

argv lists (never a shell), stdin from /dev/null (so a prompt can never hang us), the child in its
own process group (so a timeout or a cancel kills it and anything it started), and the child
always reaped. Everything is async, so the TUI's event loop is never blocked.

The one bridge from sync code to these coroutines is the sync facade at the end of this module
(docs/contracts.md "From sync to async"): `run_sync` runs a coroutine to its end, `iterate_sync`
hands on the items of an async iterator, `run_in_background` starts a coroutine in a thread and
answers a `concurrent.futures.Future`. Each runs on a private event loop of its own (in a helper
thread when the caller itself runs inside an event loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import threading
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_READ_CHUNK = 65536
_MAX_LINE = 1 << 20  # a "line" longer than this is handed on in pieces
_DRAIN_SECONDS = 2.0  # reading a killed child's pipes to their end
_T = TypeVar("_T")


class Timeout(Exception):
    """The command ran longer than its timeout (it has been killed)."""


def decode(data: bytes) -> str:
    """Text of a command's output: invalid UTF-8 replaced, terminal escape sequences dropped."""
    return _ANSI_RE.sub("", data.decode("utf-8", errors="replace"))


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by `pid` (children started with start_new_session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _stop(
    proc: asyncio.subprocess.Process, reader: asyncio.Future[bytes] | None = None
) -> None:
    """Kill the process group (unless the child has ended), stop READER (a task reading a pipe),
    reap the child and read both pipes to their end: asyncio closes a child's transport once it
    has exited and its pipes are at EOF. Left to the garbage collector, the pipes would be closed
    after their event loop, which CPython prints at exit ("Exception ignored ... Event loop is
    closed"). So this runs to its end through further cancels: a worker restarted again, or the
    app quitting while a worker stops. The SIGKILL and the bounded drain keep it short."""
    if proc.returncode is None:
        kill_group(proc.pid)
    await _to_the_end(lambda: _reap(proc, reader))


async def _to_the_end(cleanup: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run CLEANUP (safe to run again) to its end, then re-raise any cancel that came meanwhile.
    A cancel of this task leaves the shielded cleanup running; a loop that is shutting down
    cancels the cleanup too, and it starts again on the still-running loop."""
    task = asyncio.ensure_future(cleanup())
    cancelled = False
    while True:
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
            if task.cancelled():
                task = asyncio.ensure_future(cleanup())
            continue
        if cancelled:
            raise asyncio.CancelledError
        return


async def _reap(proc: asyncio.subprocess.Process, reader: asyncio.Future[bytes] | None) -> None:
    if reader is not None and not reader.done():
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader
    await proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            # A process that left the group may hold a pipe open: then the collector closes it.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(stream.read(), _DRAIN_SECONDS)


async def _spawn(argv: Sequence[str], env: Mapping[str, str] | None) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )


async def run(
    argv: Sequence[str], timeout: float | None, env: Mapping[str, str] | None
) -> tuple[int, bytes, bytes]:
    """Run to completion: (exit code, stdout, stderr). A timeout (raises Timeout), a cancel or a
    Ctrl-C kills the whole process group and reaps the child. OSError when it cannot start."""
    proc = await _spawn(argv, env)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        await _stop(proc)
        raise Timeout from None
    except BaseException:
        await _stop(proc)
        raise
    assert proc.returncode is not None
    return proc.returncode, out, err


def split_lines(buffer: bytearray, final: bool) -> list[str]:
    """Take the complete lines (and, at EOF, the rest) out of `buffer`, decoded."""
    lines: list[str] = []
    while True:
        cut = buffer.find(b"\n")
        if cut < 0:
            if len(buffer) >= _MAX_LINE or (final and buffer):
                cut = len(buffer)
            else:
                return lines
            piece = bytes(buffer[:cut])
            del buffer[:cut]
        else:
            piece = bytes(buffer[:cut])
            del buffer[: cut + 1]
        lines.append(piece.decode("utf-8", errors="replace").removesuffix("\r"))


class LineStream:
    """The stdout lines of a long-running command as they arrive (`async for line in stream`).
    No timeout. Closing the iteration early (break, `aclose()`, a cancel) kills the process group
    and reaps it. Once the iteration ends, `returncode` and `stderr` say how the command ended."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None) -> None:
        self.argv = list(argv)
        self.env = env
        self.returncode: int | None = None
        self.stderr = b""

    async def lines(self) -> AsyncGenerator[str, None]:
        proc = await _spawn(self.argv, self.env)
        assert proc.stdout is not None and proc.stderr is not None
        # stderr is drained concurrently so a chatty stderr cannot fill its pipe and stall stdout.
        stderr_task = asyncio.ensure_future(proc.stderr.read())
        try:
            buffer = bytearray()
            while True:
                chunk = await proc.stdout.read(_READ_CHUNK)
                buffer.extend(chunk)
                for line in split_lines(buffer, final=not chunk):
                    yield line
                if not chunk:
                    break
            self.returncode = await proc.wait()
            self.stderr = await stderr_task
        finally:
            await _stop(proc, stderr_task)


# --- the sync facade -----------------------------------------------------------------------------


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class _PrivateLoop:
    """A private event loop for sync callers. Called from inside a running event loop (a sync
    call in async code), the private loop runs in a helper thread, and the caller blocks as on
    any sync call."""

    def __init__(self) -> None:
        with _ctrl_c_held():
            self.loop = asyncio.new_event_loop()
        self.pool = ThreadPoolExecutor(1, "runai-sync") if _loop_running() else None

    def call(self, fn: Callable[..., _T], *args: Any) -> _T:
        if self.pool is None:
            return fn(*args)
        return self.pool.submit(fn, *args).result()

    def step(self, awaitable: Awaitable[_T]) -> _T:
        return self.call(lambda: _step(self.loop, awaitable))

    def close(self) -> None:
        def shutdown() -> None:
            with contextlib.suppress(Exception):
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            with _ctrl_c_held():
                self.loop.close()

        try:
            self.call(shutdown)
        finally:
            if self.pool is not None:
                self.pool.shutdown(wait=True)


@contextlib.contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) on the main thread until the lines inside are done; it is
    delivered as they end. An event loop interrupted half-way through its constructor or its
    close is left half-made, and its finaliser later prints a traceback."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _step(loop: asyncio.AbstractEventLoop, awaitable: Awaitable[_T]) -> _T:
    """Run one awaitable on `loop`. Ctrl-C cancels it, lets it clean up (kill and reap its
    child) and then raises KeyboardInterrupt, as `asyncio.Runner` does: on the main thread the
    first SIGINT only cancels the task, so it never lands inside the loop's own code. There it
    can drop a child's exit notice (Python 3.13's pidfd watcher reaps in a loop callback), and
    the cleanup would wait for that child for ever. A second Ctrl-C interrupts at once."""
    interrupted = False
    task: asyncio.Future[_T] | None = None

    def cancel_on_sigint(signum: int, frame: object) -> None:
        nonlocal interrupted
        if interrupted:  # a second Ctrl-C: do not wait for the cleanup
            raise KeyboardInterrupt
        interrupted = True
        if task is not None:
            loop.call_soon_threadsafe(task.cancel)

    # The handler goes in before the task exists: a Ctrl-C between the two would leave a task
    # that was never run, and the cleanup that follows (an async generator's aclose) would then
    # meet it running and leave the child alive.
    previous = None
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ):
        previous = signal.signal(signal.SIGINT, cancel_on_sigint)
    try:
        task = asyncio.ensure_future(awaitable, loop=loop)
        if interrupted:
            task.cancel()
        try:
            result = loop.run_until_complete(task)
        except asyncio.CancelledError:
            if interrupted:
                raise KeyboardInterrupt from None
            raise
        except BaseException:  # interrupted in the loop itself (another signal's handler)
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    loop.run_until_complete(task)
            raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if interrupted:  # the awaitable swallowed its cancel, or the Ctrl-C came after it ended
        raise KeyboardInterrupt
    return result


def run_sync(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run `coroutine` to completion on a private event loop (for the headless CLI)."""
    try:
        private = _PrivateLoop()
    except BaseException:  # a Ctrl-C as it starts: the coroutine never runs; no warning that
        coroutine.close()  # it was never awaited
        raise
    try:
        return private.step(coroutine)
    finally:
        private.close()


def run_in_background(coroutine: Coroutine[Any, Any, _T], name: str) -> Future[_T]:
    """Start `coroutine` on a private event loop in a daemon thread called `name`, now; the
    Future answers its result or raises its error. Await it in async code with
    `asyncio.wrap_future`. A daemon thread: a process that ends does not wait for it."""
    future: Future[_T] = Future()
    future.set_running_or_notify_cancel()

    def run() -> None:
        try:
            future.set_result(run_sync(coroutine))
        except BaseException as exc:  # the awaiting side gets it, as from any Future
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def iterate_sync(stream: AsyncIterator[_T]) -> Generator[_T, None, None]:
    """The items of an async iterator as a plain iterator, on a private event loop. Closing the
    iterator (or Ctrl-C) closes the async one inside the loop, so its cleanup runs."""
    private = _PrivateLoop()
    try:
        while True:
            try:
                item = private.step(stream.__anext__())
            except StopAsyncIteration:
                return
            yield item
    finally:
        try:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    private.step(aclose())
        finally:
            private.close()
