"""A small table's commit written on the driver (state/driver_commit.py) instead of through Spark.

The commits a small incremental refresh makes hold few rows the driver has already, or can have
in one job: the DT's one row over its running totals, the groups of a kept aggregate it adjusted,
a slice of a small table's rows replaced, a commit recording only the frontier. Through Spark
each costs a write's planning, a job, Delta's transaction and Hadoop's processes, 0.6-1 s on two
cores; written here, a few milliseconds. The commit is the one Spark's
would be: the table's rows outside the slice as they were, the new ones, every old file removed
(as slice_commit.py does), and, with the change data feed on, a change data file holding the
slice's old rows as `delete` and its new ones as `insert`, so that the feed is the change itself.

Only where that is exactly right, else the caller commits through Spark as before (`None`): the
setting `spark.dt.driverCommits` on (the default), no data test auditing the refresh (the audit
reads the rows as Spark writes them), a table listed over its files (slice_commit.Target: at
most `spark.dt.wholeWriteBytes`, still at the version listed) whose files carry no deletion
vector, which state/driver_commit.writable accepts (local, not partitioned, plain columns, no
feature a writer must act on, not at a checkpoint version), at most MAX_ROWS rows, and every row
the slice replaces found among the table's (else the table is not what the caller read).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import Counter
from dataclasses import dataclass
from urllib.parse import unquote

from dtcli import __version__
from dtcli.engine.runtime import audit
from dtcli.engine.runtime.spark_errors import SPARK_ERRORS
from dtcli.model import Frontier
from dtcli.state import driver_commit
from dtcli.state.delta_log import frontier_metadata

SETTING = "spark.dt.driverCommits"
MAX_ROWS = 20_000       # the most rows a table written here holds, before and after
ENGINE_INFO = f"dt/{__version__} (driver commit)"
RECORD_FRONTIER = "DT RECORD FRONTIER"      # the history's operation of a frontier-only commit


def enabled(spark) -> bool:
    """Whether this refresh may commit on the driver: the setting on and no data test auditing it."""
    try:
        on = str(spark.conf.get(SETTING, "true")).strip().lower() != "false"
    except SPARK_ERRORS:
        on = True
    return on and audit.idle()


def frontier_only(spark, path: str, frontier: Frontier) -> int | None:
    """A commit of the table at `path` changing no row, carrying the frontier: its version, or
    None when it cannot be written here."""
    if not enabled(spark):
        return None
    table = driver_commit.writable(path)
    if table is None:
        return None
    version = table.version + 1
    info = {"operation": RECORD_FRONTIER, "operationParameters": {}, "readVersion": table.version,
            "isolationLevel": "Serializable", "isBlindAppend": True,
            "userMetadata": frontier_metadata(frontier), "engineInfo": ENGINE_INFO}
    return version if driver_commit.commit(table.root, version, [], info) else None


@dataclass(frozen=True)
class Prepared:
    """A table about to be committed on the driver: its files' remove actions and its rows."""

    table: driver_commit.Writable
    removes: list[dict]
    rows: list[tuple]       # as pyarrow reads them, in the table's column order


def prepare(spark, path: str, at) -> Prepared | None:
    """The table at `path` ready for a commit on the driver (`at`: as slice_commit.target listed
    it), or None when it cannot have one (see the module docstring)."""
    if at is None or not enabled(spark):
        return None
    table = driver_commit.writable(path)
    if table is None or table.version != at.version:
        return None
    removes, paths = _removes(at)
    if removes is None:
        return None
    rows = _old_rows(table, paths)
    return Prepared(table, removes, rows) if rows is not None else None


def collect(df) -> list[tuple] | None:
    """`df`'s rows as tuples when there are at most MAX_ROWS, collected in one job; else None."""
    from dtcli.engine.runtime.materialize import static_plan

    with static_plan(df.sparkSession):
        found = df.limit(MAX_ROWS + 1).collect()
    return [tuple(r) for r in found] if len(found) <= MAX_ROWS else None


def commit_rows(ready: Prepared, predicate: str, deleted: list[tuple] | None, inserted: list[tuple],
                frontier: Frontier) -> tuple[int, int, int, int] | None:
    """The rows `deleted` of the table (None: all of them) replaced by `inserted` in one commit
    carrying the frontier (rows as Spark collects them, in the table's column order;
    `predicate`: the slice, for the history): (rows written, rows removed, the new version, rows
    kept), or None with nothing committed (too many rows, a deleted row not in the table, a
    value that does not fit its column, another writer first)."""
    import pyarrow as pa

    table, old = ready.table, ready.rows
    if len(inserted) > MAX_ROWS:
        return None
    kept = _without(old, deleted) if deleted is not None else []
    if kept is None:
        return None
    removed = len(old) if deleted is None else len(deleted)
    try:
        new = _arrow(table.schema, kept + list(inserted))
        change = _change(table, old if deleted is None else deleted, inserted) if table.cdf else None
    except (ValueError, TypeError, OverflowError, ArithmeticError, pa.ArrowException):
        return None
    actions = []
    if new.num_rows:
        actions.append({"add": driver_commit.write_file(table.root, new)})
    if change is not None and change.num_rows:
        actions.append({"cdc": driver_commit.write_file(table.root, change, change=True)})
    actions.extend(ready.removes)
    info = {"operation": "WRITE",
            "operationParameters": {"mode": "Overwrite", "predicate": json.dumps([predicate])},
            "readVersion": table.version, "isolationLevel": "Serializable", "isBlindAppend": False,
            "operationMetrics": {"numFiles": str(1 if new.num_rows else 0), "numOutputRows": str(new.num_rows),
                                 "numRemovedFiles": str(len(ready.removes)), "numDeletedRows": str(removed),
                                 "numCopiedRows": str(len(kept))},
            "userMetadata": frontier_metadata(frontier), "engineInfo": ENGINE_INFO}
    version = table.version + 1
    if not driver_commit.commit(table.root, version, actions, info):
        return None
    return len(inserted), removed, version, len(kept)


def replace_all(spark, path: str, at, rows, frontier: Frontier) -> tuple[int, int, int, int] | None:
    """Every row of the table replaced by the rows of `rows` (a small DataFrame), committed on
    the driver: as `commit_rows`, None with nothing committed (or collected) when it cannot be."""
    from dtcli.engine.runtime.changes import quote

    ready = prepare(spark, path, at)
    if ready is None or list(ready.table.schema.names) != list(at.old.columns):
        return None
    new = collect(rows.select(*[quote(c) for c in at.old.columns]))
    return commit_rows(ready, "true", None, new, frontier) if new is not None else None


def replace_where(spark, path: str, at, predicate: str, rows, frontier: Frontier
                  ) -> tuple[int, int, int, int] | None:
    """The table's rows matching `predicate` replaced by `rows` (a small DataFrame whose rows all
    match it), committed on the driver: the new rows and the old ones the predicate selects
    collected in one job, the rest of the table kept as its files hold it. As `commit_rows`;
    None with nothing committed when it cannot be (a new row outside the predicate included:
    the caller's commit through Spark then fails as it should)."""
    from pyspark.sql import functions as F

    from dtcli.engine.runtime.changes import quote

    ready = prepare(spark, path, at)
    if ready is None or list(ready.table.schema.names) != list(at.old.columns):
        return None
    cols = [quote(c) for c in at.old.columns]
    inside = F.coalesce(F.expr(f"({predicate})"), F.lit(False))
    both = rows.select(*cols, F.lit(True).alias("__dt_new"), inside.alias("__dt_inside")) \
        .unionByName(at.old.filter(inside).select(*cols, F.lit(False).alias("__dt_new"),
                                                  F.lit(True).alias("__dt_inside")))
    found = collect(both)
    if found is None or not all(r[-1] for r in found):
        return None
    new = [r[:-2] for r in found if r[-2]]
    old = [r[:-2] for r in found if not r[-2]]
    return commit_rows(ready, predicate, old, new, frontier)


def _removes(at) -> tuple[list[dict] | None, list[str]]:
    """The `remove` actions of every file of `at` (Delta's own, from its AddFiles) and the files'
    paths; None when a file has a deletion vector (its rows are not the file's)."""
    removes, paths = [], []
    stamp = int(time.time() * 1000)
    try:
        files = at.files.iterator()
        while files.hasNext():
            f = files.next()
            if f.deletionVector() is not None:
                return None, []
            removes.append(json.loads(f.removeWithTimestamp(stamp, True).json()))
            paths.append(str(f.path()))
    except (AttributeError, ValueError, *SPARK_ERRORS):
        return None, []
    return removes, paths


def _old_rows(table: driver_commit.Writable, paths: list[str]) -> list[tuple] | None:
    """The rows of the table's files, in its column order; None past MAX_ROWS or unreadable."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows: list[tuple] = []
    names = table.schema.names
    for relative in paths:
        relative = unquote(relative)
        if ":" in relative or os.path.isabs(relative):     # a file outside the table's directory
            return None
        full = os.path.join(table.root, relative)
        try:
            parquet = pq.ParquetFile(full)
            if len(rows) + parquet.metadata.num_rows > MAX_ROWS or \
                    any(n not in parquet.schema_arrow.names for n in names):
                return None
            data = parquet.read(columns=names)
            columns = [data.column(n).cast(f.type).to_pylist() for n, f in zip(names, table.schema)]
        except (OSError, pa.ArrowException):
            return None
        rows.extend(zip(*columns) if names else [()] * data.num_rows)
    return rows


def _key(row: tuple) -> tuple:
    """A row as a multiset key: NaN equal to NaN (Spark groups NaNs together)."""
    return tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row)


def _without(rows: list[tuple], deleted: list[tuple]) -> list[tuple] | None:
    """`rows` less one copy of each of `deleted`; None when one of those is not among them."""
    gone = Counter(_key(r) for r in deleted)
    kept = []
    for row in rows:
        key = _key(row)
        if gone.get(key):
            gone[key] -= 1
        else:
            kept.append(row)
    return None if any(gone.values()) else kept


def _arrow(schema, rows: list[tuple]):
    import pyarrow as pa

    columns = list(zip(*rows)) if rows else [[] for _ in schema]
    return pa.Table.from_arrays([pa.array(list(c), type=f.type) for c, f in zip(columns, schema)], schema=schema)


def _change(table: driver_commit.Writable, deleted: list[tuple], inserted: list[tuple]):
    """The change data file's rows: `deleted` as deletes, `inserted` as inserts."""
    import pyarrow as pa

    rows = _arrow(table.schema, list(deleted) + list(inserted))
    kinds = pa.array(["delete"] * len(deleted) + ["insert"] * len(inserted), type=pa.string())
    return rows.append_column(pa.field(driver_commit.CHANGE_TYPE, pa.string()), kinds)
