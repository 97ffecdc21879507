"""How the TUI draws a job's diagnosis (findings, transports, remedies) and a preflight
checklist. The knowledge itself is in the core (runai_tui/knowledge/diagnose/,
runai_tui/knowledge/probes/preflight.py); every log or pod value goes through `literal`."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from runai_tui.knowledge.diagnose import TRANSPORT_GLOO, TRANSPORT_IB, TRANSPORT_SOCKET, Diagnosis
from runai_tui.knowledge.findings import pods_named
from runai_tui.knowledge.probes.preflight import FAIL, PASS, WARN, Preflight, status
from runai_tui.knowledge.remedies import remedy_line
from runai_tui.tui.health_view import REMEDY_MARK, SEVERITY_MARK, SEVERITY_STYLE
from runai_tui.util.text import literal

TRANSPORT_STYLE = {
    TRANSPORT_IB: "bold black on green",
    TRANSPORT_SOCKET: "bold black on yellow",
    TRANSPORT_GLOO: "bold black on cyan",  # CPU DDP: TCP is what it has, not a fallback
}
STATUS_STYLE = {PASS: "green", FAIL: "bold red", WARN: "yellow"}


def transport_badge(transport: str, device: str) -> Text:
    label = f" {transport} {literal(device)} " if device else f" {transport} "
    return Text(label, style=TRANSPORT_STYLE.get(transport, "black on grey70"))


def diagnosis_renderable(diagnosis: Diagnosis) -> Group:
    parts: list[object] = []
    badges = Text()
    for pod in diagnosis.pods:
        badges.append(literal(pod.pod) + " ")
        badges.append_text(transport_badge(pod.transport, pod.device))
        badges.append("  ")
    if diagnosis.pods:
        parts.append(badges)
    if not diagnosis.findings:
        lines = sum(p.lines for p in diagnosis.pods)
        parts.append(Text(f"no problems found in {lines} log lines", style="green"))
    if diagnosis.findings:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1)
        for f in diagnosis.findings:
            mark = Text(f"{SEVERITY_MARK.get(f.severity, '·')} {f.code}")
            mark.stylize(SEVERITY_STYLE.get(f.severity, "dim"))
            where = f"{literal(f.pod)}:{f.line}" if f.line else literal(f.pod)
            detail = Text(f"{where}  {literal(f.message)}")
            if f.pods:  # the same fault on several pods: one finding naming them
                detail.append(f"\npods: {literal(pods_named(f))}", style="bold")
            if f.evidence:
                detail.append(f"\n{literal(f.evidence)}", style="dim")
            detail.append(f"\nfix: {f.fix}", style="cyan")
            if f.remedy is not None:  # marked: `f` shows the overrides, `R` resubmits with them
                mark.append(f"\n{REMEDY_MARK}", style="bold green")
                detail.append(f"\n{remedy_line(f.remedy)}", style="green")
            grid.add_row(mark, detail)
        parts.append(grid)
    return Group(*parts)  # type: ignore[arg-type]


def checklist_renderable(report: Preflight) -> Group:
    parts: list[object] = []
    for pod in report.pods:
        table = Table(title=literal(pod.pod), title_justify="left", expand=True, show_edge=False)
        table.add_column("CHECK", no_wrap=True)
        table.add_column("STATUS", no_wrap=True)
        table.add_column("REASON", ratio=1)
        for item in pod.items:
            state = status(item)
            shown = Text(state, style=STATUS_STYLE.get(state, "dim"))
            table.add_row(item.code, shown, Text(literal(item.message)))
        parts += [table, Text("")]
    for fault in report.faults():  # each fix once, naming the pods it is for
        line = Text(f"✗ {fault.code}", style="bold red")
        line.append(f"  {literal(pods_named(fault))}")
        if fault.fix:
            line.append(f"\nfix: {fault.fix}", style="cyan")
        if fault.remedy is not None:
            line.append(f"\n{remedy_line(fault.remedy)}", style="green")
        parts += [line, Text("")]
    failed = sum(1 for p in report.pods for i in p.items if status(i) == FAIL)
    style = "bold red" if failed else "green"
    parts.append(Text(f"{failed} failed check(s) in {len(report.pods)} pod(s)", style=style))
    return Group(*parts)  # type: ignore[arg-type]
