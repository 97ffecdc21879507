"""LogView: a line-API log viewer for untrusted, unbounded streams (toolong's approach).

- Lines are kept raw in a list bounded to `max_lines`; older lines are dropped and counted.
- Only visible lines are rendered, through `text.literal`, so markup and escapes stay inert.
- Follow mode sticks to the bottom; scrolling up pauses it and counts new lines; `resume()`
  (or scrolling back to the bottom) follows again.
- Search highlights every match on screen and jumps between matching lines.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Sequence

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from runai_tui.util.text import MAX_DISPLAY_CHARS, literal

DEFAULT_MAX_LINES = 100_000
# Colours of the pod column (all pods interleaved): one per pod name, stable across runs.
POD_COLOURS = ("cyan", "magenta", "green", "yellow", "bright_blue", "bright_red", "bright_cyan")


def pod_colour(pod: str) -> str:
    return POD_COLOURS[zlib.crc32(pod.encode()) % len(POD_COLOURS)]


def display_width(line: str) -> int:
    """Cells `line` takes on screen once made literal."""
    # Fast path for most log lines (log ingest at least as fast as Textual's Log):
    # printable ASCII is shown as is, one cell per character.
    if line.isascii() and line.isprintable() and len(line) <= MAX_DISPLAY_CHARS:
        return len(line)
    return cell_len(literal(line))


class LogView(ScrollView, can_focus=True):
    """Scrollable, searchable, bounded view of plain text lines."""

    COMPONENT_CLASSES = {"logview--match", "logview--current"}

    DEFAULT_CSS = """
    LogView {
        background: $surface;
        color: $text;
        overflow: scroll;
    }
    LogView > .logview--match {
        background: $warning 60%;
        color: $text;
        text-style: bold;
    }
    LogView > .logview--current {
        background: $accent 30%;
    }
    """

    follow: reactive[bool] = reactive(True, init=False)
    """Stick to the newest line."""

    class StatusChanged(Message):
        """Follow state, pending count or dropped count changed."""

        def __init__(self, log_view: LogView) -> None:
            super().__init__()
            self.log_view = log_view

    def __init__(
        self,
        max_lines: int = DEFAULT_MAX_LINES,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.max_lines = max_lines
        self._lines: list[str] = []
        self._width = 0
        self.dropped = 0  # lines pruned from the top since the start
        self.pending = 0  # lines that arrived while follow was paused
        self.search_term = ""
        self._search: re.Pattern[str] | None = None
        self.current_match: int | None = None  # index into lines of the selected match
        self._cache: LRUCache[tuple[int, int], Strip] = LRUCache(1024)
        self._pod_column = False

    @property
    def pod_column(self) -> bool:
        """Lines start with `[POD] ` (all pods interleaved): colour that column by pod."""
        return self._pod_column

    @pod_column.setter
    def pod_column(self, on: bool) -> None:
        self._pod_column = on
        self._cache.clear()
        self.refresh()

    # -- content -----------------------------------------------------------------------------

    @property
    def lines(self) -> Sequence[str]:
        """The raw lines kept (the newest `max_lines`)."""
        return self._lines

    @property
    def line_count(self) -> int:
        return len(self._lines)

    @property
    def total_lines(self) -> int:
        """Every line ever written, kept or dropped."""
        return self.dropped + len(self._lines)

    def write_lines(self, lines: Iterable[str]) -> None:
        """Append lines (no trailing newlines expected; embedded ones split the line)."""
        new: list[str] = []
        for line in lines:
            new.extend(line.split("\n") if "\n" in line else (line,))
        if not new:
            return
        self._lines.extend(new)
        width = max(map(display_width, new))
        self._width = max(self._width, width)
        excess = len(self._lines) - self.max_lines
        if excess > 0:
            del self._lines[:excess]
            self.dropped += excess
            self._cache.clear()
            if self.current_match is not None:
                self.current_match = (
                    self.current_match - excess if self.current_match >= excess else None
                )
            if not self.follow:
                # Keep the paused view on the same text although the top was dropped.
                self.scroll_to(y=max(0, self.scroll_y - excess), animate=False, immediate=True)
        self.virtual_size = Size(self._width, len(self._lines))
        if self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        else:
            self.pending += len(new)
        self.refresh()
        self.post_message(self.StatusChanged(self))

    def write_line(self, line: str) -> None:
        self.write_lines([line])

    def clear(self) -> None:
        self._lines.clear()
        self._width = 0
        self.dropped = 0
        self.pending = 0
        self.current_match = None
        self._cache.clear()
        self.virtual_size = Size(0, 0)
        self.refresh()
        self.post_message(self.StatusChanged(self))

    # -- follow / pause ----------------------------------------------------------------------

    def pause(self) -> None:
        if self.follow:
            self.follow = False

    def resume(self) -> None:
        """Follow again: jump to the newest line and forget the pending count."""
        self.pending = 0
        self.follow = True
        self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.post_message(self.StatusChanged(self))

    def watch_follow(self, follow: bool) -> None:
        if follow:
            self.pending = 0
        self.post_message(self.StatusChanged(self))

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        at_end = new_value >= self.max_scroll_y
        # Our own scrolling only ever moves down, so an upward move comes from the user.
        if self.follow and new_value < old_value and not at_end:
            self.follow = False
        elif not self.follow and at_end and new_value > old_value:
            # Already at the bottom (maybe mid-animation): follow without scrolling again.
            self.pending = 0
            self.follow = True

    # -- search ------------------------------------------------------------------------------

    def set_search(self, term: str) -> int:
        """Highlight `term` (case-insensitive, literal); return how many lines match."""
        self.search_term = term
        self._search = re.compile(re.escape(term), re.IGNORECASE) if term else None
        self.current_match = None
        self._cache.clear()
        self.refresh()
        return self.match_count()

    def match_count(self) -> int:
        if self._search is None:
            return 0
        search = self._search.search
        return sum(1 for line in self._lines if search(line))

    def find(self, forward: bool = True) -> int | None:
        """Move to the next (or previous) matching line, pausing follow; None when none."""
        if self._search is None or not self._lines:
            return None
        search = self._search.search
        count = len(self._lines)
        if self.current_match is not None:
            start = self.current_match
        else:
            start = int(self.scroll_y) - 1 if forward else int(self.scroll_y) + self.size.height
        step = 1 if forward else -1
        for offset in range(1, count + 1):
            index = (start + step * offset) % count
            if search(self._lines[index]):
                self.current_match = index
                self.follow = False
                self._cache.clear()
                top = max(0, index - self.size.height // 2)
                self.scroll_to(y=top, animate=False, immediate=True)
                self.refresh()
                return index
        return None

    # -- rendering ---------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if index >= len(self._lines):
            return Strip.blank(width, base)
        strip = self._line_strip(index, base)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _line_strip(self, index: int, base: Style) -> Strip:
        key = (self.dropped + index, self.current_match == index)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        shown = literal(self._lines[index])
        text = Text(shown, style=base, no_wrap=True, end="")
        if self._pod_column and shown.startswith("["):
            end = shown.find("] ")
            if end > 0:
                text.stylize(Style(color=pod_colour(shown[1:end]), bold=True), 0, end + 1)
        if index == self.current_match:
            text.stylize(self.get_component_rich_style("logview--current"))
        if self._search is not None:
            match_style = self.get_component_rich_style("logview--match")
            for found in self._search.finditer(shown):
                text.stylize(match_style, found.start(), found.end())
        segments = [Segment(seg.text, seg.style) for seg in text.render(self.app.console)]
        strip = Strip(segments, cell_len(shown))
        self._cache[key] = strip
        return strip
