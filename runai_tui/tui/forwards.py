"""The TUI's port forwards (`F`: a job's TensorBoard): one long-running `port-forward` per job,
run through the core client in an app worker. The local URL is shown once the forward listens
(and again on the next `F`); every forward ends when the app ends, because the app cancels its
workers on exit (the app's unmount waits for them) and a cancelled forward kills its process
group and reaps it."""

from __future__ import annotations

import contextlib
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from textual.notifications import SeverityLevel
from textual.worker import Worker, WorkerCancelled, WorkerFailed

from runai_tui.runai.client import Forwarding, RunaiClient
from runai_tui.shapes.errors import Failure
from runai_tui.util.text import literal

if TYPE_CHECKING:
    from runai_tui.profiles import ProfileStore

DEFAULT_TENSORBOARD_PORT = 6006


class ForwardsHost(Protocol):
    """What the forwards need of the app (RunaiTuiApp is one): its profiles and client, Textual's
    notify and run_worker, and its error report. A protocol, so this module does not import the
    app that imports it."""

    @property
    def store(self) -> ProfileStore: ...

    @property
    def client(self) -> RunaiClient: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def run_worker(
        self,
        work: Coroutine[Any, Any, None],
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
    ) -> Worker[None]: ...

    def report_error(self, error: Failure) -> None: ...


class Forwards:
    def __init__(self, app: ForwardsHost) -> None:
        self.app = app
        self.urls: dict[str, str] = {}  # job -> the local URL, while its forward listens
        self.workers: dict[str, Worker[None]] = {}

    def tensorboard_port(self, job: str) -> int:
        """`tensorboard_port` of the profile that submits `job` (its job_name), else 6006."""
        store = self.app.store
        for name in store.names():
            try:
                profile = store.load(name)
            except (Failure, OSError):
                continue
            if profile.job_name == job and profile.tensorboard_port is not None:
                return profile.tensorboard_port
        return DEFAULT_TENSORBOARD_PORT

    def tensorboard(self, job: str) -> None:
        """Forward `job`'s TensorBoard port, or say where the running forward is."""
        if job in self.urls:
            self._say(job, self.urls[job])
            return
        if job in self.workers:
            self.app.notify(f"Forward to {job} is starting…", title="port-forward", markup=False)
            return
        port = self.tensorboard_port(job)
        self.workers[job] = self.app.run_worker(
            self._run(job, port), name=f"port-forward {job}", group="forwards", exit_on_error=False
        )

    def _say(self, job: str, url: str) -> None:
        self.app.notify(
            f"TensorBoard of {literal(job)}: {url}\n(the forward ends when runai-tui exits)",
            title="port-forward",
            timeout=15,
            markup=False,
        )

    async def _run(self, job: str, port: int) -> None:
        try:
            async for item in self.app.client.forward_port(job, port, port):
                if isinstance(item, Forwarding):
                    self.urls[job] = item.url
                    self._say(job, item.url)
            if job in self.urls:
                self.app.notify(
                    f"The forward to {literal(job)} ended (its pod stopped).",
                    title="port-forward",
                    markup=False,
                )
        except Failure as error:
            self.app.report_error(error)
        finally:
            self.urls.pop(job, None)
            self.workers.pop(job, None)

    async def stop_all(self) -> None:
        """Cancel every forward and wait until each has killed and reaped its process."""
        workers = list(self.workers.values())
        for worker in workers:
            worker.cancel()
        for worker in workers:
            with contextlib.suppress(WorkerCancelled, WorkerFailed):
                await worker.wait()
