"""The jobs screen's `W`: `runai-tui watch --recover` armed on the marked jobs (else the selected
one) while the app is open. The same watcher and policy as the command (runai_tui/workflows/watcher.py),
one per chain and one lock per chain (runai_tui/workflows/watch_lock.py: a `watch` running elsewhere on
this machine refuses it, and the other way round); each step is a notification, and the jobs
table and describe show the chain's state as long as it is watched (watch_state.py). Nothing lives
only here: the records on the cluster are the truth, and `watch` started later carries on."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from runai_tui.shapes.errors import Failure
from runai_tui.workflows import watch_lock, watch_state
from runai_tui.workflows.watcher import ClientCluster, Policy, Report, Watcher, read_chain

if TYPE_CHECKING:
    from runai_tui.runai.client import RunaiClient

# What each step of the watch is worth as a notification.
SEVERITY = {"stopped": "error", "failed": "warning", "runai-error": "warning"}
POLICY = Policy()  # as `watch --recover` by default: 3 attempts, 60 s backoff, no remedies

Notify = Callable[[str, str], None]  # (message, severity)


class ArmedWatches:
    """The chains watched from the app (by their first job), and their locks."""

    def __init__(self, client: RunaiClient, project: str | None, explicit: bool) -> None:
        self.client, self.project, self.explicit = client, project, explicit
        self.chains: set[str] = set()

    def armed(self, name: str) -> bool:
        return name in self.chains

    async def watch(self, name: str, notify: Notify) -> None:
        """Watch `name`'s chain until it ends, saying each step; a refusal (a watcher already on
        it, an unknown job) is one notification."""
        try:
            chain = await read_chain(self.client, name)
            if chain.root in self.chains:
                notify(f"{name}: already armed (chain of {chain.root})", "information")
                return
            project = chain.project or self.project  # as the cluster resolved it
            lock = watch_lock.take(project, chain.root)
        except Failure as exc:
            notify(exc.message, "error")
            return
        self.chains.add(chain.root)

        def say(report: Report) -> None:
            if report.kind in ("watching", "running"):
                return
            notify(report.line(POLICY.max_attempts), SEVERITY.get(report.kind, "information"))

        cluster = ClientCluster(self.client, self.project, self.explicit)
        watcher = Watcher(cluster, POLICY, say,
                          publish=lambda root: watch_state.writer(project, root, "this app"))  # fmt: skip
        notify(f"armed: {chain.root} is submitted again when a node or the network fails it "
               f"(at most {POLICY.max_attempts} attempts)", "information")  # fmt: skip
        try:
            await watcher.watch(chain.root)
        except Failure as exc:
            notify(exc.message, "error")
        finally:
            self.chains.discard(chain.root)
            watch_state.clear(project, chain.root)  # before the lock goes
            lock.release()
