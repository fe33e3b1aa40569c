"""The refresh history: an append-only Delta table at `<warehouse>/_dt/refresh_history`.

Written through `deltalake` both by the CLI (NO_DATA entries, no JVM) and by the spark-submit
driver (one append per finished refresh), so one schema and one writer live here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from dtcli.model import RefreshRecord, join_path
from dtcli.redact import scrub
from dtcli.state import storage
from dtcli.state.delta_log import open_table, read_rows

_JSON_FIELDS = ("inputs_with_changed_data", "source_versions", "data_tests")
_INT_FIELDS = ("num_inserted_rows", "num_deleted_rows", "num_copied_rows", "num_updated_rows", "table_version",
               "change_rows", "input_rows", "target_lag_sec")
# counts read back as 0 when absent; the other integers (added later, or not known) as None
_COUNTS = ("num_inserted_rows", "num_deleted_rows", "num_copied_rows", "num_updated_rows")


def history_path(warehouse: str) -> str:
    return join_path(warehouse, "_dt", "refresh_history")


def _schema():
    import pyarrow as pa

    fields = []
    for name in RefreshRecord.__annotations__:
        if name in _INT_FIELDS:
            fields.append(pa.field(name, pa.int64()))
        else:
            fields.append(pa.field(name, pa.string()))
    return pa.schema(fields)


def append(warehouse: str, records: list[RefreshRecord]) -> None:
    if not records:
        return
    import pyarrow as pa
    from deltalake import write_deltalake

    schema = _schema()
    rows = []
    for record in records:
        row = {k: (scrub(v) if isinstance(v, str) else v) for k, v in record.to_dict().items()}
        for key in _JSON_FIELDS:
            row[key] = scrub(json.dumps(row[key], sort_keys=True, default=str))
        rows.append(row)
    table = pa.Table.from_pylist(rows, schema=schema)
    path = history_path(warehouse)
    if not storage.is_remote(path):
        import os

        os.makedirs(path, exist_ok=True)
    # merge: a history written before a field existed gains the column (older rows: null)
    write_deltalake(storage.uri(path), table, mode="append", schema_mode="merge",
                    storage_options=storage.options(path))
    _compact_now_and_then(path)


COMPACT_EVERY = 50   # commits; each append adds a small file, and reads slow down with many


def _compact_now_and_then(path: str) -> None:
    table = open_table(path)
    if table is not None and table.version() > 0 and table.version() % COMPACT_EVERY == 0:
        table.optimize.compact()


def read(warehouse: str, name: str | None = None, limit: int | None = None,
         since: str | None = None) -> list[RefreshRecord]:
    """History entries, newest first; `since` (an ISO time): only those that ended then or later,
    read from the files whose statistics say they hold some."""
    table = open_table(history_path(warehouse))
    if table is None:
        return []
    rows = read_rows(table, f"refresh_end_time >= '{since.replace(chr(39), '')}'" if since else None)
    if name:
        rows = [r for r in rows if r["name"] == name]
    rows.sort(key=lambda r: (r["refresh_end_time"] or "", r["refresh_start_time"] or ""), reverse=True)
    if limit is not None:
        rows = rows[:limit]
    return [_record(r) for r in rows]


# How far back `read_recent` looks, widening until every DT asked about has an entry.
RECENT_WINDOWS = (3600, 86400, 7 * 86400)


def read_recent(warehouse: str, names: Iterable[str], now: datetime,
                windows: tuple[int, ...] = RECENT_WINDOWS) -> tuple[list[RefreshRecord], str | None]:
    """The entries of the last hour, newest first, or of a longer window (a day, a week, then
    all) when one of `names` has none in it: each DT's newest entry is then among them, without
    reading a history that a long `--watch` grows by thousands of rows an hour. Measured on a
    day of a 22-DT watch (76,032 rows, a pass every 25 s): 0.4-0.5 s for the last hour against
    9.0 s for the whole history (2 cores at load 25; the filter runs in deltalake's engine, so
    the rows outside the window never become Python objects). Returns the entries and the start
    of the window read (None: the whole history)."""
    wanted = set(names)
    for seconds in windows:
        since = (now - timedelta(seconds=seconds)).isoformat()
        rows = read(warehouse, since=since)
        if wanted <= {r.name for r in rows}:
            return rows, since
    return read(warehouse), None


def _record(row: dict[str, Any]) -> RefreshRecord:
    out = dict(row)
    for key in _JSON_FIELDS:
        empty = {"inputs_with_changed_data": [], "source_versions": {}}.get(key)
        out[key] = json.loads(row[key]) if row.get(key) else empty
    for key in _COUNTS:
        out[key] = int(out.get(key) or 0)
    return RefreshRecord.from_dict(out)


def latest_per_table(rows: list[RefreshRecord]) -> dict[str, RefreshRecord]:
    """The newest entry per table, from rows sorted newest first."""
    latest: dict[str, RefreshRecord] = {}
    for row in rows:
        latest.setdefault(row.name, row)
    return latest
