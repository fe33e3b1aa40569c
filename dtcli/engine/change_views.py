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

from dtcli.engine.changes import ChangesUnavailable, is_unavailable, quote
from dtcli.sql.custom import ACTION, APPEND_ONLY, ISUPDATE

_CDF = ("_change_type", "_commit_version", "_commit_timestamp")


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


def read(spark, name: str, path: str, mode: str, start: int, end: int, current, key: list[str] | None):
    """The change rows of `name` committed after version `start` up to `end` (both pinned);
    `current`: the input at `end`."""
    from pyspark.sql import functions as F

    if start > end:
        raise ChangesUnavailable(f"input {name} is at version {end}, older than the version {start} this table "
                                 f"reflects: it was recreated. {_fix(name, path)}")
    if start == end:
        return none(current)
    try:
        old = spark.read.format("delta").option("versionAsOf", start).load(path)
        if [(f.name, f.dataType) for f in old.schema.fields] != [(f.name, f.dataType) for f in current.schema.fields]:
            raise ChangesUnavailable(f"the columns of input {name} changed after version {start}; "
                                     "edit the statement if it must read them differently. "
                                     f"{_fix(name, path)}")
        feed = (spark.read.format("delta").option("readChangeFeed", "true")
                .option("startingVersion", start + 1).option("endingVersion", end).load(path))
        data = [c for c in feed.columns if c not in _CDF]
        kind = F.col("_change_type")
        if key:
            rows = _compacted(feed, old, current, data, key, name)
        else:
            rows = feed.select(*[F.col(quote(c)) for c in data],
                               F.when(kind.isin("insert", "update_postimage"), F.lit("INSERT"))
                               .otherwise(F.lit("DELETE")).alias(ACTION),
                               kind.isin("update_preimage", "update_postimage").alias(ISUPDATE))
        if mode == APPEND_ONLY:
            rows = rows.filter((F.col(quote(ACTION)) == "INSERT") & ~F.col(quote(ISUPDATE)))
        # read once: the statement may scan it several times, and the range must not move
        rows = rows.localCheckpoint(eager=True)
    except ChangesUnavailable:
        raise
    except Exception as exc:
        if is_unavailable(exc):
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise ChangesUnavailable(f"the change data of input {name} for versions {start + 1}..{end} is no longer "
                                     f"available (vacuumed, or the change data feed was off): {first}. "
                                     f"{_fix(name, path)}; keep the source's history longer than the longest gap "
                                     "between refreshes (delta.logRetentionDuration, "
                                     "delta.deletedFileRetentionDuration)") from exc
        raise
    return rows


def _compacted(feed, old, new, data: list[str], key: list[str], name: str):
    """Per key touched in the range: its row before (at `start`) against its row after (at `end`)."""
    from functools import reduce

    from pyspark.sql import functions as F

    keys = feed.select(*[F.col(quote(k)) for k in key]).distinct()

    def side(df, mark):
        picked = df.join(keys, on=reduce(lambda a, b: a & b, [df[quote(k)].eqNullSafe(keys[quote(k)]) for k in key]),
                         how="left_semi")
        return picked.select(*[F.col(quote(c)).alias(f"{mark}{i}") for i, c in enumerate(data)],
                             F.lit(True).alias(f"{mark}_here"))

    before, after = side(old, "o"), side(new, "n")
    index = [data.index(k) for k in key]
    for df, mark, when in ((before, "o", "before"), (after, "n", "after")):
        dup = df.groupBy(*[F.col(f"{mark}{i}") for i in index]).count().filter("count > 1").limit(1).collect()
        if dup:
            raise ValueError(f"the RELY primary key ({', '.join(key)}) of {name} is not unique {when} this range: "
                             f"several rows have the key {tuple(dup[0])[:-1]}; fix the data, or remove rely so "
                             "that its changes are passed on as recorded")
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
