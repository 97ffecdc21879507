"""RunaiClient: runs `runai` (or `runai-local`) and turns its output into models or RunaiErrors.

Every operation is written once, as a coroutine (`alist_jobs`, `adescribe`, …, `stream_logs`)
over the core's runner (runai_tui/runai/runner.py: argv lists, stdin from /dev/null, the child in its
own process group, killed on timeout or cancel, always reaped). The TUI awaits them; the headless
CLI calls their sync twins (`list_jobs`, `describe`, …, `logs`), which run the same coroutine on a
private event loop.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Coroutine,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

from runai_tui.runai import runner
from runai_tui.runai.argv import with_project
from runai_tui.runai.backend import HINT_INSTALL_RUNAI, Backend
from runai_tui.runai.installed import (
    COMMANDS,
    LIST_LIMIT,
    OFFSET_PAGE,
    Capabilities,
    check_logs_flags,
    check_verb,
)
from runai_tui.runai.parse import (
    classify_failure,
    parse_describe,
    parse_forwarding,
    parse_list_page,
    parse_project_list,
    parse_submitted_name,
    says_port_in_use,
    strip_notices,
)
from runai_tui.shapes.cli_generations import CliVersion
from runai_tui.shapes.errors import ErrorKind, RunaiError
from runai_tui.shapes.models import Job, JobDetail

# The default exec command: bash when the pod has it, else sh.
DEFAULT_SHELL = ["sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash; else exec sh; fi"]
HINT_TIMEOUT = "check the network and the cluster, or raise --timeout"
MAX_PAGES = 1000  # a guard against a CLI that keeps returning a next-page token
NO_DESCRIBE_LIMITS = ["--pod-limit", "-1", "--event-limit", "-1"]
_T = TypeVar("_T")
_P = ParamSpec("_P")


@dataclass
class SubmitResult:
    name: str
    output: str


@dataclass(frozen=True)
class Forwarding:
    """A port forward that is listening: `host:local` on this machine reaches the pod's `remote`."""

    host: str
    local: int
    remote: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.local}/"


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


def _sync_twin(
    coroutine_function: Callable[Concatenate[Any, _P], Coroutine[Any, Any, _T]],
) -> Callable[Concatenate[Any, _P], _T]:
    """The blocking twin of an async client method: the same coroutine, run to completion."""

    @functools.wraps(coroutine_function)
    def method(self: Any, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        return runner.run_sync(coroutine_function(self, *args, **kwargs))

    method.__doc__ = f"Blocking twin of `{coroutine_function.__name__}`."
    return method


# --- the client ------------------------------------------------------------------------------


class RunaiClient:
    """The runai operations the CLI and the TUI need, sync and async. Failures raise RunaiError."""

    def __init__(
        self,
        backend: Backend,
        project: str | None = None,
        timeout: float = 60.0,
        env: Mapping[str, str] | None = None,
        runai_cli: CliVersion | None = None,
        runai_cli_source: str = "",
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        """`runai_cli`: the override of what the installed CLI accepts (the `runai_cli`
        setting, from `runai_cli_source`); `on_warning` hears each warning once (help that
        cannot be read), else they wait in `capabilities.warnings`."""
        self.backend = backend
        self.capabilities = Capabilities(list(backend.executable), runai_cli, runai_cli_source)
        self.on_warning = on_warning
        self.project = project or None
        self.timeout = timeout
        # runai waits for the cluster to accept a submit (--wait-for-submit, default 1m).
        self.submit_timeout = timeout + 60.0
        # Jobs of other training frameworks (name -> `runai training` subcommand), from the
        # last list; every other name is a PyTorch job.
        self.families: dict[str, str] = {}
        self._listed = False
        self._extra_env = dict(env or {})

    # -- argv -----------------------------------------------------------------------------

    def _project_args(self) -> list[str]:
        return ["-p", self.project] if self.project else []

    def _argv(self, args: Sequence[str]) -> list[str]:
        return self.backend.argv(args)

    def _env(self) -> dict[str, str] | None:
        if not self._extra_env:
            return None  # inherit os.environ as it is at call time
        return {**os.environ, **self._extra_env}

    def list_args(self, next_token: str = "", paging: Sequence[str] = ()) -> list[str]:
        """`paging`: `--limit N [--offset M]` for a CLI without next tokens."""
        args = ["training", "list", "--json", *self._project_args(), *paging]
        return [*args, "--next-token", next_token] if next_token else args

    def describe_args(self, name: str, unlimited: bool = True) -> list[str]:
        """Without `unlimited`, describe lists at most 10 pods and 50 events (the CLI's
        defaults): a 16-pod job would lose six ranks."""
        limits = NO_DESCRIBE_LIMITS if unlimited else []
        return [
            *["training", self.family(name), "describe", name, "-o", "json"],
            *limits,
            *self._project_args(),
        ]

    def family(self, name: str) -> str:
        """The `runai training` subcommand that manages job `name` (pytorch unless the list
        said another framework)."""
        return self.families.get(name, "pytorch")

    def verb_args(self, verb: str, name: str) -> list[str]:
        return ["training", self.family(name), verb, name, *self._project_args()]

    def logs_args(
        self,
        name: str,
        pod: str | None = None,
        follow: bool = False,
        tail: int | None = None,
        since: str | None = None,
        previous: bool = False,
    ) -> list[str]:
        """`since` is a Go duration (`300s`, `2h`); `previous`: the container before the pod's
        last restart (runai's `--previous`)."""
        args = self.verb_args("logs", name)
        if pod:
            args += ["--pod", pod]
        if follow:
            args.append("--follow")
        if tail is not None:
            args += ["--tail", str(tail)]
        if since:
            args += ["--since", since]
        if previous:
            args.append("--previous")
        return args

    def port_forward_args(
        self, name: str, local: int, remote: int, pod: str | None = None
    ) -> list[str]:
        """`training pytorch port-forward NAME --port LOCAL:REMOTE [--pod POD]` (runai-cli.md
        2.6; --address keeps its default, localhost)."""
        args = [*self.verb_args("port-forward", name), "--port", f"{local}:{remote}"]
        return [*args, "--pod", pod] if pod else args

    def submit_args(self, argv: Sequence[str]) -> list[str]:
        """The words after the executable of a submit `argv`. This backend's own argv
        (`Backend.argv`, as a prepared submission carries it) is taken as it is, so exactly the
        previewed argv runs; build_submit_argv's, which starts with the word "runai", gets the
        client's project when it names none (`with_project`)."""
        executable = self.backend.executable
        if list(argv[: len(executable)]) == executable:
            return list(argv[len(executable) :])
        args = list(argv[1:]) if argv and os.path.basename(argv[0]) == "runai" else list(argv)
        return with_project(args, self.project)

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
        done = Completed(argv, code, runner.decode(out), runner.decode(err))
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

    async def probe(self, args: list[str]) -> tuple[int, str]:
        """Run a question (`--help`, `version`) as it is: (exit code, stdout + stderr)."""
        argv = self._argv(args)
        try:
            code, out, err = await runner.run(argv, self.timeout, self._env())
        except runner.Timeout:
            raise self._timeout_error(argv, args, self.timeout) from None
        except OSError as exc:
            raise self._not_installed(argv, exc) from None
        return code, "\n".join(p for p in (runner.decode(out), runner.decode(err)) if p.strip())

    async def acapabilities(self, *keys: str) -> Capabilities:
        """What the installed CLI accepts for the commands `keys` (installed.COMMANDS),
        read from its help once (then cached); CLI v1 is refused here (UsageError)."""
        caps = self.capabilities
        await caps.aload(self.probe, keys)
        while caps.warnings and self.on_warning is not None:
            self.on_warning(caps.warnings.pop(0))
        return caps

    capabilities_for = _sync_twin(acapabilities)

    async def _ensure(self, args: Sequence[str]) -> Capabilities:
        """The capabilities of the command `args` runs (its help read first)."""
        words = tuple(a for a in args[:3] if not a.startswith("-"))
        keys = [k for k, cmd in COMMANDS.items() if words[: len(cmd)] == cmd and k != "pytorch"]
        return await self.acapabilities(*keys[:1])

    async def _run(
        self,
        args: Sequence[str],
        names: Sequence[str] = (),
        check_when_ok: bool = False,
        timeout: float | None = None,
    ) -> Completed:
        await self._ensure(args)
        argv = self._argv(args)
        timeout = timeout or self.timeout
        try:
            code, out, err = await runner.run(argv, timeout, self._env())
        except runner.Timeout:
            raise self._timeout_error(argv, args, timeout) from None
        except OSError as exc:
            raise self._not_installed(argv, exc) from None
        return self._finish(argv, args, code, out, err, names, check_when_ok)

    @staticmethod
    def _text(done: Completed) -> str:
        return strip_notices(done.stdout) or strip_notices(done.stderr)

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

    # -- the operations (each written once, async; the sync twins follow) -----------------

    async def alist_jobs(self) -> list[Job]:
        """Every workload, following `next` tokens across pages (never --no-pagination)."""
        caps = await self.acapabilities("list")
        paging = caps.paging()
        self.families, self._listed = {}, True
        jobs: list[Job] = []
        token, seen = "", set()
        for number in range(MAX_PAGES):
            extra: list[str] = []
            if paging == "offset":
                extra = ["--limit", str(OFFSET_PAGE), "--offset", str(number * OFFSET_PAGE)]
            elif paging == "limit":
                extra = ["--limit", str(LIST_LIMIT)]
            done = await self._run(self.list_args(token, extra))
            page, token = self._parse_or_classify(
                done, functools.partial(parse_list_page, done.stdout or done.stderr)
            )
            jobs.extend(page)
            self.families.update({j.name: j.family for j in page})
            if paging == "offset":
                if len(page) < OFFSET_PAGE:
                    break
                continue
            if paging == "limit" or not token or token in seen:
                break
            seen.add(token)
        return jobs

    async def adescribe(self, name: str) -> JobDetail:
        """Every pod and every event: --pod-limit -1 --event-limit -1 where the installed CLI
        has them; where it has not, a note says so when the job has more pods than listed."""
        caps = await self.acapabilities("describe")
        unlimited = caps.has("describe", "--pod-limit")
        try:
            done = await self._run(self.describe_args(name, unlimited is not False), names=[name])
        except RunaiError as exc:
            if await self._another_family(name, exc):
                return await self.adescribe(name)
            if unlimited is not None or not _refused_limit_flag(exc):
                raise
            unlimited = False  # an unreadable `version`, and a CLI without the flags
            done = await self._run(self.describe_args(name, False), names=[name])
        detail = self._parse_or_classify(done, lambda: parse_describe(done.stdout), [name])
        wanted = detail.job.requested_pods
        if unlimited is False and wanted is not None and wanted > len(detail.pods):
            await caps.aversion(self.probe)  # the note names the CLI's version
            detail.notes.append(
                f"{caps.label} has no describe --pod-limit: it listed "
                f"{len(detail.pods)} of the job's {wanted} pods (update the runai CLI)"
            )
        return detail

    async def asubmit(self, argv: Sequence[str]) -> SubmitResult:
        """Submit `argv`: a prepared submission's (run as it is) or build_submit_argv's
        (`submit_args`)."""
        args = self.submit_args(argv)
        done = await self._run(args, timeout=self.submit_timeout)
        given = args[3] if len(args) > 3 and not args[3].startswith("-") else ""
        name = given or parse_submitted_name(done.output)
        return SubmitResult(name=name, output=strip_notices(done.output))

    async def aoffers(self, verb: str) -> None:
        """Raise UsageError (exit 2, naming the CLI's version) when the installed runai has no
        `training pytorch VERB` (suspend and resume came after 2.20)."""
        caps = await self.acapabilities(verb)
        if caps.has("pytorch", verb) is False:
            await caps.aversion(self.probe)
        check_verb(verb, caps)

    async def _another_family(self, name: str, error: RunaiError) -> bool:
        """After `training pytorch VERB NAME` found no such job: whether the list (asked once)
        says NAME is a job of another training framework, to be asked through its own
        subcommand; a framework this runai has no subcommand for raises a one-line reason."""
        if error.kind is not ErrorKind.NOT_FOUND or self._listed or name in self.families:
            return False
        try:
            await self.alist_jobs()
        except RunaiError:
            return False  # the first answer stands
        family = self.family(name)
        if family == "pytorch":
            return False
        await self.acheck_family(name)
        return True

    async def acheck_family(self, name: str) -> None:
        """Raise RunaiError with the one-line reason when job `name` belongs to a training
        framework whose subcommand the installed runai does not list (the job is read-only)."""
        family = self.family(name)
        if family == "pytorch":
            return
        caps = await self.acapabilities("training")
        if caps.has("training", family) is False:
            raise RunaiError(
                ErrorKind.OTHER,
                f"{name} is a {family} training job and this runai has no `runai training "
                f"{family}`: runai-tui shows it read-only",
                "use the Run:ai UI for it, or update the runai CLI",
            )

    async def _verb(self, verb: str, name: str) -> str:
        await self.aoffers(verb)
        await self.acheck_family(name)
        try:
            done = await self._run(self.verb_args(verb, name), [name], check_when_ok=True)
        except RunaiError as exc:
            if await self._another_family(name, exc):
                return await self._verb(verb, name)
            raise
        return self._text(done)

    async def adelete(self, name: str) -> str:
        return await self._verb("delete", name)

    async def asuspend(self, name: str) -> str:
        return await self._verb("suspend", name)

    async def aresume(self, name: str) -> str:
        return await self._verb("resume", name)

    async def awhoami(self) -> str:
        return self._text(await self._run(["whoami"], check_when_ok=True))

    async def acli_version(self) -> CliVersion:
        """What `runai version` says (its first meaningful line, the version and generation read
        from it), asked once per executable and cached (installed.Capabilities.aversion, the one
        reader); RunaiError when the executable cannot be run."""
        return await self.capabilities.aversion(self.probe)

    async def aprojects(self) -> list[str]:
        """The projects the user may use (`project list --json`; never `runai project` alone,
        which opens an interactive picker)."""
        done = await self._run(["project", "list", "--json"], check_when_ok=True)
        return self._parse_or_classify(done, lambda: parse_project_list(done.stdout))

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
        done = await self._run(args, [name], timeout=timeout)
        return done.stdout

    async def stream_logs(
        self,
        name: str,
        pod: str | None = None,
        follow: bool = True,
        tail: int | None = None,
        since: str | None = None,
        previous: bool = False,
    ) -> AsyncGenerator[str, None]:
        """Async generator of log lines as they arrive (no trailing newline). Cancelling the
        consumer or closing the generator (`aclose()`, `contextlib.aclosing`) kills the `logs`
        process group and reaps it. At the end, a failed `logs` raises RunaiError. No timeout:
        `--follow` runs until the job ends or the caller stops."""
        caps = await self.acapabilities("logs")
        check_logs_flags(
            [f for f, on in (("--since", since), ("--previous", previous)) if on], caps
        )
        args = self.logs_args(name, pod, follow, tail, since, previous)
        argv = self._argv(args)
        stream = runner.LineStream(argv, self._env())
        recent: collections.deque[str] = collections.deque(maxlen=5)
        yielded = False
        try:
            async with contextlib.aclosing(stream.lines()) as lines:
                async for line in lines:
                    recent.append(line)
                    yielded = True
                    yield line
        except OSError as exc:
            raise self._not_installed(argv, exc) from None
        code = stream.returncode if stream.returncode is not None else 0
        err = runner.decode(stream.stderr)
        text = "\n".join(part for part in ("\n".join(recent), err) if part.strip())
        # With exit 0 only stderr can be an error: stdout is the log itself.
        error = classify_failure(
            text if code else err,
            code,
            command=self._describe_cmd(args),
            names=[name],
            check_when_ok=not yielded,
        )
        if error is not None:
            raise self._adapt(error, argv)

    async def forward_port(
        self, name: str, local: int, remote: int, pod: str | None = None
    ) -> AsyncIterator[str | Forwarding]:
        """Run `port-forward` until the caller stops (closing the generator or a cancel kills it)
        or it ends. Yields each line it prints and, once it listens, a Forwarding. An end with a
        failure raises RunaiError (kind PORT_IN_USE when the local port is taken)."""
        await self.acapabilities("port-forward")
        args = self.port_forward_args(name, local, remote, pod)
        argv = self._argv(args)
        stream = runner.LineStream(argv, self._env())
        recent: collections.deque[str] = collections.deque(maxlen=5)
        try:
            async with contextlib.aclosing(stream.lines()) as lines:
                async for line in lines:
                    recent.append(line)
                    yield line
                    found = parse_forwarding(line)
                    if found is not None:
                        yield Forwarding(*found)
        except OSError as exc:
            raise self._not_installed(argv, exc) from None
        code = stream.returncode if stream.returncode is not None else 0
        text = "\n".join([*recent, runner.decode(stream.stderr)])
        if code and says_port_in_use(text):
            raise RunaiError(
                ErrorKind.PORT_IN_USE,
                f"local port {local} is already in use on this machine",
                f"pick another local port: runai-tui port-forward {name} OTHER:{remote} "
                f"(0:{remote} takes any free port)",
                argv=argv,
                output=text,
            )
        error = classify_failure(
            text, code, command=self._describe_cmd(args), names=[name], check_when_ok=False
        )
        if error is not None:
            raise self._adapt(error, argv)

    # -- the sync twins (headless CLI) ----------------------------------------------------

    list_jobs = _sync_twin(alist_jobs)
    describe = _sync_twin(adescribe)
    submit = _sync_twin(asubmit)
    delete = _sync_twin(adelete)
    suspend = _sync_twin(asuspend)
    offers = _sync_twin(aoffers)
    resume = _sync_twin(aresume)
    whoami = _sync_twin(awhoami)
    cli_version = _sync_twin(acli_version)
    projects = _sync_twin(aprojects)

    def port_forward(
        self, name: str, local: int, remote: int, pod: str | None = None
    ) -> Iterator[str | Forwarding]:
        """Blocking twin of `forward_port`. Closing the iterator (or Ctrl-C) kills the forward."""
        return runner.iterate_sync(self.forward_port(name, local, remote, pod))

    def logs(
        self,
        name: str,
        pod: str | None = None,
        follow: bool = False,
        tail: int | None = None,
        since: str | None = None,
        previous: bool = False,
    ) -> Generator[str, None, None]:
        """Blocking twin of `stream_logs` (default: no --follow). Closing the iterator kills
        `logs`."""
        return runner.iterate_sync(self.stream_logs(name, pod, follow, tail, since, previous))


def _refused_limit_flag(error: RunaiError) -> bool:
    """`runai` (cobra) refusing --pod-limit/--event-limit as an unknown flag."""
    said = f"{error.message}\n{error.output or ''}".lower()
    return "unknown flag" in said and "-limit" in said
