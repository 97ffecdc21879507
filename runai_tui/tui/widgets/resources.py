"""ResourcesPanel: the describe screen's per-pod CPU, memory against its limit and GPUs (the core's
`knowledge/probes/resources.py` probe), and `events_timeline`: describe's events as a timeline, headed by
why a Pending job waits (`knowledge/diagnose/pending.py`). Every value from the cluster goes through
`literal`."""

from __future__ import annotations

from datetime import datetime

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from runai_tui.knowledge.diagnose.pending import why_pending
from runai_tui.knowledge.probes.resources import (
    TopReport,
    cpu_text,
    gpus_text,
    memory_text,
)
from runai_tui.shapes.models import JobDetail
from runai_tui.util.text import literal


def resources_renderable(report: TopReport) -> Table:
    table = Table(expand=True, show_edge=False)
    for column in ("POD", "CPU", "MEMORY", "GPUS"):
        table.add_column(column, no_wrap=column != "GPUS")
    for res in report.pods:
        name = Text(literal(res.pod))
        if not res.running:
            table.add_row(name, Text(res.phase, style="dim"), Text(""), Text(""))
        elif res.error:
            table.add_row(name, Text("error", style="bold red"), Text(""),
                          Text(literal(f"{res.error} ({res.hint})"), style="dim"))  # fmt: skip
        else:
            memory = Text(memory_text(res), style="bold red" if res.memory_warning else "")
            gpus = Text(literal(gpus_text(res)), style="" if res.gpus else "dim")
            table.add_row(name, Text(cpu_text(res)), memory, gpus)
    return table


class ResourcesPanel(Static):
    DEFAULT_CSS = """
    ResourcesPanel {
        height: auto;
        border: round $accent;
        border-title-color: $accent;
        padding: 0 1;
        margin-bottom: 1;
    }
    ResourcesPanel.-warning { border: round $error; border-title-color: $error; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("reading the pods' resources…", id=id, markup=False)
        self.border_title = "resources"
        self.report: TopReport | None = None

    def show(self, report: TopReport) -> None:
        self.report = report
        warned = any(p.memory_warning for p in report.pods)
        self.set_class(warned, "-warning")
        self.border_subtitle = "memory near its limit" if warned else ""
        self.update(resources_renderable(report))

    def failed(self, message: str) -> None:
        self.report = None
        self.set_class(False, "-warning")
        self.update(Text(literal(message), style="dim"))


def _clock(value: str) -> tuple[str, datetime | None]:
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return literal(value), None
    return when.strftime("%H:%M:%S"), when


def events_timeline(detail: JobDetail) -> Group:
    """Why it waits (when it does), then one line per event, oldest first: the clock time, the
    time since the event before, a mark (▲ warning, ● normal), the reason and the message."""
    parts: list[object] = []
    for reason in why_pending(detail):
        line = Text("waiting: ", style="bold yellow")
        line.append(reason.summary, style="bold")
        if reason.pod:
            line.append(f" ({literal(reason.pod)})")
        line.append(f"\n  fix: {reason.fix}", style="cyan")
        parts.append(line)
    grid = Table.grid(padding=(0, 1))
    for _ in range(4):
        grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    previous: datetime | None = None
    for event in sorted(detail.events, key=lambda e: e.time):
        clock, when = _clock(event.time)
        gap = ""
        if when is not None and previous is not None:
            seconds = int((when - previous).total_seconds())
            gap = f"+{seconds}s" if seconds < 120 else f"+{seconds // 60}m"
        previous = when or previous
        warning = event.type == "Warning"
        grid.add_row(
            Text(clock, style="dim"),
            Text(gap, style="dim"),
            Text("▲" if warning else "●", style="bold yellow" if warning else "green"),
            Text(literal(event.reason), style="bold" if warning else ""),
            Text(literal(event.message)),
        )
    parts.append(Text("Events", style="bold"))
    parts.append(grid if detail.events else Text("none", style="dim"))
    return Group(*parts)  # type: ignore[arg-type]
