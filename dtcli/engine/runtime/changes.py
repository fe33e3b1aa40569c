"""An input's changes between two pinned versions, as weighted rows from the change data feed.

Each change row weighs +1 (insert, update postimage) or -1 (delete, update preimage); weights
are summed per full row and zeros dropped, so an overwrite that rewrites unchanged rows, or a
row changed and changed back inside the range, cancels out, and duplicates and NULLs are exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from dtcli.engine.runtime.checkpoints import release
from dtcli.engine.runtime.materialize import LOCAL_ROWS, kept, static_plan
from dtcli.engine.runtime.spark_errors import SPARK_ERRORS, is_unavailable

WEIGHT = "__dt_w"
CDF_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")


class SharedChanges(Protocol):
    """The run's changes read once (engine/runtime/change_cache.py's ChangeCache, which reads
    them with this module's functions)."""

    def projected(self, spark, path: str, start: int, end: int, columns: list[str] | None,
                  small: bool) -> tuple[object, list] | None: ...


class ChangesUnavailable(Exception):
    """The change data of an input cannot be read: the DT must be recomputed."""


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@dataclass
class ChangeSet:
    """Consolidated changes of one input (cached), and whether any row changed at all."""

    name: str
    weighted: object          # DataFrame: data columns + WEIGHT, weights != 0
    rows: int
    local: list | None = None     # the weighted rows themselves, when there are few
    unfiltered: ChangeSet | None = None   # the change `where` filtered (released with it)

    def plus(self):
        return _expand(self.weighted, positive=True)

    def minus(self):
        return _expand(self.weighted, positive=False)

    def both(self):
        return self.plus().unionAll(self.minus())

    def prior(self, new):
        """The input's old version as weighted rows, from `new` (its new version): every new row
        weighing 1 and the change negated (old = new - change), in the change's columns."""
        from pyspark.sql import functions as F

        cols = [F.col(quote(c)) for c in self.weighted.columns if c != WEIGHT]
        return (new.select(*cols, F.lit(1).cast("long").alias(WEIGHT))
                .unionByName(self.weighted.select(*cols, (-F.col(WEIGHT)).cast("long").alias(WEIGHT))))

    def values(self, column: str) -> tuple[list, object] | None:
        """The distinct values `column` takes in the change, with its Spark type; None when
        the change is not kept on the driver or has no such column."""
        return column_values(self.local, self.weighted.schema, column) if self.local is not None else None

    def where(self, predicate: str) -> ChangeSet:
        """Only the rows (of either sign) for which `predicate`, over the input's columns, holds
        (sql/incremental_rewrite/change_filters.py: the others cannot move the query's result).
        A change kept on the driver is filtered there (a local relation: no Spark job) and
        counted again; a larger one is filtered lazily and keeps its count as an upper bound.
        A predicate Spark cannot evaluate on the change leaves it whole."""
        try:
            weighted = self.weighted.filter(predicate)
            local = weighted.collect() if self.local is not None else None
        except SPARK_ERRORS:
            return self
        return ChangeSet(self.name, weighted, len(local) if local is not None else self.rows, local,
                         unfiltered=self)

    def mapped(self, project) -> ChangeSet:
        """The change of a relation computed row by row from this input's rows: `project` takes a
        DataFrame of the input's columns and WEIGHT to the relation's columns and WEIGHT. Rows
        that map to the same row are netted again (a group whose totals moved and whose value
        did not cancels out); a change on the driver stays there."""
        from pyspark.sql import functions as F

        from dtcli.engine.runtime.materialize import local_frame

        out = project(self.weighted)
        cols = [F.col(quote(c)) for c in out.columns if c != WEIGHT]
        weighted = (out.groupBy(*cols).agg(F.sum(WEIGHT).cast("long").alias(WEIGHT))
                    .filter(F.col(WEIGHT) != 0))
        local = None
        if self.local is not None:      # a query over the driver's rows: planned in one job
            with static_plan(weighted.sparkSession):
                local = weighted.collect()
        if local is not None:
            weighted = local_frame(weighted.sparkSession, list(weighted.schema.fields), [tuple(r) for r in local])
        return ChangeSet(self.name, weighted, len(local) if local is not None else self.rows, local,
                         unfiltered=self)

    def release(self) -> None:
        release(self.weighted)
        if self.unfiltered is not None:
            self.unfiltered.release()


def _expand(df, positive: bool):
    from pyspark.sql import functions as F

    cols = [F.col(quote(c)) for c in df.columns if c != WEIGHT]
    w = F.col(WEIGHT)
    picked = df.filter(w > 0) if positive else df.filter(w < 0)
    copies = F.explode(F.array_repeat(F.lit(1), F.abs(w).cast("int"))).alias("__dt_copy")
    return picked.select(*cols, copies).select(*cols)


def read_changes(spark, name: str, path: str, start: int, end: int,
                 columns: list[str] | None = None, small: bool = True,
                 cache: SharedChanges | None = None) -> ChangeSet:
    """Changes committed in versions start+1..end (both pinned), consolidated and cached.

    `columns`: the input's columns the DT reads (None: all). Only those are read and compared:
    a column added to the input, or a change to a column the DT does not read, leaves the
    change readable (and a row changed only in such a column cancels out); a change to a
    column it reads makes the change unavailable (the DT is reinitialized).
    `small`: whether the planner expects the change to be small (materialize.kept).
    `cache`: the run's changes read once per (input, versions) (engine/runtime/change_cache.py)."""
    try:
        wanted, same_schema = _read_columns(name, path, start, end, columns)
        if cache is not None and same_schema:
            found = cache.projected(spark, path, start, end, wanted, small)
            if found is not None:
                weighted, local = found
                return ChangeSet(name, weighted, len(local), local)
        feed = read_feed(spark, path, start, end)
        data = [c for c in feed.columns if c not in CDF_COLUMNS]
        if wanted is not None:
            lower = {c.lower(): c for c in data}
            data = [lower[c.lower()] for c in wanted]
        weighted, local = kept(netted(feed, data), LOCAL_ROWS, small)
        rows = len(local) if local is not None else weighted.count()
    except SPARK_ERRORS as exc:
        if is_unavailable(exc):
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise ChangesUnavailable(f"change data of input {name} for versions {start + 1}.."
                                     f"{end} is not available ({first})") from exc
        raise
    return ChangeSet(name, weighted, rows, local)


def read_feed(spark, path: str, start: int, end: int):
    """The change data feed of versions start+1..end: data columns and CDF_COLUMNS."""
    return (spark.read.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", start + 1).option("endingVersion", end).load(path))


def netted(feed, data: list[str]):
    """The feed's rows over the columns `data`, weighted and summed per row, zeros dropped."""
    from pyspark.sql import functions as F

    weight = F.when(F.col("_change_type").isin("insert", "update_postimage"), F.lit(1)) \
        .otherwise(F.lit(-1))
    return (feed.select(*[F.col(quote(c)) for c in data], weight.alias(WEIGHT))
            .groupBy(*[F.col(quote(c)) for c in data])
            .agg(F.sum(WEIGHT).cast("long").alias(WEIGHT))
            .filter(F.col(WEIGHT) != 0))


def _read_columns(name: str, path: str, start: int, end: int,
                  columns: list[str] | None) -> tuple[list[str] | None, bool]:
    """The columns to read, after checking (in the input's log) that each is as it was at
    `start`: same name, same type; and whether the input's schema is the same at both ends."""
    from dtcli.state.delta_log import column_types

    before, after = column_types(path, start), column_types(path, end)
    if before is None or after is None:
        raise ChangesUnavailable(f"input {name} cannot be read at versions {start} and {end}")
    if before == after:
        return columns, True
    if columns is None:
        raise ChangesUnavailable(f"the schema of input {name} changed between versions "
                                 f"{start} and {end}")
    for column in columns:
        key = column.lower()
        if key not in before or key not in after or before[key] != after[key]:
            raise ChangesUnavailable(f"column {column} of input {name}, which the table reads, "
                                     f"changed between versions {start} and {end}")
    return columns, False


def column_values(rows: list, schema, column: str) -> tuple[list, object] | None:
    """The distinct values `column` takes in `rows` (collected, of `schema`), with its Spark
    type; None when the schema has no such column."""
    fields = {f.name.lower(): (k, f.dataType) for k, f in enumerate(schema.fields)}
    found = fields.get(column.lower())
    if found is None:
        return None
    index, data_type = found
    return list(dict.fromkeys(row[index] for row in rows)), data_type
