"""The entries of a cache file dt keeps under target/: read only when whole and written by the
same dt code, written aside and renamed so that a reader never sees half a file.

Neither reading nor writing is ever an error: a missing, truncated, corrupt or foreign file is no
cache, and a target/ that cannot be written means no cache this time.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Mapping
from pathlib import Path


def read_entries(path: Path, fmt: int, code: object) -> dict[str, object]:
    """The file's entries when it is whole and was written with this `fmt` by this `code`."""
    try:
        with open(path, "rb") as f:
            doc = pickle.load(f)
        if isinstance(doc, dict) and doc.get("format") == fmt and doc.get("dt") == code \
                and isinstance(doc.get("entries"), dict):
            return doc["entries"]
    except Exception:       # broad: unpickling runs any class's code; a cache that cannot be read is no cache
        pass
    return {}


def write_entries(path: Path, fmt: int, code: object, entries: Mapping[str, object]) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            pickle.dump({"format": fmt, "dt": code, "entries": entries}, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except (OSError, RecursionError, pickle.PicklingError):  # a read-only target/, or a tree too deep to pickle
        tmp.unlink(missing_ok=True)
