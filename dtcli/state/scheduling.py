"""Scheduling state (ACTIVE / SUSPENDED, and when an `on_schedule` DT was registered).

Kept as an append-only event log, a small Delta table at `<warehouse>/_dt/scheduling_events`
written through `deltalake`: suspend/resume never need a JVM, each event is one atomic commit
(a crash leaves the previous state), and the log doubles as an audit trail of who suspended
what and why. The current state is the newest SUSPENDED/RESUMED event per DT.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone

from dtcli.model import join_path
from dtcli.state import storage
from dtcli.state.delta_log import Row, open_table, read_rows

ACTIVE, SUSPENDED = "ACTIVE", "SUSPENDED"
REGISTERED, RESUMED = "REGISTERED", "RESUMED"   # event kinds besides SUSPENDED
_FIELDS = ("name", "event", "reason", "cause", "at")


def events_path(warehouse: str) -> str:
    return join_path(warehouse, "_dt", "scheduling_events")


@dataclass(frozen=True)
class Event:
    name: str
    event: str                 # REGISTERED | SUSPENDED | RESUMED
    reason: str | None = None
    cause: str | None = None   # the DT whose suspension (or failures) caused this one
    at: str = ""

    def to_dict(self) -> dict[str, str | None]:
        return {f: getattr(self, f) for f in _FIELDS}


@dataclass(frozen=True)
class TableState:
    state: str = ACTIVE
    reason: str | None = None
    cause: str | None = None
    since: str | None = None          # time of the event that set the state
    registered_on: str | None = None  # first registration of an `on_schedule` DT not yet created


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def append(warehouse: str, events: list[Event]) -> None:
    if not events:
        return
    import pyarrow as pa
    from deltalake import write_deltalake

    schema = pa.schema([pa.field(f, pa.string()) for f in _FIELDS])
    rows = [{**e.to_dict(), "at": e.at or now_iso()} for e in events]
    path = events_path(warehouse)
    if not storage.is_remote(path):
        os.makedirs(path, exist_ok=True)
    write_deltalake(storage.uri(path), pa.Table.from_pylist(rows, schema=schema), mode="append",
                    storage_options=storage.options(path))


def register(warehouse: str, names: list[str], at: str) -> None:
    """Remember when `on_schedule` DTs were first seen (`at`: on the run's clock): they are
    created at the first tick after that."""
    append(warehouse, [Event(n, REGISTERED, at=at) for n in names])


def read_events(warehouse: str) -> list[Row]:
    """All events, oldest first."""
    table = open_table(events_path(warehouse))
    if table is None:
        return []
    rows = read_rows(table)
    rows.sort(key=lambda r: r["at"] or "")
    return rows


def current(warehouse: str, events: list[Row] | None = None) -> dict[str, TableState]:
    """Each DT's state from the log (DTs without events are ACTIVE and absent here)."""
    states: dict[str, TableState] = {}
    for row in read_events(warehouse) if events is None else events:
        old = states.get(row["name"], TableState())
        if row["event"] == REGISTERED:
            states[row["name"]] = TableState(old.state, old.reason, old.cause, old.since,
                                             old.registered_on or row["at"])
        elif row["event"] in (SUSPENDED, RESUMED):
            state = SUSPENDED if row["event"] == SUSPENDED else ACTIVE
            reason = row["reason"] if state == SUSPENDED else None
            cause = row["cause"] if state == SUSPENDED else None
            states[row["name"]] = TableState(state, reason, cause, row["at"], old.registered_on)
    return states


def last_suspended(events: list[Row]) -> dict[str, str]:
    """When each DT was itself last suspended (by `dt suspend` or after repeated failures)."""
    out: dict[str, str] = {}
    for row in events:
        if row["event"] == SUSPENDED:
            out[row["name"]] = row["at"]
    return out


def resumed_at(events: list[Row]) -> dict[str, str]:
    """The newest RESUMED time per DT: failures before it no longer count toward auto-suspension."""
    out: dict[str, str] = {}
    for row in events:
        if row["event"] == RESUMED:
            out[row["name"]] = row["at"]
    return out


def forget(warehouse: str, name: str) -> None:
    """Delete every event of a dropped DT (so a new DT of that name starts clean)."""
    table = open_table(events_path(warehouse))
    if table is not None:
        table.delete(f"name = '{_quote(name)}'")


def _quote(value: str) -> str:
    return value.replace("'", "''")
