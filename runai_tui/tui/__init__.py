"""The Textual face of runai-tui. Import `runai_tui.tui.app` (not this package) to load Textual."""
