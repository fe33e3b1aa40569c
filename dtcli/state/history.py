"""The refresh history: an append-only Delta table at `<warehouse>/_dt/refresh_history`.

Written through `deltalake` both by the CLI (NO_DATA entries, no JVM) and by the spark-submit
driver (one append per finished refresh), always through state/ledger.py; read here, with the one
schema both sides share.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timedelta

from dtcli.model import RefreshRecord, join_path
from dtcli.state.delta_log import Row, open_table, query_rows, read_rows

JSON_FIELDS = ("inputs_with_changed_data", "source_versions", "data_tests")
_INT_FIELDS = ("num_inserted_rows", "num_deleted_rows", "num_copied_rows", "num_updated_rows", "table_version",
               "change_rows", "input_rows", "target_lag_sec")
# counts read back as 0 when absent; the other integers (added later, or not known) as None
_COUNTS = ("num_inserted_rows", "num_deleted_rows", "num_copied_rows", "num_updated_rows")


def history_path(warehouse: str) -> str:
    return join_path(warehouse, "_dt", "refresh_history")


def record_schema():
    import pyarrow as pa

    fields = []
    for name in RefreshRecord.__annotations__:
        if name in _INT_FIELDS:
            fields.append(pa.field(name, pa.int64()))
        else:
            fields.append(pa.field(name, pa.string()))
    return pa.schema(fields)


COMPACT_EVERY = 50   # commits; each append adds a small file, and reads slow down with many


def compact_now_and_then(path: str) -> None:
    """Compact dt's own append-only table now and then (history, test results)."""
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


# What a pass reads of each DT's history (see `recent`): its newest rows, and the newest of each
# kind ADAPTIVE learns from (planning/adaptive.py's SAMPLES, with room to spare).
NEWEST_PER_TABLE = 20
SAMPLES_PER_KIND = 16
# rows of a DT that never succeeded (its failure streak: auto-suspension needs five)
NEVER_SUCCEEDED_ROWS = 100


def recent(warehouse: str, run_ids: list[str] | tuple[str, ...] = (), since: str | None = None
           ) -> list[RefreshRecord]:
    """The history rows a pass of `dt run` (planning, auto-suspension, reconciliation) and an
    explain need, newest first; `read` gives every row.

    Per DT: its newest rows; the newest successful INCREMENTAL and recomputing refreshes with
    their sizes (what ADAPTIVE's cost model learns from); the newest successful refreshes that
    did work (what refresh_times measures the scheduler's periods from); every row since its newest success
    (a failure streak), or the newest hundred when it never succeeded; the row of its newest table
    version and of its newest data timestamp. Plus the rows of `run_ids` (runs whose folders are
    not marked recorded: reconciliation looks them up) and every row ending at or after `since`.
    Chosen by deltalake's query engine, so only those rows become Python objects: the whole
    history of 22 DTs refreshed each minute for a day and a half (82,000 rows) took 30 s to read
    and convert on the loaded 2-core machine, most of it building the records."""
    from deltalake.exceptions import DeltaError

    table = open_table(history_path(warehouse))
    if table is None:
        return []
    try:
        rows = query_rows(table, _recent_sql(run_ids, since))
    except DeltaError:      # a history written before a column this query names existed
        return read(warehouse)
    for row in rows:
        for key in [k for k in row if k.startswith("__dt_")]:
            del row[key]
    rows.sort(key=lambda r: (r["refresh_end_time"] or "", r["refresh_start_time"] or ""), reverse=True)
    return [_record(r) for r in rows]


def _recent_sql(run_ids, since: str | None) -> str:
    def text(value: str) -> str:
        return "'" + str(value).replace("'", "''") + "'"

    done = "state = 'SUCCEEDED'"
    incremental = f"({done} AND refresh_action = 'INCREMENTAL' AND change_rows IS NOT NULL)"
    recompute = (f"({done} AND (refresh_action IN ('FULL', 'REINITIALIZE') OR refresh_trigger = 'CREATION')"
                 " AND input_rows IS NOT NULL)")
    worked = f"({done} AND refresh_action <> 'NO_DATA')"     # planning/refresh_times.py's samples
    newest = "coalesce(refresh_end_time, '') DESC, coalesce(refresh_start_time, '') DESC"
    wanted = [f"__dt_newest <= {NEWEST_PER_TABLE}",
              f"({worked} AND __dt_worked <= {SAMPLES_PER_KIND})",
              f"({incremental} AND __dt_incremental <= {SAMPLES_PER_KIND})",
              f"({recompute} AND __dt_recompute <= {SAMPLES_PER_KIND})",
              "coalesce(refresh_end_time, '') >= __dt_last_success",
              f"(__dt_last_success IS NULL AND __dt_newest <= {NEVER_SUCCEEDED_ROWS})",
              "table_version = __dt_top_version",
              f"({done} AND data_timestamp = __dt_top_stamp)"]
    if run_ids:
        wanted.append(f"run_id IN ({', '.join(text(r) for r in run_ids)})")
    if since:
        wanted.append(f"refresh_end_time >= {text(since)}")
    return f"""
        SELECT * FROM (
          SELECT *,
            row_number() OVER (PARTITION BY name ORDER BY {newest}) AS __dt_newest,
            row_number() OVER (PARTITION BY name, {incremental} ORDER BY {newest}) AS __dt_incremental,
            row_number() OVER (PARTITION BY name, {recompute} ORDER BY {newest}) AS __dt_recompute,
            row_number() OVER (PARTITION BY name, {worked} ORDER BY {newest}) AS __dt_worked,
            max(CASE WHEN {done} THEN refresh_end_time END) OVER (PARTITION BY name) AS __dt_last_success,
            max(table_version) OVER (PARTITION BY name) AS __dt_top_version,
            max(CASE WHEN {done} THEN data_timestamp END) OVER (PARTITION BY name) AS __dt_top_stamp
          FROM t) AS ranked
        WHERE {' OR '.join(wanted)}"""


# How many of a DT's newest audited refreshes `audited` reads: every refresh evaluates all of
# its DT's checks, so the newest one has each check's result; a few more cover a check a
# refresh could not evaluate (its table did not exist yet: skipped).
AUDITED_PER_TABLE = 5


def audited(warehouse: str, newest: int = AUDITED_PER_TABLE) -> list[RefreshRecord]:
    """Each DT's newest refreshes that carry data test results, newest first (`dt show
    test-results`); only those rows become Python objects, however long the history."""
    table = open_table(history_path(warehouse))
    if table is None:
        return []
    carries = "data_tests IS NOT NULL AND data_tests NOT IN ('null', '[]')"
    sql = f"""
        SELECT * FROM (
          SELECT *, row_number() OVER (PARTITION BY name ORDER BY coalesce(refresh_end_time, '') DESC,
                                       coalesce(refresh_start_time, '') DESC) AS __dt_newest
          FROM t WHERE {carries}) AS ranked
        WHERE __dt_newest <= {int(newest)}"""
    from deltalake.exceptions import DeltaError

    try:
        rows = query_rows(table, sql)
    except DeltaError:      # a history written before data tests existed has no such column
        return []
    for row in rows:
        row.pop("__dt_newest", None)
    rows.sort(key=lambda r: (r["refresh_end_time"] or "", r["refresh_start_time"] or ""), reverse=True)
    return [_record(r) for r in rows]


def _record(row: Row) -> RefreshRecord:
    out = dict(row)
    for key in JSON_FIELDS:
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
