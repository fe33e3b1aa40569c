"""A cache of the costly pure steps of checking a project (issue 25), like dbt's partial parsing.

Kept in `target/check_cache.pickle`: for each DT, sqlglot's resolution of its query and the
change compiler's verdict on it. Each entry is keyed by a digest of everything the step reads —
the query's SQL, the file it came from, the input names and their columns and types (so a
source's new schema, an edited table file, a changed config or var that alters the rendered SQL
all give a new key), the dialect and dt's code (version and modules) — so an entry can never be stale: a changed
input simply misses. Errors are never cached (they are raised again on the next run).

A missing, truncated, corrupt or other-version file is ignored and rewritten. `--no-cache` on
the commands, or DT_NO_CACHE=1, turns it off (nothing read, nothing written).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from dtcli import __version__
from dtcli.state.pickled import read_entries, write_entries

FILE = "check_cache.pickle"
# the entries' pickled shape: 2 since TableDef.config is a TableConfig (was a dict). The code
# stamp below already separates builds; the format says so even for a build of the same size.
_FORMAT = 2
_MISS = object()


def _code_stamp() -> str:
    """dt's own code as installed: its version, and each module's size and modification time.
    An editable install (a developer's checkout, a `git pull`) changes code without changing the
    version; a verdict of the old compiler must not survive it. About a millisecond to read."""
    package = Path(__file__).resolve().parents[1]
    stats = []
    for path in sorted(package.rglob("*.py")):
        try:
            st = path.stat()
        except OSError:
            continue
        stats.append((str(path.relative_to(package)), st.st_size, st.st_mtime_ns))
    return hashlib.sha256(repr((__version__, stats)).encode()).hexdigest()[:16]


_CODE = _code_stamp()


def disabled_by_env() -> bool:
    return os.environ.get("DT_NO_CACHE", "").strip() not in ("", "0", "false", "no")


class CheckCache:
    """Entries read once at the start of a check and written back (only what was used) at its end."""

    def __init__(self, root: Path | None, enabled: bool = True):
        self.path = Path(root) / "target" / FILE if root is not None else None
        self.enabled = enabled and self.path is not None and not disabled_by_env()
        # key -> what the step computed (a verdict, a resolution...): opaque to the cache
        self.old: dict[str, object] = read_entries(self.path, _FORMAT, _CODE) if self.enabled else {}
        self.used: dict[str, object] = {}
        self.changed = False

    @staticmethod
    def key(*parts: Any) -> str:
        return hashlib.sha256(repr((_CODE, _FORMAT) + parts).encode()).hexdigest()

    def get(self, key: str, compute, *args):
        """The cached value for `key`, else `compute(*args)` (kept for next time)."""
        if not self.enabled:
            return compute(*args)
        value = self.used.get(key, self.old.get(key, _MISS))
        if value is _MISS:
            value = compute(*args)
            self.changed = True
        self.used[key] = value
        return value

    def save(self, *, prune: bool = True) -> None:
        """Write what this check used (`prune`: entries of deleted or edited DTs drop out; a check
        of part of the project keeps the rest too); write aside, then rename, so a reader never
        sees half a file. A failure to write is not an error."""
        if not self.enabled or (not self.changed and (not prune or len(self.used) == len(self.old))):
            return
        write_entries(self.path, _FORMAT, _CODE, self.used if prune else {**self.old, **self.used})
