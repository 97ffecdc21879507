"""The text report of `runai-tui diagnose` (the TUI renders the same Diagnosis itself)."""

from __future__ import annotations

from runai_tui.knowledge.diagnose.report import Diagnosis
from runai_tui.knowledge.findings import ERROR, Finding, pods_named
from runai_tui.util.text import literal


def seen_line(f: Finding) -> str:
    """`4 lines, on 2 pods, over 3 pod restarts`: how often one fault showed."""
    pods = len(f.all_pods)
    said = f"{f.seen} line{'' if f.seen == 1 else 's'}, on {pods} pod{'' if pods == 1 else 's'}"
    if f.restarts:
        said += f", over {f.restarts} pod restart{'' if f.restarts == 1 else 's'}"
    return said


def render_text(report: Diagnosis, job: str | None = None) -> str:
    """The CLI's report. Every piece of log text goes through `literal`: inert on a terminal.
    A finding with a remedy gets a `remedy:` line; with `job`, the last line says how to
    resubmit with them."""

    out: list[str] = []
    if report.pods:
        width = max(len("POD"), *(len(literal(p.pod)) for p in report.pods))
        out.append(f"{'POD':<{width}}  TRANSPORT  DEVICE")
        for p in report.pods:
            out.append(f"{literal(p.pod):<{width}}  {p.transport:<9}  {literal(p.device) or '-'}")
        out.append("")
    if not report.pods:
        return "no pod to read (the job has no pods yet)"
    if not report.findings:
        lines = sum(p.lines for p in report.pods)
        out.append(f"no problems found ({lines} log lines, {len(report.pods)} pod(s))")
        return "\n".join(out)
    for f in report.findings:
        where = f"{literal(f.pod)}:{f.line}" if f.line else literal(f.pod)
        out.append(f"{f.severity.upper()} {f.code}  {where}")
        if f.pods:  # the same fault on several pods: named once, the first one's evidence
            out.append(f"  pods:     {literal(pods_named(f))}")
        if f.seen > 1 or f.restarts:
            out.append(f"  seen:     {seen_line(f)}")
        out.append(f"  evidence: {literal(f.evidence)}")
        out.append(f"  what:     {literal(f.message)}")
        out.append(f"  fix:      {f.fix}")
        if f.remedy is not None:
            # off `diagnose --log` (a saved log has no remedy): no profiles, no YAML
            from runai_tui.knowledge.remedies import remedy_line

            out.append(f"  {remedy_line(f.remedy).replace('remedy: ', 'remedy:   ', 1)}")
    errors = sum(1 for f in report.findings if f.severity == ERROR)
    out.append("")
    out.append(f"{errors} error(s), {len(report.findings) - errors} other finding(s)")
    if job is not None and any(f.remedy is not None for f in report.findings):
        out.append(f"resubmit with the remedies: runai-tui resubmit {job} --apply-remedies")
    return "\n".join(out)
