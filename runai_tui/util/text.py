"""Make untrusted text (pod logs, job output) safe to draw in a terminal or the TUI: every control
character becomes visible caret notation, so escape sequences and Rich markup are shown, never
interpreted. Core (no Textual): the CLI and the TUI both use it."""

from __future__ import annotations

import functools
import re

# C0 controls, DEL and C1 controls. TAB is expanded separately; everything else becomes visible.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f\x80-\x9f]")

# A line longer than this is cut for display (the full text is still kept and saved).
MAX_DISPLAY_CHARS = 4000


def _caret(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code < 0x20:
        return "^" + chr(code + 0x40)  # ESC -> ^[, BEL -> ^G, CR -> ^M
    if code == 0x7F:
        return "^?"
    return f"\\x{code:02x}"  # C1 controls such as CSI (0x9b)


def literal(line: str, max_chars: int = MAX_DISPLAY_CHARS) -> str:
    """Return `line` as inert display text: controls in caret notation, tabs expanded, cut long."""
    if line.endswith("\r"):  # CRLF logs: the CR carries no meaning on screen
        line = line[:-1]
    if len(line) > max_chars:
        extra = len(line) - max_chars
        line = f"{line[:max_chars]} … [{extra} more characters]"
    if "\t" in line:
        line = line.expandtabs(8)
    return _CONTROL.sub(_caret, line)


_DIGITS = re.compile(r"(\d+)")


@functools.lru_cache(maxsize=1 << 16)  # a table re-sorts the same names on every refresh
def natural_key(name: str) -> tuple[str | int, ...]:
    """A sort key that orders names as people read them: `t2` before `t10`, `a-9` before
    `a-10`, case aside. The name split at its runs of digits alternates text and number
    (text first, maybe empty), so two keys compare text with text and number with number."""
    parts: list[str | int] = list(_DIGITS.split(name.casefold()))
    parts[1::2] = [int(digits) for digits in parts[1::2]]
    return tuple(parts)
