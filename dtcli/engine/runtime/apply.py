"""Applying a DT's change to its Delta table in one commit that also carries the frontier.

The change arrives as distinct rows with a net weight. A positive weight inserts that many
copies. A negative weight must remove copies of a row that may exist several times; Delta
cannot delete "k of n identical rows", so every copy is deleted and n - k are inserted back in
the same commit. A weight that would leave a negative count means the change does not fit the
table (it was not computed from what the table holds): `Inconsistent`, and the caller
recomputes the table instead of guessing.

The commit is, from cheapest to most general:
* an append, when the change only adds rows;
* a `replaceWhere` over a *locator* column: the changed rows' values of one column, as
  literals, select the slice of the table to rewrite; the slice is read, the change added to it,
  and the result replaces it. With deletion vectors on (dt's default) Delta marks the slice's
  old rows deleted and writes only the new slice: the cost follows the change, not the table.
  A small table is written whole instead, in a commit dt builds from its list of files, with the
  same change data (slice_commit.py): one Spark job against Delta's twelve;
* a MERGE matching whole rows null-safely, when no column narrows the change to few values.
"""

from __future__ import annotations

from functools import reduce
from typing import NamedTuple

from dtcli.engine.runtime import audit, commit, driver_write, key_predicates, listed, slice_commit
from dtcli.engine.runtime.changes import WEIGHT, quote
from dtcli.engine.runtime.checkpoints import release
from dtcli.model import Frontier

OP = "__dt_op"
DELETE, INSERT = "D", "I"


# How a change was applied (the history's `refresh_strategy`).
APPENDED, SLICE_REPLACED, MERGED = "rows_appended", "slice_replaced", "rows_merged"


class Applied(NamedTuple):
    inserted: int
    deleted: int
    version: int          # the DT's version after the commit
    copied: int = 0       # unchanged rows written again
    how: str | None = None
    # the commit's change, when known on the driver: (the version before it, fields: the
    # table's columns then WEIGHT, rows with their weights), for ChangeCache.seed to net
    change: tuple[int, list, list[tuple]] | None = None


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


def commit_nothing(spark, path: str, frontier: Frontier) -> int:
    """Record the frontier in a commit that changes no row.

    An empty MERGE or an empty append writes no commit at all, so the frontier rides on a
    table-property update, which always commits (and carries the session's userMetadata);
    a table driver_write can commit gets a commit of no action instead, written on the driver."""
    done = driver_write.frontier_only(spark, path, frontier)
    if done is not None:
        return done
    before = commit.last_commit(path)["version"]
    stamp = str(frontier.run_id or frontier.data_timestamp or before)
    location = path.replace("`", "``")
    with commit.user_metadata(spark, frontier):
        spark.sql(f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES "
                  f"('dt.last_refresh' = '{stamp.replace(chr(39), '')}')")
    version = commit.last_commit(path)["version"]
    if version == before:
        raise RuntimeError(f"could not record the frontier of {path}: no commit was written")
    return version


def apply_row_changes(spark, path: str, changes, frontier: Frontier, *,
                      local: list | None = None, region: str | None = None,
                      prefer: str | None = None, whole=None) -> Applied:
    """`changes`: the DT's columns + WEIGHT, one row per distinct row, weights != 0, cached;
    `local`: the same rows collected on the driver, when they are few (else None);
    `region`: a predicate every changed row satisfies (the active region of a DT with a frozen
    region), added to every read of the table so its statistics skip the rest;
    `prefer`: the column the DT's rows are written in order of (its slice is the cheapest read);
    `whole`: how a change that deletes rows is written as the whole table anew
    (rewrite.changes_whole, for a small DT), or None."""
    with audit.change(spark, path, changes, local) as (changes, local):
        return _apply_row_changes(spark, path, changes, frontier, local, region, prefer, whole)


def _apply_row_changes(spark, path: str, changes, frontier: Frontier, local: list | None,
                       region: str | None, prefer: str | None, whole) -> Applied:
    from pyspark.sql import functions as F

    cols = [c for c in changes.columns if c != WEIGHT]
    rows = [F.col(quote(c)) for c in cols]
    w = F.col(WEIGHT)
    if local is not None:
        negatives = any(r[WEIGHT] < 0 for r in local)
    else:
        negatives = changes.filter(w < 0).limit(1).count() > 0
    inserts = changes.filter(w > 0).select(*rows, _copies(w)).select(*rows)
    if not negatives:       # only new rows: a blind append, far cheaper than a MERGE
        return _append(spark, path, inserts, frontier)._replace(how=APPENDED)
    if whole is not None:
        return whole(spark, path, changes, cols, frontier, local)
    located = _locate(changes, cols, local, prefer)
    if located is not None:
        predicate, inserted, deleted = located
        if region:
            predicate = f"({predicate}) AND ({region})"
        return _replace_slice(spark, path, changes, cols, frontier, predicate, inserted,
                              deleted)._replace(how=SLICE_REPLACED)
    sources = [inserts.select(*rows, F.lit(INSERT).alias(OP))]
    negative = changes.filter(w < 0)
    target = listed.read(spark, path)
    if region:
        target = target.filter(region)
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
                      frontier)._replace(how=MERGED)
    finally:
        release(counted)


def _locate(changes, cols: list[str], local: list | None, prefer: str | None = None
            ) -> tuple[str, int, int] | None:
    """(predicate, rows inserted, rows deleted) for a locator column, when its values among the
    changed rows are few enough to be written as literals.

    The locator is the first column (keys usually come first) that tells the changed rows apart
    well enough: at least an eighth as many distinct values among them as the most distinct
    column. A column of a few values (a status, a flag) would make the slice most of the table;
    a near-unique measure (a price) says nothing about how many rows share each value. The
    column the DT is written in order of comes first when it qualifies."""
    from pyspark.sql import functions as F

    fields = {f.name: f.dataType for f in changes.schema.fields}
    candidates = [c for c in cols if key_predicates.renderable(fields[c])]
    if not candidates:
        return None
    if local is not None:
        inserted = sum(r[WEIGHT] for r in local if r[WEIGHT] > 0)
        deleted = -sum(r[WEIGHT] for r in local if r[WEIGHT] < 0)
        distinct = [len({r[c] for r in local}) for c in candidates]
    else:
        w = F.col(WEIGHT)
        stats = changes.agg(
            F.sum(F.when(w > 0, w).otherwise(0)).alias("ins"),
            F.sum(F.when(w < 0, -w).otherwise(0)).alias("del"),
            *[F.approx_count_distinct(F.col(quote(c))).alias(f"d{k}")
              for k, c in enumerate(candidates)]).first()
        inserted, deleted = int(stats["ins"] or 0), int(stats["del"] or 0)
        distinct = [stats[f"d{k}"] for k in range(len(candidates))]
    most = max(distinct)
    qualified = [c for k, c in enumerate(candidates) if 8 * distinct[k] >= most]
    column = prefer if prefer in qualified else qualified[0]
    if local is not None:
        values = list({r[column] for r in local})
    else:
        values = [r[0] for r in changes.select(F.col(quote(column))).distinct()
                  .limit(key_predicates.MAX_LITERALS + 1).collect()]
    if len(values) > key_predicates.MAX_LITERALS:
        return None
    predicate = key_predicates.match_keys([column], [fields[column]], [(v,) for v in values])
    if predicate is None:
        return None
    return predicate, int(inserted), int(deleted)


def _replace_slice(spark, path: str, changes, cols: list[str], frontier: Frontier,
                   predicate: str, inserted: int, deleted: int) -> Applied:
    """Rewrite the slice of the table the predicate selects, with the change applied to it;
    the slice's unchanged rows are written again and counted as copied. The slice is computed
    while it is written: a row the change would remove more often than the table holds it
    fails the write (`checked`), so such a commit never happens."""
    from pyspark.sql import functions as F

    rows = [F.col(quote(c)) for c in cols]
    held = (listed.read(spark, path).filter(predicate)
            .select(*rows, F.lit(1).cast("long").alias(WEIGHT)))
    slice_ = (held.unionByName(changes.select(*rows, F.col(WEIGHT)))
              .groupBy(*rows).agg(F.sum(WEIGHT).alias(WEIGHT))
              .filter(F.col(WEIGHT) != 0))
    new_rows = slice_.select(*rows, _copies(checked(F.col(WEIGHT), ROWS_MISSING))).select(*rows)
    done = replace(spark, path, predicate, new_rows, frontier)
    return Applied(inserted, deleted, done.version, max(done.inserted - inserted, 0))


ROWS_MISSING = "the change deletes rows the dynamic table does not hold"
# Marks the error a `checked` count raises, so that it is told from any other failed write.
_INCONSISTENT = "DT_CHANGE_DOES_NOT_FIT"


def checked(count, what: str):
    """`count` where it is not negative; a negative one raises an error inside the Spark job
    that computes it (so a write of rows depending on it fails before its commit)."""
    from pyspark.sql import functions as F

    return F.when(count < 0, inconsistent_error(what)).otherwise(count)


def inconsistent_error(what: str):
    """An expression failing the Spark job that evaluates it, with an error `inconsistent` reads."""
    from pyspark.sql import functions as F

    return F.raise_error(F.lit(f"{_INCONSISTENT}: {what}"))


def inconsistent(exc: BaseException) -> Inconsistent | None:
    """The Inconsistent error a failed Spark job carries (see `checked`), if it is one."""
    text = str(exc)
    if _INCONSISTENT not in text:
        return None
    what = text.split(_INCONSISTENT + ": ", 1)[1].splitlines()[0] if _INCONSISTENT + ": " in text else ""
    return Inconsistent(what.strip().rstrip(".") or ROWS_MISSING)


def replace(spark, path: str, predicate: str, rows, frontier: Frontier) -> Applied:
    """Delete the rows matching `predicate` and insert `rows` (which all match it) in one
    commit; `inserted` / `deleted` are the rows written / removed."""
    rows = audit.rows(spark, path, rows, predicate)
    small = slice_commit.target(spark, path)
    if small:       # committed on the driver where it can be
        done = driver_write.replace_all(spark, path, small, rows, frontier) if predicate == "true" \
            else driver_write.replace_where(spark, path, small, predicate, rows, frontier)
        if done is not None:
            return Applied(done[0], done[1], done[2])
    done = slice_commit.replace(spark, path, small, predicate, inside_only(rows, predicate), frontier) \
        if small else None
    if done is not None:
        written, removed, version = done
        return Applied(written, removed, version)
    last = _write(spark, path, rows, frontier, "overwrite", replaceWhere=predicate)
    if last is None:
        return Applied(0, 0, commit_nothing(spark, path, frontier))
    metrics = last["metrics"]
    # with deletion vectors the kept rows of touched files count as "copied" without being
    # rewritten; without them they really are copied. Either way they are not new rows.
    written = int(metrics.get("numOutputRows", 0)) - int(metrics.get("numCopiedRows", 0))
    return Applied(written, int(metrics.get("numDeletedRows", 0)), last["version"])


def inside_only(rows, predicate: str):
    """`rows`, a row of which outside `predicate` fails the job that reads it (as replaceWhere
    checks what it writes), for the commits that write a table whole. A column's value, not a
    filter: the optimizer would push a filter on the keys below an aggregate, onto the input rows."""
    from pyspark.sql import functions as F

    first = rows.columns[0]
    outside = inconsistent_error("a recomputed row lies outside the keys it replaces")
    inside = F.coalesce(F.expr(f"({predicate})"), F.lit(False))
    return rows.withColumn(first, F.when(inside, F.col(quote(first))).otherwise(outside))


def _append(spark, path: str, rows, frontier: Frontier) -> Applied:
    last = _write(spark, path, rows, frontier, "append")
    if last is None:
        return Applied(0, 0, commit_nothing(spark, path, frontier))
    return Applied(int(last["metrics"].get("numOutputRows", 0)), 0, last["version"])


def _write(spark, path: str, rows, frontier: Frontier, mode: str, **options: str
           ) -> commit.LastCommit | None:
    """Write `rows` with the frontier in the commit's userMetadata; the new commit's version
    and metrics, or None when Delta wrote no commit (nothing to write)."""
    from dtcli.state.delta_log import frontier_metadata

    audit.settle()

    before = commit.last_commit(path)["version"]
    writer = rows.write.format("delta").mode(mode).option("userMetadata",
                                                          frontier_metadata(frontier))
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(path)
    last = commit.last_commit(path)
    return None if last["version"] == before else last


def _merge(spark, path: str, source, cols: list[str], frontier: Frontier) -> Applied:
    from delta.tables import DeltaTable

    audit.settle()
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
        return Applied(0, 0, commit_nothing(spark, path, frontier))
    metrics = last["metrics"]
    return Applied(int(metrics.get("numTargetRowsInserted", 0)),
                   int(metrics.get("numTargetRowsDeleted", 0)), last["version"],
                   int(metrics.get("numTargetRowsCopied", 0)))
