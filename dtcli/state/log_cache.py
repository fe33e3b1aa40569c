"""What dt last read of each table's Delta log, kept between commands (issue 25's state at scale).

A no-op `dt run`, `show` or `validate` over 1,000 created DTs opened 1,000 logs (deltalake reads
the checkpoint and the commits after it, then dt reads up to 50 commits back for the frontier):
about 10 ms a table. Yet a log at a given version never changes, so what dt read of it
(`TableInfo`: version, schema, frontier, statistics) is kept in `target/state_cache.pickle`,
keyed by the table's path and its newest commit file (version, size, modification time: a table
dropped and created again at the same path gets a new file). Finding the newest commit is one
directory listing; only tables that moved, and tables on object stores (where a listing costs
what opening the log costs), are opened and read again. A corrupt or foreign file is ignored
and rewritten; `--no-cache` and DT_NO_CACHE=1 turn it off as they do the check cache.
"""

from __future__ import annotations

import os
from pathlib import Path

from dtcli import __version__
from dtcli.state import storage
from dtcli.state.delta_log import TableInfo
from dtcli.state.pickled import read_entries, write_entries

FILE = "state_cache.pickle"
_FORMAT = 1


def _code_stamp() -> tuple:
    """dt's version and the modules that shape a `TableInfo`: an edited reader (an editable
    install, a `git pull`) must not be answered by what the old one read."""
    from dtcli.model import definitions, frontier
    from dtcli.state import delta_log, delta_types

    stats = []
    for module in (definitions, frontier, delta_log, delta_types):
        try:
            st = os.stat(module.__file__)
            stats.append((st.st_size, st.st_mtime_ns))
        except OSError:
            stats.append(None)
    return (__version__, *stats)


_CODE = _code_stamp()


def newest_commit(path: str) -> tuple[int, int, int] | None:
    """(version, size, mtime_ns) of the newest commit file of the local table at `path`; None
    when there is none to be found this way (no table, a remote path, an unreadable log)."""
    log = _local_log(path)
    if log is None:
        return None
    try:
        names = os.listdir(log)
    except OSError:
        return None
    versions = [int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit()]
    if not versions:
        return None
    version = max(versions)
    try:
        st = os.stat(os.path.join(log, f"{version:020d}.json"))
    except OSError:
        return None
    return version, st.st_size, st.st_mtime_ns


def commit_stamp(path: str, version: int) -> int | None:
    """When the commit file of `version` of the local table at `path` was written (mtime_ns);
    None for a remote path or a commit file not there. A table's directory put back from a copy
    and written on has other commits under the same table id and versions, which Delta never
    makes otherwise (tests and benchmarks do)."""
    log = _local_log(path)
    try:
        return os.stat(os.path.join(log, f"{version:020d}.json")).st_mtime_ns if log is not None else None
    except OSError:
        return None


def _local_log(path: str) -> str | None:
    """The `_delta_log` directory of the local table at `path`; None for a remote path."""
    return None if storage.is_remote(path) else os.path.join(path.removeprefix("file://"), "_delta_log")


class LogCache:
    """Read once at the start of a command, written back at its end when it learnt something."""

    def __init__(self, root: Path | None, enabled: bool = True):
        self.path = Path(root) / "target" / FILE if root is not None else None
        self.enabled = enabled and self.path is not None
        self.old: dict[str, tuple] = read_entries(self.path, _FORMAT, _CODE) if self.enabled else {}
        self.new: dict[str, tuple] = {}

    def get(self, path: str, with_stats: bool) -> TableInfo | None:
        """The info kept for `path` if its log has not moved since (and has the statistics
        asked for); None when it must be read."""
        if not self.enabled:
            return None
        entry = self.old.get(path)
        if entry is None:
            return None
        stamp, info, stats = entry
        if (stats or not with_stats) and newest_commit(path) == stamp and stamp is not None:
            self.new[path] = entry
            return info
        return None

    def put(self, path: str, info: TableInfo, with_stats: bool) -> None:
        if not self.enabled:
            return
        stamp = newest_commit(path)
        if stamp is not None and stamp[0] == info.version:
            self.new[path] = (stamp, info, with_stats)

    def save(self) -> None:
        """Keep what this command read (tables it did not read keep their entries); write aside,
        then rename, so a reader never sees half a file. A failure to write is not an error."""
        if not self.enabled or all(self.old.get(k) == v for k, v in self.new.items()):
            return
        write_entries(self.path, _FORMAT, _CODE, {**self.old, **self.new})
