"""The curves plot: loss above, images/s below, against step, on a linear or log y-axis.

One home for the frame (titles, the two plots, the y-scale toggle); what is drawn in it is the
subclass's: one run's ranks (the describe screen) or many runs overlaid (the compare screen).
"""

from __future__ import annotations

from textual_plotext import PlotextPlot
from textual_plotext.plot import Plot


class LossAndThroughputPlot(PlotextPlot):
    """Subclasses draw their series in `plot_series` (plot 1: loss; plot 2: images/s)."""

    THROUGHPUT_TITLE = "images/s"
    SUBTITLE_HINT = ""  # after "y: linear": the key that toggles the scale, where one does

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.log_scale = False

    def on_mount(self) -> None:
        self.border_title = "curves"
        self.draw()

    def toggle_log_scale(self) -> None:
        self.log_scale = not self.log_scale
        self.draw()

    def plot_series(self, plt: Plot) -> None:
        raise NotImplementedError

    def draw(self) -> None:
        plt = self.plt
        plt.clear_figure()
        scale = "log" if self.log_scale else "linear"
        self.border_subtitle = f"y: {scale}{self.SUBTITLE_HINT}"
        plt.subplots(2, 1)
        plt.subplot(1, 1).title("loss")
        bottom = plt.subplot(2, 1)
        bottom.title(self.THROUGHPUT_TITLE)
        bottom.xlabel("step")
        self.plot_series(plt)
        plt.subplot(1, 1).yscale(scale)
        plt.subplot(2, 1).yscale(scale)
        self.refresh()
