"""Typed errors. Each carries its exit code so the CLI has one error boundary.

Messages are meant for a data engineer reading a terminal: where (file, line), what is wrong,
and how to fix it, on one line.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import TypedDict

EXIT_REFRESH_FAILED = 1
EXIT_USAGE = 2


class Where(TypedDict):
    """Where a value was written, as an error names it: `ValidationError(message, **where)`."""

    file: str | None
    line: int | None


class DtError(Exception):
    """Base of every error dt reports to the user."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, file: str | Path | None = None, line: int | None = None,
                 hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.hint = hint

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "") + ": "
        tail = f" ({self.hint})" if self.hint else ""
        return f"{where}{self.message}{tail}"


class ConfigError(DtError):
    """Bad project or table configuration (YAML, keys, values)."""


class ValidationError(DtError):
    """A definition that cannot be planned: unknown names, cycles, lag rules, bad SQL."""


class UsageError(DtError):
    """A command called with arguments that make no sense for this project."""


class LockTimeout(DtError):
    """Another dt process holds the warehouse lock."""

    exit_code = EXIT_REFRESH_FAILED


def suggest(name: str, candidates: Iterable[str]) -> str | None:
    """A 'did you mean' hint for a misspelt name, or None."""
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"did you mean {close[0]}?" if close else None
