"""LogView: follow/pause/resume, bounded memory, search, literal rendering of hostile text."""

from __future__ import annotations

from textual.app import App, ComposeResult

from runai_tui.tui.widgets.log_view import LogView
from tests.tui.screen_text import screen_text


class LogApp(App):
    def __init__(self, max_lines: int = 1000) -> None:
        super().__init__()
        self.max_lines = max_lines

    def compose(self) -> ComposeResult:
        yield LogView(max_lines=self.max_lines)


async def test_follow_pause_pending_and_resume() -> None:
    app = LogApp()
    async with app.run_test(size=(80, 10)) as pilot:
        view = app.query_one(LogView)
        view.focus()
        view.write_lines([f"line {i}" for i in range(100)])
        await pilot.pause()
        assert view.follow and view.scroll_y == view.max_scroll_y
        assert "line 99" in screen_text(app)

        await pilot.press("up", "up", "pageup")  # the user scrolls up: follow pauses
        assert not view.follow
        top = view.scroll_y
        view.write_lines([f"new {i}" for i in range(7)])
        await pilot.pause()
        assert view.pending == 7
        assert view.scroll_y == top  # the view stays where the user put it
        assert "new 6" not in screen_text(app)

        view.resume()
        await pilot.pause()
        assert view.follow and view.pending == 0
        assert "new 6" in screen_text(app)

        await pilot.press("pageup")
        assert not view.follow
        await pilot.press("end")  # scrolling back to the bottom follows again
        assert view.follow


async def test_memory_is_bounded_and_drops_are_counted() -> None:
    app = LogApp(max_lines=500)
    async with app.run_test(size=(80, 10)) as pilot:
        view = app.query_one(LogView)
        for batch in range(10):
            view.write_lines([f"b{batch} l{i}" for i in range(200)])
        await pilot.pause()
        assert view.line_count == 500
        assert view.dropped == 1500 and view.total_lines == 2000
        assert view.lines[0] == "b7 l100" and view.lines[-1] == "b9 l199"
        assert "b9 l199" in screen_text(app)


async def test_search_highlights_and_moves_between_matches() -> None:
    app = LogApp()
    async with app.run_test(size=(80, 10)) as pilot:
        view = app.query_one(LogView)
        view.write_lines(
            [f"step {i}" + (" ERROR disk" if i in (10, 50, 90) else "") for i in range(100)]
        )
        await pilot.pause()
        assert view.set_search("error") == 3
        assert view.find(forward=True) == 10  # wraps from the bottom to the first match
        await pilot.pause()
        assert not view.follow
        assert "step 10 ERROR disk" in screen_text(app)
        assert view.find(forward=True) == 50
        assert view.find(forward=False) == 10
        assert view.find(forward=False) == 90  # wraps backwards
        # The match is styled with the highlight component style on screen.
        strip = view.render_line(view.current_match - int(view.scroll_y))
        highlight = view.get_component_rich_style("logview--match")
        styled = [seg.text for seg in strip if seg.style and seg.style.bgcolor == highlight.bgcolor]
        assert "ERROR" in styled
        assert view.set_search("nothing-like-this") == 0
        assert view.find() is None


async def test_hostile_lines_are_shown_literally() -> None:
    app = LogApp()
    hostile = [
        "[bold red]not markup[/]",
        "clear: \x1b[2J here",
        "title: \x1b]0;pwned\x07 end",
        "long " + "y" * 50_000,
    ]
    async with app.run_test(size=(100, 10)) as pilot:
        view = app.query_one(LogView)
        view.write_lines(hostile)
        await pilot.pause()
        text = screen_text(app)
        assert "[bold red]not markup[/]" in text
        assert "clear: ^[[2J here" in text
        assert "title: ^[]0;pwned^G end" in text
        assert "\x1b" not in text and "\x07" not in text
        assert view.lines[1] == hostile[1]  # kept raw for saving
        await pilot.press("end", "right")  # horizontal scrolling over the long line works
        assert view.max_scroll_x > 3000
