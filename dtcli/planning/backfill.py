"""Backfill: which table a new DT is copied from, at which Delta version, checked before Spark.

Backfill is a creation-time setting, as in Snowflake: the copy is made once, when the DT is
created, from the source pinned at one version (`at`/`before` a version or a moment, resolved
from the source's Delta log here), and the DT never reads the source again. Adding or changing
`backfill` on a DT that exists is an error that says how to recreate the DT.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from dtcli.config_keys import BackfillSpec
from dtcli.errors import ValidationError, Where, suggest
from dtcli.model import Column, Project, TableDef
from dtcli.plan_parts import BackfillCopy
from dtcli.sql.types import holds
from dtcli.state.delta_log import TableInfo, open_table
from dtcli.state.delta_types import columns_from_delta_schema

if TYPE_CHECKING:
    from deltalake import DeltaTable


@dataclass(frozen=True)
class BackfillSource:
    name: str                   # as configured: a table name, or its path
    path: str
    version: int                # the Delta version copied
    columns: tuple[Column, ...]

    @property
    def copy(self) -> BackfillCopy:
        """What the engine copies (the columns were checked here)."""
        return BackfillCopy(self.name, self.path, self.version)


def check_table(project: Project, table: TableDef, columns: tuple[Column, ...],
                info: TableInfo | None) -> BackfillSource | None:
    """The pinned backfill source of a DT about to be created; None when it has none, or exists."""
    spec = table.config.backfill
    origin = table.config_origin.get("backfill")
    where: Where = {"file": origin.file if origin and origin.file else table.file,
             "line": origin.line if origin else None}
    if info is not None:
        recorded = info.frontier.backfill if info.frontier else None
        if spec is not None and spec != recorded:
            verb = "added to" if recorded is None else "changed on"
            raise ValidationError(f"backfill is set at creation only, and was {verb} {table.name}, "
                                  "which exists", **where,
                                  hint=f"to recreate it from the backfill, run `dt drop {table.name} --yes` "
                                       "and then `dt run`; or remove the change")
        return None
    if spec is None:
        return None
    name, path = _source_path(project, table, spec["from"], where)
    source = open_table(path)
    if source is None:
        raise ValidationError(f"backfill source {name} has no Delta table at {path}", **where,
                              hint="create it first, or fix backfill.from")
    version = _pinned_version(source, spec, name, where)
    if version != source.version():
        source.load_as_version(version)
    import json

    found = columns_from_delta_schema(json.loads(source.schema().to_json()))
    _compare(table.name, columns, name, found, where)
    return BackfillSource(name, path, version, found)


def _source_path(project: Project, table: TableDef, origin: dict[str, str], where) -> tuple[str, str]:
    if "path" in origin:
        path = origin["path"]
        return path, path if "://" in path else str((project.root / path).resolve())
    name = origin["table"]
    if name == table.name:
        raise ValidationError(f"{table.name} cannot be backfilled from itself", **where)
    if name in project.sources:
        return name, project.sources[name].path
    if name in project.tables:
        return name, project.table_path(name)
    raise ValidationError(f"backfill from '{name}': no source, seed or dynamic table has that name", **where,
                          hint=suggest(name, [*project.sources, *project.tables])
                          or "declare it under sources:, or give backfill: {from: {path: ...}}")


def _pinned_version(source: DeltaTable, spec: BackfillSpec, name: str, where: Where) -> int:
    """The version to copy: `at` a version or moment, `before` one, or the latest."""
    latest = source.version()
    if spec["version"] is not None:
        version = spec["version"] - (1 if spec["before"] else 0)
        if not 0 <= version <= latest:
            raise ValidationError(f"backfill source {name} has no version {version} (latest: {latest})", **where)
        return version
    if spec["timestamp"] is None:
        return latest
    moment = datetime.fromisoformat(spec["timestamp"]).timestamp() * 1000
    commits = [(c["version"], c["timestamp"]) for c in source.history()]
    eligible = [v for v, ts in commits if (ts < moment if spec["before"] else ts <= moment)]
    if not eligible:
        raise ValidationError(f"backfill source {name} has no version {'before' if spec['before'] else 'at'} "
                              f"{spec['timestamp']} (its first commit is later)", **where)
    return max(eligible)


def _compare(table: str, columns: tuple[Column, ...], name: str, found: tuple[Column, ...], where) -> None:
    """Same names in the same order, and types the DT's columns hold without loss."""
    if not columns:
        return      # the DT's columns are only known to Spark: it checks them when copying
    mine = [c.name.lower() for c in columns]
    theirs = [c.name.lower() for c in found]
    if mine != theirs:
        raise ValidationError(f"backfill source {name} has columns ({', '.join(c.name for c in found)}) but "
                              f"{table} has ({', '.join(c.name for c in columns)})", **where,
                              hint="the backfill source needs the same column names in the same order")
    for mine_col, their_col in zip(columns, found):
        if not holds(mine_col.type, their_col.type):
            raise ValidationError(f"backfill source {name} column {their_col.name} is {their_col.type}, which "
                                  f"{table}.{mine_col.name} ({mine_col.type}) cannot hold without loss", **where,
                                  hint="cast it in the backfill source, or widen the column in the query")
