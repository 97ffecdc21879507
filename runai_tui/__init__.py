"""runai-tui: job profiles, a headless CLI and a Textual TUI for PyTorch jobs on NVIDIA Run:ai."""

__version__ = "0.1.0"
