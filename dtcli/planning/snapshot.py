"""Pinning one snapshot of the warehouse, read from Delta logs without a JVM.

Each table's log is opened at most once per command, and not at all when it has not moved
since a command read it (dtcli.state.log_cache): its handle is opened when something asks for
it. A run plans under the warehouse lock from what the previous run committed: `refresh`
re-reads only the logs that moved since they were read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from dtcli.errors import ValidationError
from dtcli.model import Project
from dtcli.state.delta_log import TableInfo, info_of, open_table
from dtcli.state.log_cache import LogCache, newest_commit

if TYPE_CHECKING:
    from deltalake import DeltaTable


@dataclass
class Snapshot:
    taken_at: datetime
    sources: dict[str, TableInfo]          # every source a DT reads, at its pinned version
    tables: dict[str, TableInfo | None]    # every DT's current state (None: not created yet)
    with_stats: bool = False
    _handles: dict[str, DeltaTable] = field(default_factory=dict, repr=False)   # name -> its open table
    _paths: dict[str, str] = field(default_factory=dict, repr=False)     # name -> its location
    _kept: LogCache | None = field(default=None, repr=False)              # what to write back

    def keep(self) -> None:
        """Write what this snapshot read to target/ for the next command: once the project is
        checked (a command refused for bad input writes nothing)."""
        if self._kept is not None:
            self._kept.save()

    @property
    def source_versions(self) -> dict[str, int]:
        return {n: i.version for n, i in self.sources.items()}

    def refresh(self, project: Project, now: datetime | None = None) -> Snapshot:
        """The same snapshot brought up to date: logs that moved are read again, new tables
        (created since) are opened; the moment becomes `now`."""
        self.taken_at = now or datetime.now(timezone.utc)
        for name, info in self.sources.items():
            self.sources[name] = self._reread(name, info) or info
        for name, info in list(self.tables.items()):
            if info is None:
                self._paths[name] = project.table_path(name)
                table = self.handle(name)
                if table is not None:
                    self.tables[name] = info_of(table, with_stats=self.with_stats)
            else:
                self.tables[name] = self._reread(name, info)
        return self

    def handle(self, name: str):
        """The open DeltaTable of a source or DT (opened now if this command has not yet)."""
        if name not in self._handles:
            table = open_table(self._paths[name])
            if table is None:
                return None
            self._handles[name] = table
        return self._handles[name]

    def change_rows(self, name: str, since: int, until: int) -> int:
        """Rows changed by an input's commits after `since` up to `until` (from their metrics)."""
        from dtcli.state.change_size import change_rows

        if until <= since:
            return 0
        info = self.sources.get(name) or self.tables.get(name)
        table = self.handle(name) if name in self._paths else None
        return change_rows(table, since, until, info.rows if info else None) if table is not None else 0

    def _reread(self, name: str, info: TableInfo) -> TableInfo | None:
        stamp = newest_commit(self._paths[name])
        if stamp is not None and stamp[0] == info.version:
            return info            # a local log that has not moved: nothing to open or update
        table = self.handle(name)
        if table is None:          # the table was deleted meanwhile
            return None
        try:
            table.update_incremental()
        except OSError:
            return None
        return info if table.version() == info.version else info_of(table, with_stats=self.with_stats)


def take_snapshot(project: Project, names: set[str] | None = None, *, with_stats: bool = False,
                  now: datetime | None = None, use_cache: bool = True) -> Snapshot:
    """Versions of the sources read by `names` (default: all DTs, disabled ones included) and
    the state of those DTs. `use_cache`: what earlier commands read of logs that have not moved
    since is taken from target/ (dtcli.state.log_cache)."""
    every = {**project.disabled, **project.tables}
    names = set(every) if names is None else names
    taken_at = now or datetime.now(timezone.utc)
    wanted = sorted({i for n in names for i in every[n].inputs if i in project.sources})
    cache = LogCache(project.root, enabled=use_cache)
    snapshot = Snapshot(taken_at, {}, {}, with_stats, _kept=cache)
    snapshot._paths.update({n: project.sources[n].path for n in wanted})
    snapshot._paths.update({n: project.table_path(n) for n in names})
    read = _read_all(snapshot, cache, [*wanted, *sorted(names)], with_stats)
    for name in wanted:
        if read[name] is None:
            src = project.sources[name]
            if src.table:
                raise ValidationError(f"source '{name}' is the table {src.table}, which dt has not found "
                                      f"at {src.path or 'a location yet'}", file=src.file, line=src.line,
                                      hint="`dt run` looks table names up in the metastore before it plans")
            raise ValidationError(f"source '{name}' at {src.path} is not a Delta table", file=src.file,
                                  line=src.line, hint="run `dt seed`, or fix the source path")
        snapshot.sources[name] = read[name]
    snapshot.tables.update({n: read[n] for n in sorted(names)})
    return snapshot


READERS = 8     # logs read at once: deltalake reads outside the GIL, and object stores answer slowly


def _read_all(snapshot: Snapshot, cache: LogCache, names: list[str], with_stats: bool
              ) -> dict[str, TableInfo | None]:
    """Each table's state: as kept, when its log has not moved since; else read from its log,
    several logs at once (4x faster than one by one on local disk, more on an object store)."""
    out: dict[str, TableInfo | None] = {}
    missing = []
    for name in names:
        info = cache.get(snapshot._paths[name], with_stats)
        if info is not None:
            out[name] = info
        else:
            missing.append(name)

    def read(name: str):
        table = open_table(snapshot._paths[name])
        return name, table, (info_of(table, with_stats=with_stats) if table is not None else None)

    if len(missing) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(READERS, len(missing))) as pool:
            results = list(pool.map(read, missing))
    else:
        results = [read(name) for name in missing]
    for name, table, info in results:
        if table is not None:
            snapshot._handles[name] = table
            cache.put(snapshot._paths[name], info, with_stats)
        out[name] = info
    return out
