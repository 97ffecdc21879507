"""RanksPanel: one row per rank (step, images/s, data wait, step time, forward time, the model's
TFLOP/s and MFU, age of the last record) and the job's row, from the master's records;
CurvesPanel: loss and every rank's images/s against step, with a log scale to toggle."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static
from textual_plotext.plot import Plot

from runai_tui.knowledge.records.progress import (
    TrainingProgress,
    figure_text,
    job_totals,
    mfu_text,
    record_age,
    tflops_text,
)
from runai_tui.tui.widgets.curves import LossAndThroughputPlot

COLUMNS = ("RANK", "STEP", "IMG/S", "DATA WAIT", "STEP TIME", "FORWARD", "TFLOP/S", "MFU", "AGE")


def ranks_table(progress: TrainingProgress, now: float) -> Table | Text:
    if not progress.ranks:
        return Text("no per-rank figures yet (the trainer writes them every --log-every steps)")
    table = Table(show_edge=False)
    for column in COLUMNS:
        table.add_column(column, justify="left" if column == "RANK" else "right")
    for f in progress.ranks:
        share = f.data_time / f.step_time if f.data_time is not None and f.step_time else 0.0
        table.add_row(
            str(f.rank),
            "-" if f.step is None else str(f.step),
            figure_text(f.img_s, ".2f"),
            Text(
                f"{figure_text(f.data_time, '.3f')} s", style="bold yellow" if share >= 0.5 else ""
            ),
            f"{figure_text(f.step_time, '.3f')} s",
            f"{figure_text(f.forward_time, '.3f')} s",
            tflops_text(f.tflops),
            mfu_text(f.mfu),
            record_age(f.time, now),
        )
    job = job_totals(progress.ranks)
    table.add_row(
        "job", "", figure_text(job.img_s, ".2f"), "", "", "", tflops_text(job.tflops),
        mfu_text(job.mfu), "", style="bold",
    )  # fmt: skip
    return table


class RanksPanel(Static):
    DEFAULT_CSS = """
    RanksPanel { height: auto; border: round $accent; border-title-color: $accent; padding: 0 1; }
    """

    def on_mount(self) -> None:
        self.border_title = "ranks"

    def show(self, progress: TrainingProgress, now: float) -> None:
        self.update(ranks_table(progress, now))


class CurvesPanel(LossAndThroughputPlot):
    """Two plots: loss, and images/s per rank, against step."""

    DEFAULT_CSS = """
    CurvesPanel { height: 24; border: round $accent; border-title-color: $accent; }
    """
    THROUGHPUT_TITLE = "images/s per rank"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.progress = TrainingProgress()

    def show(self, progress: TrainingProgress) -> None:
        self.progress = progress
        self.draw()

    def plot_series(self, plt: Plot) -> None:
        points = list(self.progress.curve)
        loss = [(p.step, p.loss) for p in points if p.loss is not None and p.loss > 0]
        if loss:
            plt.subplot(1, 1).plot([s for s, _ in loss], [v for _, v in loss], marker="braille")
        bottom = plt.subplot(2, 1)
        for rank in range(max((len(p.img_s) for p in points), default=0)):
            series = [
                (p.step, value)
                for p in points
                if rank < len(p.img_s) and (value := p.img_s[rank]) is not None and value > 0
            ]
            if series:
                bottom.plot(
                    [s for s, _ in series],
                    [v for _, v in series],
                    marker="braille",
                    label=f"rank {rank}",
                )
