"""HealthPanel: the describe screen's diagnosis of a job's logs (transport badges per pod,
findings with their evidence and fix). Filled by the screen's worker."""

from __future__ import annotations

from textual.widgets import Static

from runai_tui.knowledge.diagnose import Diagnosis
from runai_tui.tui.health_render import diagnosis_renderable
from runai_tui.util.text import literal


class HealthPanel(Static):
    DEFAULT_CSS = """
    HealthPanel {
        height: auto;
        border: round $accent;
        border-title-color: $accent;
        padding: 0 1;
        margin-bottom: 1;
    }
    HealthPanel.-errors { border: round $error; border-title-color: $error; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("reading the pods' logs…", id=id, markup=False)
        self.border_title = "health"
        self.diagnosis: Diagnosis | None = None

    def show(self, diagnosis: Diagnosis) -> None:
        self.diagnosis = diagnosis
        self.set_class(diagnosis.has_errors, "-errors")
        errors = sum(1 for f in diagnosis.findings if f.severity == "error")
        remedies = sum(1 for f in diagnosis.findings if f.remedy is not None)
        said = f"; {remedies} with a remedy: f shows, R resubmits" if remedies else ""
        self.border_subtitle = f"{errors} error(s), {len(diagnosis.findings) - errors} other{said}"
        self.update(diagnosis_renderable(diagnosis))

    def failed(self, message: str) -> None:
        self.update(f"could not read the logs: {literal(message)}")
