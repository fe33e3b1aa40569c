"""Keeping libraries' own warnings and log lines off the terminal unless `--debug`.

sqlglot, py4j, pyarrow and deltalake speak through Python's `warnings` and `logging`; with no
handler configured, logging's last-resort handler prints their warnings to stderr, between dt's
own lines. dt says what matters in its own words (an error names the file and line), so a
command runs with both silenced; `--debug` lets everything through, with tracebacks.
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

# (openlineage: the client's own log lines; its console transport's events still reach stderr,
# dtcli/api/lineage_transport.py gives that logger a level and handler of its own)
LIBRARIES = ("sqlglot", "py4j", "pyarrow", "deltalake", "pyspark", "urllib3", "fsspec", "openlineage")


def _to_stderr(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


@contextmanager
def library_noise(debug: bool) -> Iterator[None]:
    """Within the block, library warnings and log records reach the terminal only in debug."""
    loggers = [logging.getLogger(name) for name in LIBRARIES]
    saved = [(lg, lg.level, lg.propagate, list(lg.handlers)) for lg in loggers]
    with warnings.catch_warnings():
        if debug:
            warnings.simplefilter("default")
            warnings.showwarning = _to_stderr
            for lg in loggers:
                lg.setLevel(logging.WARNING)
                lg.propagate = False
                lg.handlers[:] = [logging.StreamHandler(sys.stderr)]
        else:
            warnings.simplefilter("ignore")
            for lg in loggers:
                lg.setLevel(logging.CRITICAL + 1)
                lg.propagate = False
        try:
            yield
        finally:
            for lg, level, propagate, handlers in saved:
                lg.setLevel(level)
                lg.propagate = propagate
                lg.handlers[:] = handlers
