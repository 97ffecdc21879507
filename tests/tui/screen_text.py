"""Read the app's screen as plain text (what a user would see), for assertions in Pilot tests.

Through Textual's public `App.export_screenshot()`: the SVG has one `<text>` element per run of
styled characters, placed at its column (`x` in character widths) on its row (the clip path
`…-line-N`); whitespace-only runs are left out, so the gaps are spaces."""

from __future__ import annotations

import html
import re

from rich.cells import cell_len
from textual.app import App

_TEXT = re.compile(
    r'<text [^>]*?x="([^"]+)"[^>]*?clip-path="url\(#[^"]*-line-(\d+)\)">(.*?)</text>'
)
_CHAR_WIDTH = 20 * 0.61  # Rich's SVG export: char_height 20 x font_aspect_ratio 0.61


def screen_text(app: App) -> str:
    """The current screen, composited, one string per row joined by newlines."""
    width, height = app.size
    runs: list[list[tuple[int, str]]] = [[] for _ in range(height)]
    for x, line, text in _TEXT.findall(app.export_screenshot()):
        runs[int(line)].append(
            (round(float(x) / _CHAR_WIDTH), html.unescape(text.replace("&#160;", " ")))
        )
    rows = []
    for row in runs:
        out, column = "", 0
        for start, text in sorted(row):
            out += " " * (start - column) + text
            column = start + cell_len(text)
        rows.append(out + " " * (width - column))
    return "\n".join(rows)
