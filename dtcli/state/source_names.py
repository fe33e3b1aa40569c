"""Where sources declared by table name point, remembered without a JVM.

A source may be declared as `table: raw.orders` instead of a path. Only a Spark application can
ask the metastore where that table lives, but planning reads Delta logs by path and must stay
JVM-free; so the application records each name's location and Delta table id as events in a
small Delta table at `<warehouse>/_dt/source_names` (as catalog_events does for DTs), and
planning takes the newest event per name. A name whose location no longer holds a Delta table is
asked again by the next run; a table id that differs from the one a DT last refreshed from means
the name was given to another table, and that DT is reinitialized.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone

from dtcli.model import join_path
from dtcli.state import storage
from dtcli.state.delta_log import open_table, read_rows

_FIELDS = ("table", "location", "table_id", "message", "at")


def events_path(warehouse: str) -> str:
    return join_path(warehouse, "_dt", "source_names")


@dataclass(frozen=True)
class Resolution:
    table: str                      # the qualified name as declared, lower case
    location: str | None = None     # None: the name did not resolve (message says why)
    table_id: str | None = None     # the Delta table id found there
    message: str | None = None
    at: str = ""

    def to_dict(self) -> dict[str, str | None]:
        return {f: getattr(self, f) for f in _FIELDS}


def append(warehouse: str, resolutions: list[Resolution]) -> None:
    if not resolutions:
        return
    import pyarrow as pa
    from deltalake import write_deltalake

    schema = pa.schema([pa.field(f, pa.string()) for f in _FIELDS])
    stamp = datetime.now(timezone.utc).isoformat()
    rows = [{**r.to_dict(), "at": r.at or stamp} for r in resolutions]
    path = events_path(warehouse)
    if not storage.is_remote(path):
        os.makedirs(path, exist_ok=True)
    write_deltalake(storage.uri(path), pa.Table.from_pylist(rows, schema=schema), mode="append",
                    storage_options=storage.options(path))


def current(warehouse: str) -> dict[str, Resolution]:
    """The newest resolution per table name (names never asked are absent)."""
    path = events_path(warehouse)
    if not storage.is_remote(path) and not os.path.isdir(path):
        return {}       # the common case, without deltalake's cost of finding nothing
    table = open_table(path)
    if table is None:
        return {}
    rows = sorted(read_rows(table), key=lambda r: r["at"] or "")
    return {r["table"]: Resolution(**{f: r.get(f) for f in _FIELDS}) for r in rows}
