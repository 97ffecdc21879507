"""The two kinds of failure the trainer reports as one clear line instead of a traceback."""

from __future__ import annotations


class TrainerError(Exception):
    """A runtime failure (exit 1): a corrupt file, a non-finite loss, a checkpoint that won't load."""

    exit_code = 1


class ConfigError(TrainerError):
    """Bad input (exit 2): a flag value, a missing file, a malformed annotation row."""

    exit_code = 2
