"""What `dt test` (and `dt build`'s test phases) found: `<warehouse>/_dt/test_results`.

A refresh's checks are recorded with the refresh, in the refresh history; `dt test` refreshes
nothing, and its results otherwise live only in target/run_results.json, which the next
command replaces. So each finished `dt test` appends one row per test here, through
`deltalake` (no JVM), one commit per command: `dt show test-results` reads the last result of
each test from here and from the history, whichever is newer. Kept apart from the refresh
history because a test run is no refresh: it must not count toward auto-suspension, move a
DT's measured refresh times or show in `dt show refresh-history`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import TypedDict

from dtcli.data_tests import CheckResultDict
from dtcli.model import RefreshRecord, join_path
from dtcli.redact import scrub
from dtcli.state import storage
from dtcli.state.delta_log import open_table, query_rows

_FIELDS = ("table_name", "unique_id", "name", "kind", "test", "column", "status", "failures", "message",
           "action", "samples", "run_id", "command", "tested_at")


class StoredResult(TypedDict):
    """One row of `_dt/test_results` (its columns: _FIELDS)."""

    table_name: str
    unique_id: str | None
    name: str | None
    kind: str | None
    test: str | None
    column: str | None
    status: str | None
    failures: int
    message: str | None
    action: str | None
    samples: str              # JSON text of the sampled rows
    run_id: str
    command: str
    tested_at: str | None


class TestedResult(CheckResultDict, total=False):
    """The newest result of one test as `latest` reads it back: a `CheckResultDict` (with
    `table`, and its samples parsed) plus who found it and when."""

    run_id: str
    command: str
    tested_at: str | None


def results_path(warehouse: str) -> str:
    return join_path(warehouse, "_dt", "test_results")


def rows_of(records: Iterable[RefreshRecord], command: str) -> list[StoredResult]:
    """One row per test result of `dt test`'s records (one record per table tested)."""
    rows = []
    for record in records:
        for result in record.data_tests or ():
            rows.append(StoredResult(
                table_name=result.get("table") or record.name, unique_id=result.get("unique_id"),
                name=result.get("name"), kind=result.get("kind"), test=result.get("test"),
                column=result.get("column"), status=result.get("status"),
                failures=int(result.get("failures") or 0), message=result.get("message"),
                action=result.get("action"),
                samples=json.dumps(result.get("samples") or [], sort_keys=True, default=str),
                run_id=record.run_id, command=command,
                tested_at=record.refresh_end_time or record.refresh_start_time))
    return rows


def append(warehouse: str, rows: list[StoredResult]) -> None:
    if not rows:
        return
    import pyarrow as pa
    from deltalake import write_deltalake

    from dtcli.state.history import compact_now_and_then

    schema = pa.schema([pa.field(f, pa.int64() if f == "failures" else pa.string()) for f in _FIELDS])
    clean = [{k: (scrub(v) if isinstance(v, str) else v) for k, v in row.items()} for row in rows]
    path = results_path(warehouse)
    if not storage.is_remote(path):
        os.makedirs(path, exist_ok=True)
    write_deltalake(storage.uri(path), pa.Table.from_pylist(clean, schema=schema), mode="append",
                    storage_options=storage.options(path))
    compact_now_and_then(path)


def latest(warehouse: str) -> list[TestedResult]:
    """The newest row of each test of each table, as CheckResult-shaped dicts plus `run_id`,
    `command` and `tested_at`."""
    table = open_table(results_path(warehouse))
    if table is None:
        return []
    rows = query_rows(table, """
        SELECT * FROM (
          SELECT *, row_number() OVER (PARTITION BY table_name, unique_id ORDER BY tested_at DESC) AS __dt_newest
          FROM t) AS ranked
        WHERE __dt_newest = 1""")
    out = []
    for row in rows:
        row.pop("__dt_newest", None)
        row["table"] = row.pop("table_name")
        row["samples"] = json.loads(row["samples"]) if row.get("samples") else []
        out.append(row)
    return out
