"""Pinning one snapshot of the warehouse, read from Delta logs without a JVM.

Each table's log is opened once per command. A run plans under the warehouse lock from what
the previous run committed: `refresh` re-reads only the logs that moved since they were opened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from dtcli.errors import ValidationError
from dtcli.model import Project
from dtcli.state.delta_log import TableInfo, info_of, open_table


@dataclass
class Snapshot:
    taken_at: datetime
    sources: dict[str, TableInfo]          # every source a DT reads, at its pinned version
    tables: dict[str, TableInfo | None]    # every DT's current state (None: not created yet)
    with_stats: bool = False
    _handles: dict[str, Any] = field(default_factory=dict, repr=False)   # name -> open DeltaTable

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
                table = open_table(project.table_path(name))
                if table is not None:
                    self._handles[name] = table
                    self.tables[name] = info_of(table, with_stats=self.with_stats)
            else:
                self.tables[name] = self._reread(name, info)
        return self

    def change_rows(self, name: str, since: int, until: int) -> int:
        """Rows changed by an input's commits after `since` up to `until` (from their metrics)."""
        from dtcli.state.change_size import change_rows

        info = self.sources.get(name) or self.tables.get(name)
        table = self._handles.get(name)
        return change_rows(table, since, until, info.rows if info else None) if table is not None else 0

    def _reread(self, name: str, info: TableInfo) -> TableInfo | None:
        table = self._handles[name]
        try:
            table.update_incremental()
        except OSError:           # the table was deleted meanwhile
            return None
        return info if table.version() == info.version else info_of(table, with_stats=self.with_stats)


def take_snapshot(project: Project, names: set[str] | None = None, *, with_stats: bool = False,
                  now: datetime | None = None) -> Snapshot:
    """Versions of the sources read by `names` (default: all DTs, disabled ones included) and
    the state of those DTs."""
    every = {**project.disabled, **project.tables}
    names = set(every) if names is None else names
    taken_at = now or datetime.now(timezone.utc)
    wanted = sorted({i for n in names for i in every[n].inputs if i in project.sources})
    handles: dict[str, Any] = {}
    sources: dict[str, TableInfo] = {}
    for name in wanted:
        table = open_table(project.sources[name].path)
        if table is None:
            src = project.sources[name]
            if src.table:
                raise ValidationError(f"source '{name}' is the table {src.table}, which dt has not found "
                                      f"at {src.path or 'a location yet'}", file=src.file, line=src.line,
                                      hint="`dt run` looks table names up in the metastore before it plans")
            raise ValidationError(f"source '{name}' at {src.path} is not a Delta table", file=src.file,
                                  line=src.line, hint="run `dt seed`, or fix the source path")
        handles[name] = table
        sources[name] = info_of(table, with_stats=with_stats)
    tables: dict[str, TableInfo | None] = {}
    for name in sorted(names):
        table = open_table(project.table_path(name))
        if table is not None:
            handles[name] = table
        tables[name] = info_of(table, with_stats=with_stats) if table is not None else None
    return Snapshot(taken_at, sources, tables, with_stats, handles)
