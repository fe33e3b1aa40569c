"""What dt registered in the metastore, remembered without a JVM.

`catalog: {schema: S}` makes each DT a table `S.<name>` in a metastore; only a Spark
application can talk to the metastore, but planning must know without one whether a DT still
needs registering (it was created, moved to another schema, or its last registration failed)
or a dropped DT still needs removing. So the application records what it did as events in a
small Delta table at `<warehouse>/_dt/catalog_events` (like scheduling_events): the newest
event per DT says where it is registered, or why that failed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone

from dtcli.model import Project, join_path
from dtcli.state import storage
from dtcli.state.delta_log import open_table, read_rows

REGISTERED = "REGISTERED"          # the table S.<name> points at the DT's location
FAILED = "FAILED"                  # registering failed: the next run retries (message says why)
DROPPING = "DROPPING"              # `dt drop` deleted the DT: its table must go from the metastore
UNREGISTERED = "UNREGISTERED"      # ... and went
_FIELDS = ("name", "event", "qualified_name", "path", "message", "previous", "at")


def events_path(warehouse: str) -> str:
    return join_path(warehouse, "_dt", "catalog_events")


@dataclass(frozen=True)
class Event:
    name: str
    event: str
    qualified_name: str
    path: str | None = None
    message: str | None = None
    previous: str | None = None    # FAILED: the name it was registered under before, if any
    at: str = ""

    def to_dict(self) -> dict[str, str | None]:
        return {f: getattr(self, f) for f in _FIELDS}


def append(warehouse: str, events: list[Event]) -> None:
    if not events:
        return
    import pyarrow as pa
    from deltalake import write_deltalake

    schema = pa.schema([pa.field(f, pa.string()) for f in _FIELDS])
    stamp = datetime.now(timezone.utc).isoformat()
    rows = [{**e.to_dict(), "at": e.at or stamp} for e in events]
    path = events_path(warehouse)
    if not storage.is_remote(path):
        os.makedirs(path, exist_ok=True)
    write_deltalake(storage.uri(path), pa.Table.from_pylist(rows, schema=schema), mode="append",
                    storage_options=storage.options(path))


def current(warehouse: str) -> dict[str, Event]:
    """The newest event per DT (DTs never registered are absent)."""
    table = open_table(events_path(warehouse))
    if table is None:
        return {}
    rows = read_rows(table)
    rows.sort(key=lambda r: r["at"] or "")
    return {r["name"]: Event(**{f: r.get(f) or "" if f == "at" else r.get(f) for f in _FIELDS})
            for r in rows}


def recorded(project: Project) -> dict[str, Event]:
    """What dt recorded of earlier metastore work, for the planner: read only with `catalog:`."""
    return current(project.warehouse) if project.catalog is not None else {}


def registered_as(event: Event | None) -> str | None:
    """The qualified name under which dt's own table for a DT may still be registered: the one it
    was registered under, or (after a failed move to another name) the one it had before."""
    if event is None or event.event in (UNREGISTERED, DROPPING):
        return None
    return event.qualified_name if event.event == REGISTERED else event.previous
