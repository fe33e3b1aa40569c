"""Spark's and Delta's errors as one line a user can act on: the error condition and its
message, not Py4J's wrapper or the JVM stack; shared by the refreshes, the metastore work and
the driver's start-up."""

from __future__ import annotations

import re

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException

from dtcli.model import RefreshStep
from dtcli.redact import scrub

# What Spark raises in Python: its own exceptions (AnalysisException, a Java error it converted)
# and Py4J's, for a Java exception it did not convert or a JVM that is gone.
SPARK_ERRORS: tuple[type[Exception], ...] = (PySparkException, Py4JError)

_JAVA_EXCEPTION = re.compile(r"^:?\s*[\w.$]+(?:Exception|Error): (.+)$")


_CAUSED_BY = re.compile(r"^Caused by: [\w.$]+(?:Exception|Error): (\[[A-Z][A-Z0-9_.]*\].*)$")
_CONDITION = re.compile(r"^\[([A-Z][A-Z0-9_.]*)\]")
# Conditions that only say a task failed: the cause (a division by zero, a cast...) is deeper.
_WRAPPERS = ("TASK_WRITE_FAILED", "FAILED_EXECUTE_UDF")


def error_message(exc: BaseException) -> str:
    """One line a user can act on: the error condition and its message, not Py4J's wrapper."""
    text = str(exc).strip() or type(exc).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and lines[0].startswith("An error occurred while calling"):
        # Py4J's first line names only the JVM call; the cause is the first Java exception line.
        cause = next((m.group(1) for m in map(_JAVA_EXCEPTION.match, lines[1:]) if m), None)
        if cause:
            lines = [cause]
            wrapper = _CONDITION.match(cause)
            if (wrapper and wrapper.group(1) in _WRAPPERS) or cause.startswith("Job aborted due to stage failure"):
                # a failed task: the root cause is the last "Caused by" that names a condition
                roots = [m.group(1) for m in map(_CAUSED_BY.match, text.splitlines()[1:]) if m]
                lines = roots[-1:] or lines
    text = lines[0] if lines else text
    condition = error_condition(exc)
    first = scrub(text[:500])
    return f"[{condition}] {first}" if condition and condition not in first else first


_COMPILED_AT = re.compile(r";?\s*line (\d+),? pos (\d+)")


def at_file(step: RefreshStep, message: str) -> str:
    """An error about the SQL dt compiled from the DT's file, reported against that file: the
    position Spark gives is in text the user never wrote, so it is dropped."""
    file = step.options.file
    if not file:
        return message
    return f"{file}: " + _COMPILED_AT.sub("", message).rstrip()


def condition_of(message: str) -> str | None:
    """The error condition an error message starts with ("[DIVIDE_BY_ZERO] ..."), if any."""
    match = _CONDITION.match(message)
    return match.group(1) if match else None


def error_condition(exc: BaseException) -> str | None:
    """Spark's or Delta's error condition (e.g. DELTA_MISSING_CHANGE_DATA), when it has one."""
    getter = getattr(exc, "getCondition", None)
    if callable(getter):
        try:
            return getter() or None
        except SPARK_ERRORS:        # asking the JVM, which may be gone
            return None
    return None


# Error conditions (and Java exception names) that mean "the change data is not there".
UNAVAILABLE = ("DELTA_MISSING_CHANGE_DATA", "DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_SCHEMA_CHANGE",
               "DELTA_CDC_START_VERSION_AFTER_LATEST", "DELTA_VERSION_NOT_CONTIGUOUS",
               "DELTA_CANNOT_TIME_TRAVEL", "FileNotFoundException", "FAILED_READ_FILE",
               "DELTA_FILE_NOT_FOUND", "VersionNotFoundException", "DELTA_VERSION_NOT_FOUND",
               "DELTA_CHANGE_TABLE_FEED_DISABLED", "DELTA_MISSING_CHANGE")


def is_unavailable(exc: BaseException) -> bool:
    """Whether an error says an input's change data cannot be read (vacuumed, the feed off, a
    version gone): the DT is then recomputed, or, for a custom table, the fix is named."""
    text = f"{error_condition(exc) or ''} {exc}"
    return any(marker in text for marker in UNAVAILABLE)
