"""Secrets in settings never leave dt: which settings are secret, and scrubbing their values.

Cluster targets carry object-store keys in `spark.conf` (or the environment). Every place dt
renders settings (the spark-submit command, `--dry-run`) hides them by name, and every text dt
writes or prints that may quote them (error messages, the spark-submit log, run_results.json,
refresh history messages) goes through `scrub`, which replaces the secret values themselves:
a Java exception that echoes a key is caught too, whatever it calls it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

MASK = "****"
# Spark's own spark.redaction.regex, plus S3A/ABFS key names and "credential"
_SECRET_NAME = re.compile(r"secret|password|token|credential|access[._-]?key|account[._-]key|(?<![a-z])sas(?![a-z])",
                          re.I)
_SECRET_ENV = ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN", "AZURE_STORAGE_ACCOUNT_KEY",
               "AZURE_CLIENT_SECRET")
_MIN_LENGTH = 4   # shorter values would mask ordinary words; no real key is that short

_values: set[str] = set()


def is_secret(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def remember(conf: Mapping[str, str]) -> None:
    """Note the secret values among `conf` (and in the environment) so `scrub` hides them."""
    for key, value in conf.items():
        if is_secret(str(key)) and len(str(value)) >= _MIN_LENGTH:
            _values.add(str(value))
    for name in _SECRET_ENV:
        if len(os.environ.get(name, "")) >= _MIN_LENGTH:
            _values.add(os.environ[name])


def remember_value(value: str) -> None:
    """Note one secret value dt read from elsewhere (an API key from the environment)."""
    if len(value) >= _MIN_LENGTH:
        _values.add(value)


def masked(conf: Mapping[str, str]) -> dict[str, str]:
    """`conf` with every secret setting's value replaced by the mask (for rendering)."""
    return {k: (MASK if is_secret(str(k)) else v) for k, v in conf.items()}


def scrub_file(path) -> None:
    """Scrub a file dt wrote from another process's output (the spark-submit log)."""
    if not _values:
        return
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return
    clean = scrub(text)
    if clean != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(clean)


def scrub(text: str) -> str:
    """`text` with every remembered secret value replaced by the mask."""
    for value in sorted(_values, key=len, reverse=True):   # longest first: one may contain another
        if value in text:
            text = text.replace(value, MASK)
    return text
