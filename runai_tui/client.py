"""RunaiClient: runs `runai` (or `runai-local`) and turns its output into models or RunaiErrors.

Every subprocess goes through the small runner at the top of this file: argv lists (never a
shell), stdin from /dev/null (so a prompt can never hang us), the child in its own process group
(so a timeout or a cancel kills it and anything it started), and the child always reaped.
The async half never blocks the event loop, so the TUI can call it as it is.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import re
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from runai_tui.backend import HINT_INSTALL_RUNAI, Backend
from runai_tui.errors import ErrorKind, RunaiError
from runai_tui.models import Job, JobDetail
from runai_tui.parse import (
    classify_failure,
    first_meaningful_line,
    parse_describe,
    parse_list_page,
    parse_submitted_name,
    strip_notices,
)

# The default exec command: bash when the pod has it, else sh.
DEFAULT_SHELL = ["sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash; else exec sh; fi"]
HINT_TIMEOUT = "check the network and the cluster, or raise --timeout"
MAX_PAGES = 1000  # a guard against a CLI that keeps returning a next-page token
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_READ_CHUNK = 65536
_MAX_LINE = 1 << 20  # a "line" longer than this is handed on in pieces
_T = TypeVar("_T")


@dataclass
class SubmitResult:
    name: str
    output: str


@dataclass
class Completed:
    """What one finished command printed."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return "\n".join(part for part in (self.stdout, self.stderr) if part.strip())


# --- the runner ------------------------------------------------------------------------------


def _decode(data: bytes) -> str:
    return _ANSI_RE.sub("", data.decode("utf-8", errors="replace"))


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by `pid` (children started with start_new_session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class _Timeout(Exception):
    pass


def run_sync(
    argv: Sequence[str], timeout: float | None, env: Mapping[str, str] | None
) -> tuple[int, bytes, bytes]:
    """Run to completion. Popen + communicate is subprocess.run, except that a timeout or a
    Ctrl-C kills the whole process group (run() kills only the child, and then waits for any
    grandchild that still holds the pipe)."""
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        proc.communicate()
        raise _Timeout from None
    except BaseException:
        kill_group(proc.pid)
        proc.wait()
        raise
    return proc.returncode, out, err


async def run_async(
    argv: Sequence[str], timeout: float | None, env: Mapping[str, str] | None
) -> tuple[int, bytes, bytes]:
    """Async run_sync: a timeout or a cancel kills the process group and reaps the child."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        kill_group(proc.pid)
        await proc.wait()
        raise _Timeout from None
    except BaseException:
        kill_group(proc.pid)
        await proc.wait()
        raise
    assert proc.returncode is not None
    return proc.returncode, out, err


def _split_lines(buffer: bytearray, final: bool) -> list[str]:
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


# --- the client ------------------------------------------------------------------------------


class RunaiClient:
    """The runai operations the CLI and the TUI need, sync and async. Failures raise RunaiError."""

    def __init__(
        self,
        backend: Backend,
        project: str | None = None,
        timeout: float = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.backend = backend
        self.project = project or None
        self.timeout = timeout
        # runai waits for the cluster to accept a submit (--wait-for-submit, default 1m).
        self.submit_timeout = timeout + 60.0
        self._extra_env = dict(env or {})

    # -- argv -----------------------------------------------------------------------------

    def _project_args(self) -> list[str]:
        return ["-p", self.project] if self.project else []

    def _argv(self, args: Sequence[str]) -> list[str]:
        return [*self.backend.executable, *args]

    def _env(self) -> dict[str, str] | None:
        if not self._extra_env:
            return None  # inherit os.environ as it is at call time
        return {**os.environ, **self._extra_env}

    def list_args(self, next_token: str = "") -> list[str]:
        args = ["training", "list", "--json", *self._project_args()]
        return [*args, "--next-token", next_token] if next_token else args

    def describe_args(self, name: str) -> list[str]:
        return ["training", "pytorch", "describe", name, "-o", "json", *self._project_args()]

    def verb_args(self, verb: str, name: str) -> list[str]:
        return ["training", "pytorch", verb, name, *self._project_args()]

    def logs_args(
        self, name: str, pod: str | None = None, follow: bool = False, tail: int | None = None
    ) -> list[str]:
        args = self.verb_args("logs", name)
        if pod:
            args += ["--pod", pod]
        if follow:
            args.append("--follow")
        if tail is not None:
            args += ["--tail", str(tail)]
        return args

    def submit_args(self, argv: Sequence[str]) -> list[str]:
        """`argv` from command.build_submit_argv without its leading "runai", plus `-p` when the
        client has a project and the argv has none (inserted before `--command`/`--`)."""
        args = list(argv[1:]) if argv and os.path.basename(argv[0]) == "runai" else list(argv)
        end = len(args)
        for marker in ("--command", "--"):
            if marker in args:
                end = min(end, args.index(marker))
        has_project = any(
            a in ("-p", "--project") or a.startswith("--project=") for a in args[:end]
        )
        if self.project and not has_project:
            args[end:end] = self._project_args()
        return args

    def exec_argv(
        self,
        name: str,
        pod: str | None = None,
        command: Sequence[str] | None = None,
        tty: bool = True,
    ) -> list[str]:
        """argv for an interactive exec (hand it to interactive.run_interactive)."""
        args = self.verb_args("exec", name)
        if pod:
            args += ["--pod", pod]
        if tty:
            args += ["--stdin", "--tty"]
        return self._argv([*args, "--", *(list(command) if command else DEFAULT_SHELL)])

    # -- running and classifying ----------------------------------------------------------

    def _describe_cmd(self, args: Sequence[str]) -> str:
        words = [a for a in args[:3] if not a.startswith("-")]
        return " ".join([self.backend.display_name, *words])

    def _not_installed(self, argv: list[str], exc: OSError) -> RunaiError:
        if self.backend.is_local:
            return RunaiError(
                ErrorKind.NOT_INSTALLED,
                f"runai-local could not be started: {exc.strerror or exc}",
                "reinstall runai-tui (make run), or use --backend runai",
                argv=argv,
            )
        return RunaiError(
            ErrorKind.NOT_INSTALLED,
            "runai is not installed or not on PATH",
            HINT_INSTALL_RUNAI,
            argv=argv,
        )

    def _timeout_error(self, argv: list[str], args: Sequence[str], timeout: float) -> RunaiError:
        return RunaiError(
            ErrorKind.TIMEOUT,
            f"`{self._describe_cmd(args)}` timed out after {timeout:g} s",
            HINT_TIMEOUT,
            argv=argv,
        )

    def _adapt(self, error: RunaiError, argv: list[str]) -> RunaiError:
        """Fill in the argv, and drop the login advice on the local cluster (it has none)."""
        error.argv = argv
        if self.backend.is_local and error.kind is ErrorKind.NOT_FOUND:
            error.hint = "check the name with `runai-tui list`"
        return error

    def _finish(
        self,
        argv: list[str],
        args: Sequence[str],
        code: int,
        out: bytes,
        err: bytes,
        names: Sequence[str],
        check_when_ok: bool,
    ) -> Completed:
        done = Completed(argv, code, _decode(out), _decode(err))
        error = classify_failure(
            done.output,
            code,
            command=self._describe_cmd(args),
            names=names,
            check_when_ok=check_when_ok,
        )
        if error is not None:
            raise self._adapt(error, argv)
        return done

    def _run(
        self,
        args: Sequence[str],
        names: Sequence[str] = (),
        check_when_ok: bool = False,
        timeout: float | None = None,
    ) -> Completed:
        argv = self._argv(args)
        timeout = timeout or self.timeout
        try:
            code, out, err = run_sync(argv, timeout, self._env())
        except _Timeout:
            raise self._timeout_error(argv, args, timeout) from None
        except OSError as exc:
            raise self._not_installed(argv, exc) from None
        return self._finish(argv, args, code, out, err, names, check_when_ok)

    async def _arun(
        self,
        args: Sequence[str],
        names: Sequence[str] = (),
        check_when_ok: bool = False,
        timeout: float | None = None,
    ) -> Completed:
        argv = self._argv(args)
        timeout = timeout or self.timeout
        try:
            code, out, err = await run_async(argv, timeout, self._env())
        except _Timeout:
            raise self._timeout_error(argv, args, timeout) from None
        except OSError as exc:
            raise self._not_installed(argv, exc) from None
        return self._finish(argv, args, code, out, err, names, check_when_ok)

    @staticmethod
    def _text(done: Completed) -> str:
        return strip_notices(done.stdout) or strip_notices(done.stderr)

    def _submit_result(self, argv: Sequence[str], done: Completed) -> SubmitResult:
        args = self.submit_args(argv)
        given = args[3] if len(args) > 3 and not args[3].startswith("-") else ""
        name = given or parse_submitted_name(done.output)
        return SubmitResult(name=name, output=strip_notices(done.output))

    # -- sync API -------------------------------------------------------------------------

    def list_jobs(self) -> list[Job]:
        """Every workload, following `next` tokens across pages (never --no-pagination)."""
        jobs: list[Job] = []
        token, seen = "", set()
        for _page in range(MAX_PAGES):
            done = self._run(self.list_args(token))
            page, token = self._parse_list_page(done)
            jobs.extend(page)
            if not token or token in seen:
                break
            seen.add(token)
        return jobs

    def describe(self, name: str) -> JobDetail:
        done = self._run(self.describe_args(name), names=[name])
        return self._parse_describe(done, name)

    def _parse_describe(self, done: Completed, name: str) -> JobDetail:
        return self._parse_or_classify(done, lambda: parse_describe(done.stdout), [name])

    def _parse_list_page(self, done: Completed) -> tuple[list[Job], str]:
        return self._parse_or_classify(done, lambda: parse_list_page(done.stdout or done.stderr))

    def _parse_or_classify(
        self, done: Completed, parse: Callable[[], _T], names: Sequence[str] = ()
    ) -> _T:
        """Parse; when that fails on an exit-0 answer that says "does not exist" or "not logged
        in" (some versions exit 0), raise that instead of "could not parse"."""
        try:
            return parse()
        except RunaiError as exc:
            error = classify_failure(done.output, 0, names=names, check_when_ok=True)
            if error is not None:
                raise self._adapt(error, done.argv) from None
            exc.argv = done.argv
            raise

    def submit(self, argv: Sequence[str]) -> SubmitResult:
        done = self._run(self.submit_args(argv), timeout=self.submit_timeout)
        return self._submit_result(argv, done)

    def delete(self, name: str) -> str:
        return self._text(self._run(self.verb_args("delete", name), [name], check_when_ok=True))

    def suspend(self, name: str) -> str:
        return self._text(self._run(self.verb_args("suspend", name), [name], check_when_ok=True))

    def resume(self, name: str) -> str:
        return self._text(self._run(self.verb_args("resume", name), [name], check_when_ok=True))

    def whoami(self) -> str:
        return self._text(self._run(["whoami"], check_when_ok=True))

    def version(self) -> str:
        """The first line `version` prints, e.g. `runai-local 0.1.0 (…)` or `Version: 2.18.94`."""
        return first_meaningful_line(self._text(self._run(["version"])))

    def logs(
        self, name: str, pod: str | None = None, follow: bool = False, tail: int | None = None
    ) -> Iterator[str]:
        """Log lines as they arrive (no trailing newline). Closing the iterator kills `logs`.
        No timeout: `--follow` runs until the job ends or the caller stops."""
        args = self.logs_args(name, pod, follow, tail)
        argv = self._argv(args)
        with tempfile.TemporaryFile() as err_file:
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=err_file,  # a file, so a chatty stderr can never fill a pipe and stall
                    env=self._env(),
                    start_new_session=True,
                )
            except OSError as exc:
                raise self._not_installed(argv, exc) from None
            recent: collections.deque[str] = collections.deque(maxlen=5)
            yielded = False
            try:
                assert proc.stdout is not None
                buffer = bytearray()
                while True:
                    chunk = proc.stdout.read1(_READ_CHUNK)
                    buffer.extend(chunk)
                    for line in _split_lines(buffer, final=not chunk):
                        recent.append(line)
                        yielded = True
                        yield line
                    if not chunk:
                        break
                code = proc.wait()
                err_file.seek(0)
                err = err_file.read()
            finally:
                if proc.returncode is None:
                    kill_group(proc.pid)
                    proc.wait()
                if proc.stdout is not None:
                    proc.stdout.close()
            self._raise_for_logs(argv, args, name, code, "\n".join(recent), err, yielded)

    def _raise_for_logs(
        self,
        argv: list[str],
        args: Sequence[str],
        name: str,
        code: int,
        recent_out: str,
        err: bytes,
        yielded: bool,
    ) -> None:
        text = "\n".join(part for part in (recent_out, _decode(err)) if part.strip())
        # With exit 0 only stderr can be an error: stdout is the log itself.
        error = classify_failure(
            text if code else _decode(err),
            code,
            command=self._describe_cmd(args),
            names=[name],
            check_when_ok=not yielded,
        )
        if error is not None:
            raise self._adapt(error, argv)

    # -- async API ------------------------------------------------------------------------

    async def alist_jobs(self) -> list[Job]:
        jobs: list[Job] = []
        token, seen = "", set()
        for _page in range(MAX_PAGES):
            done = await self._arun(self.list_args(token))
            page, token = self._parse_list_page(done)
            jobs.extend(page)
            if not token or token in seen:
                break
            seen.add(token)
        return jobs

    async def adescribe(self, name: str) -> JobDetail:
        done = await self._arun(self.describe_args(name), names=[name])
        return self._parse_describe(done, name)

    async def asubmit(self, argv: Sequence[str]) -> SubmitResult:
        done = await self._arun(self.submit_args(argv), timeout=self.submit_timeout)
        return self._submit_result(argv, done)

    async def adelete(self, name: str) -> str:
        args = self.verb_args("delete", name)
        return self._text(await self._arun(args, [name], check_when_ok=True))

    async def asuspend(self, name: str) -> str:
        args = self.verb_args("suspend", name)
        return self._text(await self._arun(args, [name], check_when_ok=True))

    async def aresume(self, name: str) -> str:
        args = self.verb_args("resume", name)
        return self._text(await self._arun(args, [name], check_when_ok=True))

    async def awhoami(self) -> str:
        return self._text(await self._arun(["whoami"], check_when_ok=True))

    async def aversion(self) -> str:
        return first_meaningful_line(self._text(await self._arun(["version"])))

    async def stream_logs(
        self, name: str, pod: str | None = None, follow: bool = True, tail: int | None = None
    ) -> AsyncIterator[str]:
        """Async generator of log lines as they arrive. Cancelling the consumer or closing the
        generator (`aclose()`, `contextlib.aclosing`) kills the `logs` process group and reaps it.
        At the end, a failed `logs` raises RunaiError."""
        args = self.logs_args(name, pod, follow, tail)
        argv = self._argv(args)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._env(),
                start_new_session=True,
            )
        except OSError as exc:
            raise self._not_installed(argv, exc) from None
        assert proc.stdout is not None and proc.stderr is not None
        # stderr is drained concurrently so a chatty stderr cannot fill its pipe and stall stdout.
        stderr_task = asyncio.ensure_future(proc.stderr.read())
        recent: collections.deque[str] = collections.deque(maxlen=5)
        yielded = False
        try:
            buffer = bytearray()
            while True:
                chunk = await proc.stdout.read(_READ_CHUNK)
                buffer.extend(chunk)
                for line in _split_lines(buffer, final=not chunk):
                    recent.append(line)
                    yielded = True
                    yield line
                if not chunk:
                    break
            code = await proc.wait()
            err = await stderr_task
        finally:
            if proc.returncode is None:
                kill_group(proc.pid)
                await proc.wait()
            if not stderr_task.done():
                stderr_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await stderr_task
        self._raise_for_logs(argv, args, name, code, "\n".join(recent), err, yielded)

    async def aexec_output(
        self,
        name: str,
        pod: str | None,
        command: Sequence[str],
        timeout: float | None = None,
    ) -> str:
        """Run `command` in a pod without a TTY or stdin and return what it printed on stdout
        (for read-only probes such as preflight). Bounded by `timeout` (default: the client's);
        a non-zero exit or a timeout raises RunaiError."""
        argv = self.exec_argv(name, pod, command, tty=False)
        args = argv[len(self.backend.executable) :]
        done = await self._arun(args, [name], timeout=timeout)
        return done.stdout
