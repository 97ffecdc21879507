"""Read the app's screen as plain text (what a user would see), for assertions in Pilot tests."""

from __future__ import annotations

from textual.app import App


def screen_text(app: App) -> str:
    """The current screen, composited, one string per row joined by newlines."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)
