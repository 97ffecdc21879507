"""What every runai-tui argv gets, whatever built it: the project the user chose (`with_project`)
and the one-line display form that a shell turns back into the same argv (`display_argv`), which a
screen may fold with a visible marker (`fold_word`).

Apart from the argv builder (runai_tui/runai/command.py), which needs the profiles: the client
adds the project to each of its calls, and the TUI's first job list must not load the profiles
(benchmarks/fig_tui_paint.py)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence


def with_project(argv: Sequence[str], project: str | None, *, override: bool = False) -> list[str]:
    """A submit argv with `-p PROJECT` inserted before `--command`/`--` when `project` is set and
    the argv names no project. A profile's own project is kept, unless `override` (the user chose
    the project explicitly: `-p` on the command line, or `P` in the TUI) replaces it. Both faces
    show and run this argv, so what is displayed is what runs."""
    args = list(argv)
    end = len(args)
    for marker in ("--command", "--"):
        if marker in args:
            end = min(end, args.index(marker))
    if not project:
        return args
    for i, word in enumerate(args[:end]):
        if word in ("-p", "--project") and i + 1 < end:
            if override:
                args[i + 1] = project
            return args
        if word.startswith("--project="):
            if override:
                args[i] = f"--project={project}"
            return args
    args[end:end] = ["-p", project]
    return args


_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


def quote_word(word: str) -> str:
    """Quote one word for a POSIX shell. Control characters use $'...' so the line stays one line."""
    if word and _SAFE.match(word):
        return word
    if any(ord(c) < 32 or ord(c) == 127 for c in word):
        escaped = "".join(_ansi_c(c) for c in word)
        return f"$'{escaped}'"
    return shlex.quote(word)


def _ansi_c(char: str) -> str:
    named = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", "'": "\\'"}
    if char in named:
        return named[char]
    if ord(char) < 32 or ord(char) == 127:
        return f"\\x{ord(char):02x}"
    return char


def fold_word(quoted: str, width: int) -> str:
    """A quoted word cut after `width` characters, with what was cut said: `…(+N chars)`. The
    marker stands outside any quote, so a folded line cannot pass for a command to paste."""
    if len(quoted) <= width:
        return quoted
    return f"{quoted[:width]}…(+{len(quoted) - width} chars)"


def display_argv(argv: list[str], fold: int | None = None) -> str:
    """One line that a POSIX shell (bash, zsh) turns back into exactly argv. With `fold` (a
    display, never a copy or --json), each word longer than that many characters, quoted, is
    cut with `fold_word`'s marker."""
    words = (quote_word(word) for word in argv)
    if fold is not None:
        words = (fold_word(word, fold) for word in words)
    return " ".join(words)
