"""LogsScreen: stream `logs --follow` of one pod into a bounded LogView, with follow/pause,
search, save and the training panel fed from the same lines."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Footer, Input, Select, Static

from runai_tui.runai.pod_logs import LogChoice, PodLine, merged_lines, wait_until_started
from runai_tui.shapes.errors import RunaiError
from runai_tui.shapes.models import Job, master_pod
from runai_tui.tui.files import write_lines_atomic
from runai_tui.tui.screens.base import AppScreen
from runai_tui.tui.screens.prompt import PromptDialog
from runai_tui.tui.widgets.log_view import DEFAULT_MAX_LINES, LogView
from runai_tui.tui.widgets.progress import TrainingPanel
from runai_tui.util.text import literal

# Lines are handed to the view in batches so a fast stream costs one repaint per tick.
FLUSH_SECONDS = 0.1
ALL_PODS = "*all pods*"  # the pod choice that interleaves every pod, each line prefixed


class LogsScreen(AppScreen[None]):
    HELP_TITLE = "logs"

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("f,end", "follow", "Follow", key_display="f"),
        Binding("slash", "search", "Search", key_display="/"),
        Binding("n", "next_match", "Next match"),
        Binding("N", "previous_match", "Previous match"),
        Binding("o", "next_pod", "Next pod"),
        Binding("r", "reconnect", "Reconnect"),
        Binding("ctrl+s", "save", "Save"),
        Binding("s", "shell", "Shell"),
        Binding("a", "all_pods", "All pods"),
        Binding("p", "previous", "Previous container"),
        Binding("t", "tail", "Tail N"),
    ]

    def __init__(self, job: Job, pod: str | None = None, max_lines: int = DEFAULT_MAX_LINES):
        super().__init__()
        self.job = job
        self.pod = pod
        self.pods: list[str] = []
        self.max_lines = max_lines
        self._incoming: list[str] = []
        self.stream_state = "connecting"
        self._retrying = False
        self.previous = False  # the container before the pod's last restart
        self.tail: int | None = None  # only the last N lines of each pod

    def compose(self) -> ComposeResult:
        yield self.make_header()
        with Horizontal(id="logs-bar"):
            yield Static(f"logs {literal(self.job.name)}", id="logs-title", markup=False)
            yield Select([], prompt="pod", allow_blank=True, id="logs-pod", compact=True)
        yield TrainingPanel(id="logs-training")
        yield LogView(max_lines=self.max_lines, id="logs-view")
        yield Input(placeholder="search (enter: find, esc: close)", id="logs-search")
        yield Static("", id="logs-status", markup=False)
        yield Footer(compact=True)

    @property
    def view(self) -> LogView:
        return self.query_one(LogView)

    def on_mount(self) -> None:
        self.query_one("#logs-search", Input).display = False
        self.view.focus()
        self.set_interval(FLUSH_SECONDS, self._flush)
        self.choose_pod()

    # -- pods and streaming ----------------------------------------------------------------------

    @work(exclusive=True, group="logs-pods", exit_on_error=False)
    async def choose_pod(self) -> None:
        """Learn the job's pods, pick the requested one (else the master) and stream it."""
        try:
            detail = await self.tui.client.adescribe(self.job.name)
        except RunaiError as error:
            self.tui.report_error(error)
            detail = None
        if detail is not None:
            self.job = detail.job
            self.pods = [pod.name for pod in detail.pods]
            default = master_pod(detail.pods)
            if self.pod is None and default is not None:
                self.pod = default.name
        select = self.query_one("#logs-pod", Select)
        with select.prevent(Select.Changed):
            options = [(name, name) for name in self.pods]
            if len(self.pods) > 1:
                options.append(("all pods", ALL_PODS))
            select.set_options(options)
            if self.pod in self.pods or (self.pod == ALL_PODS and len(self.pods) > 1):
                select.value = self.pod
        self.start_stream()

    def start_stream(self) -> None:
        self._incoming.clear()
        self.view.clear()
        self.view.follow = True
        self.view.pod_column = self.pod == ALL_PODS
        self.query_one(TrainingPanel).reset()  # a new pod starts a new history
        self.stream_logs(self.pod)

    @work(exclusive=True, group="logs-stream", exit_on_error=False)
    async def stream_logs(self, pod: str | None) -> None:
        client = self.tui.client
        follow = not self.job.phase.is_terminal and not self.previous
        choice = LogChoice(follow=follow, tail=self.tail, previous=self.previous)
        every = pod == ALL_PODS
        self.stream_state = "following the pod" if follow else "reading"
        if every:
            self.stream_state = "following every pod" if follow else "reading every pod"
        self._update_status()
        received = 0
        waited: list[str] = []

        def waiting(text: str) -> None:
            waited.append(text)
            self.stream_state = f"{text}: waiting for it to start"
            self._update_status()

        stream = None
        try:
            if follow:
                await wait_until_started(
                    client,
                    self.job.name,
                    None if every else pod,
                    waiting,
                    poll=self.tui.refresh_interval or 2.0,
                )
                if waited:
                    self.stream_state = "following every pod" if every else "following the pod"
                    self._update_status()
            if every:
                stream = self._prefixed(merged_lines(client, self.job.name, self.pods, choice))
            else:
                stream = client.stream_logs(
                    self.job.name,
                    pod=pod,
                    follow=follow,
                    tail=self.tail,
                    previous=self.previous,
                )
            async for line in stream:
                self._incoming.append(line)
                received += 1
        except RunaiError as error:
            self.stream_state = f"stream failed: {literal(str(error))}"
            if not self._retrying:  # one toast; the status line tracks the retries
                self.tui.report_error(error)
        else:
            self.stream_state = "stream ended"
        finally:
            if stream is not None:
                await stream.aclose()
            self._flush()
        # A pod that has not started yet has no log: try again until it has (never for a
        # finished job, and never after lines arrived, which would repeat them).
        interval = self.tui.refresh_interval
        self._retrying = follow and received == 0 and interval > 0
        if self._retrying:
            self.stream_state += f"; retrying every {interval:g}s (r to retry now)"
            self.set_timer(interval, self._retry)
        self._update_status()

    @staticmethod
    async def _prefixed(lines: AsyncGenerator[PodLine, None]) -> AsyncGenerator[str, None]:
        async with contextlib.aclosing(lines) as pod_lines:
            async for item in pod_lines:
                yield f"[{item.pod}] {item.text}"

    def _retry(self) -> None:
        if self._retrying and self.is_attached:
            self.choose_pod()

    def _flush(self) -> None:
        if not self._incoming:
            return
        batch, self._incoming = self._incoming, []
        self.view.write_lines(batch)
        self.query_one(TrainingPanel).feed_lines(batch)

    @on(Select.Changed, "#logs-pod")
    def _pod_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and event.value != self.pod:
            self.pod = event.value
            self.start_stream()
            self.view.focus()

    def action_next_pod(self) -> None:
        if len(self.pods) < 2:
            self.notify("This job has only one pod.", severity="information")
            return
        index = self.pods.index(self.pod) if self.pod in self.pods else -1
        self.query_one("#logs-pod", Select).value = self.pods[(index + 1) % len(self.pods)]

    def action_all_pods(self) -> None:
        """Every pod interleaved, a coloured pod column first (again: back to one pod)."""
        if len(self.pods) < 2:
            self.notify("This job has only one pod.", severity="information")
            return
        back = self.pods[0]
        self.query_one("#logs-pod", Select).value = back if self.pod == ALL_PODS else ALL_PODS

    def action_previous(self) -> None:
        """Switch between the current container and the one before the last restart."""
        self.previous = not self.previous
        which = "the previous container" if self.previous else "the current container"
        self.notify(f"Showing {which}.", title="logs")
        self.start_stream()

    def action_tail(self) -> None:
        def chosen(answer: str | None) -> None:
            if answer is None:
                return
            text = answer.strip()
            if text and not (text.isdigit()):
                self.notify(f"{text!r} is not a number of lines.", severity="error", title="tail")
                return
            self.tail = int(text) if text else None
            self.start_stream()

        current = "" if self.tail is None else str(self.tail)
        self.app.push_screen(
            PromptDialog("Show the last N lines of each pod (empty: all):", current, "tail"),
            chosen,
        )

    # -- status line -----------------------------------------------------------------------------

    @on(LogView.StatusChanged)
    def _view_status(self) -> None:
        self._update_status()

    def _update_status(self) -> None:
        if not self.is_mounted:
            return
        view = self.view
        shown = "all pods" if self.pod == ALL_PODS else self.pod or "?"
        parts = [f"{shown}: {self.stream_state}", f"{view.line_count:,} lines"]
        if self.previous:
            parts.append("PREVIOUS container (p: current)")
        if self.tail is not None:
            parts.append(f"tail {self.tail:,}")
        if view.dropped:
            parts.append(
                f"{view.dropped:,} older lines dropped (keeping the last {view.max_lines:,})"
            )
        if view.follow:
            parts.append("FOLLOWING")
        else:
            parts.append(f"PAUSED: {view.pending:,} new lines (f to follow)")
        if view.search_term:
            parts.append(f"search {view.search_term!r}")
        self.query_one("#logs-status", Static).update(" · ".join(parts))

    # -- actions ---------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "shell":
            if self.tui.readonly:
                return False
            return True if self.job.phase.is_active else None
        if action in {"next_match", "previous_match"} and not self.view.search_term:
            return None
        if action in {"next_pod", "all_pods"} and len(self.pods) < 2:
            return None
        return True

    def action_back(self) -> None:
        search = self.query_one("#logs-search", Input)
        if search.has_focus:
            search.display = False
            self.view.focus()
            return
        self.dismiss()

    def action_reconnect(self) -> None:
        """Start the stream again (after it ended or failed, or the pod restarted)."""
        self.choose_pod()

    def action_follow(self) -> None:
        self.view.resume()

    def action_search(self) -> None:
        search = self.query_one("#logs-search", Input)
        search.display = True
        search.focus()

    @on(Input.Submitted, "#logs-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        count = self.view.set_search(event.value)
        event.input.display = False
        self.view.focus()
        self.refresh_bindings()
        self._update_status()
        if not event.value:
            return
        if count:
            self.view.find(forward=False)
            self.notify(f"{count:,} lines match {event.value!r}.", title="search")
        else:
            self.notify(f"No line matches {event.value!r}.", severity="warning", title="search")

    def action_next_match(self) -> None:
        self.view.find(forward=True)

    def action_previous_match(self) -> None:
        self.view.find(forward=False)

    def action_save(self) -> None:
        default = (
            self.tui.save_dir
            / f"{self.job.name}-{'all-pods' if self.pod == ALL_PODS else self.pod or 'log'}.log"
        )

        def chosen(path: str | None) -> None:
            if path:
                self.save_to(Path(path))

        self.app.push_screen(PromptDialog("Save the log to:", str(default), "save log"), chosen)

    def save_to(self, path: Path) -> None:
        try:
            count = write_lines_atomic(path, list(self.view.lines))
        except OSError as error:
            self.notify(
                f"Could not save to {path}: {error.strerror or error}",
                severity="error",
                title="save",
            )
            return
        note = (
            f" (the {self.view.dropped:,} oldest were dropped earlier)" if self.view.dropped else ""
        )
        self.notify(f"Saved {count:,} lines to {path}{note}.", title="save")

    def action_shell(self) -> None:
        self.tui.exec_into(self.job.name, None if self.pod == ALL_PODS else self.pod)
