"""Handing secret Spark settings to spark-submit without putting them on its command line.

Any user of the machine can read a process's arguments (`ps`), and dt's `--dry-run`, logs and
errors quote commands; so settings whose names say they are secret (redact.is_secret) go into a
properties file only its owner can read (0600, in a 0700 folder), passed as `--properties-file`
with `--load-spark-defaults` (so a cluster's spark-defaults.conf still applies). spark-submit
reads it once at start; dt deletes it when the application ends (`forget`).

The file's name is derived from its content, so the same settings give the same command: the
warm application of `dt run --watch` compares commands to decide whether it can be reused.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from dtcli.redact import is_secret

_written: set[Path] = set()


def public(conf: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in conf.items() if not is_secret(k)}


def secret(conf: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in conf.items() if is_secret(k)}


def _folder() -> Path:
    folder = Path(tempfile.gettempdir()) / f"dt-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    return folder


def _escape(text: str) -> str:
    """A value as java.util.Properties reads it back (backslashes and line breaks escaped)."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def properties_args(conf: Mapping[str, str]) -> list[str]:
    """spark-submit arguments carrying the secret settings of `conf` (none: no arguments)."""
    hidden = secret(conf)
    if not hidden:
        return []
    body = "".join(f"{_escape(k)}={_escape(v)}\n" for k, v in sorted(hidden.items()))
    path = _folder() / f"submit-{hashlib.sha256(body.encode()).hexdigest()[:16]}.properties"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(body)
    if not _written:
        atexit.register(forget)   # also when dt is interrupted before the application ends
    _written.add(path)
    return ["--properties-file", str(path), "--load-spark-defaults"]


def forget() -> None:
    """Delete the properties files written by this process (the applications have read them)."""
    for path in list(_written):
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        _written.discard(path)
