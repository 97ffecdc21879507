"""LogView's fast width (printable ASCII) agrees with the exact one for every kind of line."""

from __future__ import annotations

from rich.cells import cell_len

from runai_tui.tui.widgets.log_view import display_width
from runai_tui.util.text import MAX_DISPLAY_CHARS, literal

LINES = [
    "",
    "plain NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
    '{"kind": "train", "step": 7, "loss": 0.4321}',
    "[bold red]markup stays text[/]",
    "tab\tseparated\tcolumns",
    "escape \x1b[2J and bell \x07",
    "crlf line\r",
    "C1 control \x9b here",
    "wide 日本語 text and émoji 🚀",
    "x" * MAX_DISPLAY_CHARS,
    "y" * (MAX_DISPLAY_CHARS + 10),
]


def test_display_width_matches_the_literal_cells() -> None:
    for line in LINES:
        assert display_width(line) == cell_len(literal(line)), repr(line[:40])
