"""`src CHANGES(INFORMATION => ...)` for custom incremental tables: the source's change data
feed between two pinned versions, as Snowflake shows a stream's rows.

Each row carries `METADATA$ACTION` ('INSERT' / 'DELETE') and `METADATA$ISUPDATE`: Delta's
update pre-image is a DELETE and its post-image an INSERT, both flagged. Without a RELY primary
key the rows are passed on as Delta recorded them, commit by commit. With one, the range is
compacted per key: the key's row before the range against its row after it, so a delete and
re-insert of the same values (an overwrite) cancels out and a key changed several times shows
one DELETE + INSERT pair. APPEND_ONLY keeps the inserted rows only.
"""

from __future__ import annotations

from dtcli.engine.runtime import listed
from dtcli.engine.runtime.changes import CDF_COLUMNS, ChangesUnavailable, quote
from dtcli.engine.runtime.checkpoints import release
from dtcli.engine.runtime.spark_errors import SPARK_ERRORS, is_unavailable
from dtcli.sql.custom import ACTION, APPEND_ONLY, ISUPDATE


def _with_meta(df, action, isupdate):
    from pyspark.sql import functions as F

    return df.select(*[F.col(quote(c)) for c in df.columns],
                     F.lit(action).cast("string").alias(ACTION) if isinstance(action, str) else action.alias(ACTION),
                     F.lit(isupdate).cast("boolean").alias(ISUPDATE) if isinstance(isupdate, bool)
                     else isupdate.alias(ISUPDATE))


def all_rows(current):
    """Every row of the input as an INSERT: a table's first refresh without backfill."""
    return _with_meta(current, "INSERT", False)


def none(current):
    return _with_meta(current.limit(0), "INSERT", False)


def _fix(name: str, path: str) -> str:
    return (f"the table's history cannot be recomputed from {name}; to start it again from {name}'s current "
            f"rows, run `dt drop` on it and `dt run` (or create it with backfill and start_at)")


def unavailable(what: str, exc: BaseException) -> ChangesUnavailable:
    """The change data is gone (vacuumed, or the feed was off): the reason and the fix."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    return ChangesUnavailable(f"the change data of {what} is no longer available (vacuumed, or the change "
                              f"data feed was off): {first}. A custom table's history cannot be recomputed: "
                              "to start it again from its sources' current rows, run `dt drop` on it and "
                              "`dt run`; keep the sources' history longer than the longest gap between "
                              "refreshes (delta.logRetentionDuration, delta.deletedFileRetentionDuration)")


def read(spark, name: str, path: str, mode: str, start: int, end: int, current, key: list[str] | None,
         held: list):
    """The change rows of `name` committed after version `start` up to `end` (both pinned);
    `current`: the input at `end`; checkpoints the rows need go to `held` (the caller releases them)."""
    from pyspark.sql import functions as F

    if start > end:
        raise ChangesUnavailable(f"input {name} is at version {end}, older than the version {start} this table "
                                 f"reflects: it was recreated. {_fix(name, path)}")
    if start == end:
        return none(current)
    try:
        feed = (spark.read.format("delta").option("readChangeFeed", "true")
                .option("startingVersion", start + 1).option("endingVersion", end).load(path))
        data = [c for c in feed.columns if c not in CDF_COLUMNS]
        if data != current.columns:
            raise ChangesUnavailable(f"the columns of input {name} changed after version {start} "
                                     f"(now {', '.join(current.columns)}); {_fix(name, path)}")
        kind = F.col("_change_type")
        if key:
            old = listed.read(spark, path, start)
            rows = _compacted(feed, old, current, data, key, name, held)
        else:
            # the range is pinned at both ends: the statement may read it several times
            rows = feed.select(*[F.col(quote(c)) for c in data],
                               F.when(kind.isin("insert", "update_postimage"), F.lit("INSERT"))
                               .otherwise(F.lit("DELETE")).alias(ACTION),
                               kind.isin("update_preimage", "update_postimage").alias(ISUPDATE))
        if mode == APPEND_ONLY:
            rows = rows.filter((F.col(quote(ACTION)) == "INSERT") & ~F.col(quote(ISUPDATE)))
    except SPARK_ERRORS as exc:
        if is_unavailable(exc):
            raise unavailable(f"input {name} for versions {start + 1}..{end}", exc) from exc
        raise
    return rows


def _compacted(feed, old, new, data: list[str], key: list[str], name: str, held: list):
    """Per key touched in the range: its row before (at `start`) against its row after (at `end`).
    The touched keys, when few, are pushed into both reads as literals (Delta skips files).
    The checkpointed rows are read lazily by the statement: they go to `held`, which the caller
    releases once the statement ran (a warm application would otherwise keep them)."""
    from functools import reduce

    from pyspark.sql import functions as F

    from dtcli.engine.runtime import key_predicates

    keys = feed.select(*[F.col(quote(k)) for k in key]).distinct().localCheckpoint(eager=True)
    try:
        fields = {f.name: f.dataType for f in feed.schema.fields}
        found = keys.limit(key_predicates.MAX_LITERALS + 1).collect()
        predicate = None
        if not found:
            predicate = "false"
        elif len(found) <= key_predicates.MAX_LITERALS:
            predicate = key_predicates.match_keys(key, [fields[k] for k in key], [tuple(r) for r in found])

        def side(df, mark):
            if predicate is not None:
                picked = df.filter(predicate)
            else:
                on = reduce(lambda a, b: a & b, [df[quote(k)].eqNullSafe(keys[quote(k)]) for k in key])
                picked = df.join(keys, on=on, how="left_semi")
            return picked.select(*[F.col(quote(c)) for c in data], F.lit(mark).alias("__dt_side"))

        both = side(old, "o").unionByName(side(new, "n")).localCheckpoint(eager=True)
        held.append(both)
    finally:
        release(keys)
    dup = both.groupBy("__dt_side", *[F.col(quote(k)) for k in key]).count().filter("count > 1").limit(1).collect()
    if dup:
        when = "before" if dup[0]["__dt_side"] == "o" else "after"
        raise ValueError(f"the RELY primary key ({', '.join(key)}) of {name} is not unique {when} this range: "
                         f"several rows have the key {tuple(dup[0])[1:-1]}; fix the data, or remove rely so "
                         "that its changes are passed on as recorded")
    before = both.filter("__dt_side = 'o'").select(*[F.col(quote(c)).alias(f"o{i}") for i, c in enumerate(data)],
                                                   F.lit(True).alias("o_here"))
    after = both.filter("__dt_side = 'n'").select(*[F.col(quote(c)).alias(f"n{i}") for i, c in enumerate(data)],
                                                  F.lit(True).alias("n_here"))
    index = [data.index(k) for k in key]
    joined = before.join(after, on=reduce(lambda a, b: a & b, [F.col(f"o{i}").eqNullSafe(F.col(f"n{i}"))
                                                                for i in index]), how="full_outer")
    same = reduce(lambda a, b: a & b, [F.col(f"o{i}").eqNullSafe(F.col(f"n{i}")) for i in range(len(data))])
    here_o, here_n = F.col("o_here").isNotNull(), F.col("n_here").isNotNull()
    update = here_o & here_n & ~same
    deleted = joined.filter((here_o & ~here_n) | update).select(
        *[F.col(f"o{i}").alias(c) for i, c in enumerate(data)], F.lit("DELETE").alias(ACTION),
        update.alias(ISUPDATE))
    inserted = joined.filter((~here_o & here_n) | update).select(
        *[F.col(f"n{i}").alias(c) for i, c in enumerate(data)], F.lit("INSERT").alias(ACTION),
        update.alias(ISUPDATE))
    return deleted.unionByName(inserted)
