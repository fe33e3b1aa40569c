"""Pinning one snapshot of the warehouse, read from Delta logs without a JVM."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from dtcli.errors import ValidationError
from dtcli.model import Project
from dtcli.state.delta_log import TableInfo, table_info


@dataclass
class Snapshot:
    taken_at: datetime
    sources: dict[str, TableInfo]          # every source a DT reads, at its pinned version
    tables: dict[str, TableInfo | None]    # every DT's current state (None: not created yet)

    @property
    def source_versions(self) -> dict[str, int]:
        return {n: i.version for n, i in self.sources.items()}


def take_snapshot(project: Project, names: set[str] | None = None, *, with_stats: bool = False,
                  now: datetime | None = None) -> Snapshot:
    """Versions of the sources read by `names` (default: all DTs) and the state of those DTs."""
    names = set(project.tables) if names is None else names
    taken_at = now or datetime.now(timezone.utc)
    wanted = sorted({i for n in names for i in project.tables[n].inputs if i in project.sources})
    sources: dict[str, TableInfo] = {}
    for name in wanted:
        info = table_info(project.sources[name].path, with_stats=False)
        if info is None:
            src = project.sources[name]
            raise ValidationError(f"source '{name}' at {src.path} is not a Delta table", file=src.file,
                                  line=src.line, hint="run `dt seed`, or fix the source path")
        sources[name] = info
    tables = {n: table_info(project.table_path(n), with_stats=with_stats) for n in sorted(names)}
    return Snapshot(taken_at, sources, tables)
