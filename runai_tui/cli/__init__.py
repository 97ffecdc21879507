"""The headless `runai-tui` command (entry.py), its commands grouped by what they act on."""

from runai_tui.cli.entry import build_parser, main

__all__ = ["build_parser", "main"]
