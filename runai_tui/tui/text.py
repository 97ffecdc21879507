"""Inert display text for the TUI: the rule lives in the core (runai_tui/text.py), so the CLI's
diagnosis output and the TUI neutralise log lines the same way."""

from runai_tui.text import MAX_DISPLAY_CHARS, literal

__all__ = ["MAX_DISPLAY_CHARS", "literal"]
