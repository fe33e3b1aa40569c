"""Applying a DT's change to its Delta table in one MERGE that also carries the frontier.

The change arrives as distinct rows with a net weight. A positive weight inserts that many
copies. A negative weight must remove copies of a row that may exist several times; Delta
cannot delete "k of n identical rows", so every copy is deleted and n - k are inserted back in
the same MERGE. A weight that would leave a negative count means the change does not fit the
table (it was not computed from what the table holds): `Inconsistent`, and the caller
recomputes the table instead of guessing.
"""

from __future__ import annotations

from functools import reduce
from typing import Any

from dtcli.engine import commit
from dtcli.engine.changes import WEIGHT, quote

OP = "__dt_op"
DELETE, INSERT = "D", "I"


class Inconsistent(Exception):
    """The computed change would delete rows the DT does not hold."""


def _null_safe(left: str, right: str, cols: list[str]):
    from pyspark.sql import functions as F

    return reduce(lambda a, b: a & b,
                  [F.col(f"{left}.{quote(c)}").eqNullSafe(F.col(f"{right}.{quote(c)}"))
                   for c in cols])


def _copies(count_col):
    from pyspark.sql import functions as F

    return F.explode(F.array_repeat(F.lit(1), count_col.cast("int"))).alias("__dt_copy")


def commit_nothing(spark, path: str, frontier: dict[str, Any]) -> int:
    """Record the frontier in a commit that changes no row.

    An empty MERGE or an empty append writes no commit at all, so the frontier rides on a
    table-property update, which always commits (and carries the session's userMetadata)."""
    before = commit.last_commit(path)["version"]
    stamp = str(frontier.get("run_id") or frontier.get("data_timestamp") or before)
    location = path.replace("`", "``")
    with commit.user_metadata(spark, frontier):
        spark.sql(f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES "
                  f"('dt.last_refresh' = '{stamp.replace(chr(39), '')}')")
    version = commit.last_commit(path)["version"]
    if version == before:
        raise RuntimeError(f"could not record the frontier of {path}: no commit was written")
    return version


def apply_row_changes(spark, path: str, changes, frontier: dict[str, Any], *,
                      negatives: bool = True) -> tuple[int, int, int]:
    """`changes`: the DT's columns + WEIGHT, one row per distinct row, weights != 0, cached;
    `negatives`: whether any weight is negative (else a plain insert of the copies).

    Returns (inserted, deleted, table version)."""
    from pyspark.sql import functions as F

    cols = [c for c in changes.columns if c != WEIGHT]
    rows = [F.col(quote(c)) for c in cols]
    w = F.col(WEIGHT)
    inserts = changes.filter(w > 0).select(*rows, _copies(w)).select(*rows)
    if not negatives:       # only new rows: a blind append, far cheaper than a MERGE
        return _append(spark, path, inserts, frontier)
    sources = [inserts.select(*rows, F.lit(INSERT).alias(OP))]
    negative = changes.filter(w < 0)
    target = spark.read.format("delta").load(path)
    held = (target.alias("t").join(F.broadcast(negative.select(*rows).alias("s")),
                                   _null_safe("t", "s", cols))
            .select(*[F.col(f"t.{quote(c)}").alias(c) for c in cols])
            .groupBy(*rows).agg(F.count(F.lit(1)).alias("__dt_held")))
    counted = (negative.alias("s").join(held.alias("h"), _null_safe("s", "h", cols), "left")
               .select(*[F.col(f"s.{quote(c)}").alias(c) for c in cols],
                       (F.coalesce(F.col("h.__dt_held"), F.lit(0)) + F.col(f"s.{WEIGHT}"))
                       .alias("__dt_left"))
               .localCheckpoint(eager=True))
    try:
        lowest = counted.agg(F.min("__dt_left")).first()[0]
        if lowest is not None and lowest < 0:
            raise Inconsistent("the change deletes rows the dynamic table does not hold")
        sources.append(counted.select(*rows, F.lit(DELETE).alias(OP)))
        sources.append(counted.filter(F.col("__dt_left") > 0)
                       .select(*rows, _copies(F.col("__dt_left")))
                       .select(*rows, F.lit(INSERT).alias(OP)))
        return _merge(spark, path, reduce(lambda a, b: a.unionByName(b), sources), cols,
                      frontier)
    finally:
        counted.unpersist()


def _append(spark, path: str, rows, frontier: dict[str, Any]) -> tuple[int, int, int]:
    from dtcli.state.delta_log import frontier_metadata

    before = commit.last_commit(path)["version"]
    (rows.write.format("delta").mode("append")
     .option("userMetadata", frontier_metadata(frontier)).save(path))
    last = commit.last_commit(path)
    if last["version"] == before:
        return 0, 0, commit_nothing(spark, path, frontier)
    return int(last["metrics"].get("numOutputRows", 0)), 0, last["version"]


def _merge(spark, path: str, source, cols: list[str], frontier: dict[str, Any]
           ) -> tuple[int, int, int]:
    from delta.tables import DeltaTable

    before = commit.last_commit(path)["version"]
    condition = f"s.{OP} = '{DELETE}' AND " + " AND ".join(
        f"t.{quote(c)} <=> s.{quote(c)}" for c in cols)
    table = DeltaTable.forPath(spark, path)
    with commit.user_metadata(spark, frontier):
        (table.alias("t").merge(source.alias("s"), condition)
         .whenMatchedDelete()
         .whenNotMatchedInsert(condition=f"s.{OP} = '{INSERT}'",
                               values={quote(c): f"s.{quote(c)}" for c in cols})
         .execute())
    last = commit.last_commit(path)
    if last["version"] == before:      # nothing was written: record the frontier anyway
        return 0, 0, commit_nothing(spark, path, frontier)
    metrics = last["metrics"]
    return (int(metrics.get("numTargetRowsInserted", 0)),
            int(metrics.get("numTargetRowsDeleted", 0)), last["version"])
