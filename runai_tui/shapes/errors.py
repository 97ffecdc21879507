"""Error types shared by the core, the CLI and the TUI. Each carries a one-line message and a fix."""

from __future__ import annotations

import enum


class ErrorKind(str, enum.Enum):
    NOT_INSTALLED = "not-installed"
    NOT_LOGGED_IN = "not-logged-in"
    NOT_FOUND = "not-found"
    TIMEOUT = "timeout"
    PORT_IN_USE = "port-in-use"
    OTHER = "other"


class Failure(Exception):
    """An error we expect and explain: a one-line message, a fix, and the exit code to use."""

    exit_code = 1

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class RuntimeFailure(Failure):
    """A failure at run time: exit code 1."""


class RunaiError(RuntimeFailure):
    """`runai` (or `runai-local`) failed; `kind` says how, `hint` says what to do."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        hint: str = "",
        *,
        argv: list[str] | None = None,
        output: str = "",
    ) -> None:
        super().__init__(message, hint)
        self.kind = kind
        self.argv = argv or []
        self.output = output


class UsageError(Failure):
    """Bad input from the user (arguments, profile files, --set values): exit code 2."""

    exit_code = 2
