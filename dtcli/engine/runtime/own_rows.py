"""Applying a change to a DT from its own rows: aggregates adjusted, windows evaluated again.

The compiler (`dtcli.sql.incremental_rewrite.own_rows`) says how; here the change is computed,
the affected keys' current rows are read from the DT (one scan, pruned by file statistics),
combined with the change, checked, and written over those keys' rows in one `replaceWhere`
commit. DTs with a frozen region do not come here (its predicate may name a window's column,
which the change's rows do not have). Each function returns None when it cannot apply (a type
it cannot sum exactly, too many keys to name as literals): the caller then recomputes the
affected keys from the inputs.
"""

from __future__ import annotations

from functools import reduce

from dtcli.engine.runtime import commit, driver_write, slice_commit
from dtcli.engine.runtime import key_predicates as keys_sql
from dtcli.engine.runtime.apply import ROWS_MISSING, Applied, checked, commit_nothing, replace
from dtcli.engine.runtime.change_cache import plain
from dtcli.engine.runtime.changes import quote
from dtcli.engine.runtime.materialize import LOCAL_ROWS, kept, local_frame, static_plan
from dtcli.engine.runtime.rewrite import replace_whole
from dtcli.model import Frontier
from dtcli.sql.incremental_rewrite.own_rows import (
    COUNT_ALL,
    SUM,
    WEIGHT,
    AggregateUpkeep,
    delta_column,
    output_column,
)
from dtcli.sql.incremental_rewrite.own_rows_window import WindowUpkeep


def _exact_sum_type(data_type) -> bool:
    return type(data_type).__name__ in ("ByteType", "ShortType", "IntegerType", "LongType", "DecimalType")


def _key_predicate(df, rows: list | None, positions: list[int], columns: list[str],
                   types: list) -> str | None:
    """The predicate naming the distinct keys of `df` (columns __dt_o<position>; `rows`: its
    rows when collected), or None when there are too many or they cannot be written as
    literals."""
    names = [output_column(p) for p in positions]
    if rows is not None:
        found = list(dict.fromkeys(tuple(r[n] for n in names) for r in rows))
    else:
        found = df.select(*[quote(n) for n in names]).distinct().limit(keys_sql.MAX_LITERALS + 1).collect()
    if not found or len(found) > keys_sql.MAX_LITERALS:
        return None
    return keys_sql.match_keys([columns[p] for p in positions], [types[p] for p in positions],
                               [tuple(r) for r in found])


def _never_null(spark, sql, upkeep: AggregateUpkeep) -> bool:
    """Whether every summed value is an exact number (an integer or decimal) and, unless the
    block counts it too (its SUM is then NULL exactly when that count is 0), never NULL: made
    by + - * from columns Spark knows are never NULL (in ANSI mode, where arithmetic raises on
    overflow instead of returning NULL; Spark itself marks decimal arithmetic as nullable
    whatever the mode)."""
    sums = [m for m in upkeep.measures if m.kind == SUM]
    if not sums:
        return True
    uncounted = any(m.count is None for m in sums)
    if uncounted and (upkeep.probe is None or
                      str(spark.conf.get("spark.sql.ansi.enabled", "true")).lower() != "true"):
        return False
    totals = sql(upkeep.columns.sql(dialect="spark")).schema
    if not all(_exact_sum_type(totals[output_column(m.position)].dataType) for m in sums):
        return False
    return not uncounted or not any(f.nullable for f in sql(upkeep.probe.sql(dialect="spark")).schema.fields)


def aggregate(spark, sql, path: str, target, upkeep: AggregateUpkeep, frontier: Frontier,
              held: list, small: bool = True, whole: bool = False, hand_on: bool = False) -> Applied | None:
    """Each affected group's outputs = its current outputs + the change's sums (`small`: the
    change is expected to be small, see materialize.kept; `whole`: the table is written whole,
    see rewrite.py; `hand_on`: a table whose change the run reads, which a small change then
    comes with, `_written_from_driver`)."""
    from pyspark.sql import functions as F

    columns, types = target.columns, [f.dataType for f in target.schema.fields]
    if not _never_null(spark, sql, upkeep):
        return None     # a running total is exact only when no summed value is ever NULL
    change = upkeep.change()     # compiled only now: it may read the changes and scan inputs
    if change is None:
        return None
    # collected up to the change budget (more keys than literals: refused below, computed once)
    deltas, rows = kept(sql(change[1].sql(dialect="spark")), LOCAL_ROWS, small)
    held.append(deltas)
    if upkeep.keys and rows is not None and not rows:
        # the change reaches no group (its rows fail the joins or the conditions): the DT holds
        # as it is, and recomputing its affected keys instead would read every input again
        return _unchanged(spark, path, target, frontier)
    # without GROUP BY the one row is rewritten
    predicate = _key_predicate(deltas, rows, upkeep.keys, columns, types) if upkeep.keys else "true"
    if predicate is None:
        return None
    old = target.filter(predicate).select(
        *[F.col(quote(c)).alias(output_column(k)) for k, c in enumerate(columns)])
    on = reduce(lambda a, b: a & b, [F.col(f"o.{output_column(k)}").eqNullSafe(F.col(f"d.{output_column(k)}"))
                                     for k in upkeep.keys], F.lit(True))
    joined = old.alias("o").join(deltas.alias("d"), on, "full_outer")
    out = {k: F.coalesce(F.col(f"o.{output_column(k)}"), F.col(f"d.{output_column(k)}")).cast(types[k])
           for k in upkeep.keys}

    def total(m):
        return F.coalesce(F.col(f"o.{output_column(m.position)}"), F.lit(0)) + \
            F.coalesce(F.col(f"d.{delta_column(m.position)}"), F.lit(0))
    for m in upkeep.measures:
        now = total(m)
        if m.count is not None:     # a SUM over no value is NULL: its argument's count says when
            now = F.when(total(next(c for c in upkeep.measures if c.position == m.count)) > 0, now)
        out[m.position] = now.cast(types[m.position])
    counts = [m.position for m in upkeep.measures if m.kind != SUM]
    count_all = next(m.position for m in upkeep.measures if m.kind == COUNT_ALL)
    groups = joined.select(*[out[k].alias(output_column(k)) for k in range(len(columns))])
    # a negative count means the change empties groups the DT does not hold: the write fails
    lowest = F.least(*[F.col(output_column(k)) for k in counts]) if len(counts) > 1 else \
        F.col(output_column(counts[0]))
    kept_rows = checked(lowest, "the change empties groups the dynamic table does not hold").isNotNull()
    if upkeep.keys:         # without GROUP BY the one row stays, COUNT(*) 0 included
        kept_rows = kept_rows & (F.col(output_column(count_all)) > 0)
    write = replace_whole if whole else replace
    if hand_on and rows is not None and all(plain(t) for t in types):
        return _written_from_driver(spark, path, predicate, joined, out, kept_rows, target, count_all, write,
                                    frontier)
    new_rows = groups.filter(kept_rows).select(*[F.col(output_column(k)).alias(c) for k, c in enumerate(columns)])
    return write(spark, path, predicate, new_rows, frontier)


def _unchanged(spark, path: str, target, frontier: Frontier) -> Applied:
    """Only the frontier committed; the commit's change, none, handed on as a written one is
    (`_written_from_driver`), so that the table's readers in this run need not read its feed."""
    before = commit.last_commit(path)["version"]
    done = Applied(0, 0, commit_nothing(spark, path, frontier))
    return done._replace(change=(before, _weighted_fields(target), []))


def _weighted_fields(target) -> list:
    """The table's fields, then WEIGHT: the fields of a change handed on (ChangeCache.seed)."""
    from pyspark.sql.types import LongType, StructField

    return list(target.schema.fields) + [StructField(WEIGHT, LongType(), False)]


def _written_from_driver(spark, path: str, predicate: str, joined, out: dict, kept_rows, target, count_all: int,
                         write, frontier: Frontier) -> Applied:
    """A small change's groups before and after, collected in one job, and the new rows written
    from the driver: the commit's change is then known (old rows out, new rows in, netted) and
    handed on with the result, so that the run's readers of this table's change (its DT, for
    an internal table) need not read its change feed (ChangeCache.seed, which nets it)."""
    from pyspark.sql import functions as F

    width = len(target.columns)
    # the old values under names of their own: `kept_rows` reads the new ones by their names
    staged = joined.select(*[F.col(f"o.{output_column(k)}").alias(f"__dt_was{k}") for k in range(width)],
                           *[out[k].alias(output_column(k)) for k in range(width)],
                           F.col(f"o.{output_column(count_all)}").isNotNull().alias("__dt_held"))
    # the change's few groups joined with the same keys' rows of the table: planned in one job
    with static_plan(spark):
        both = staged.select("*", kept_rows.alias("__dt_keep")).collect()
    old = [tuple(r[:width]) for r in both if r[2 * width]]
    new = [tuple(r[width:2 * width]) for r in both if r[2 * width + 1]]
    ready = driver_write.prepare(spark, path, slice_commit.target(spark, path))
    before = ready.table.version if ready else commit.last_commit(path)["version"]
    on_driver = driver_write.commit_rows(ready, predicate, old, new, frontier) if ready else None
    if on_driver is not None:
        done = Applied(*on_driver)
    else:
        done = write(spark, path, predicate, local_frame(spark, list(target.schema.fields), new), frontier)
    # ChangeCache.seed nets the rows
    return done._replace(change=(before, _weighted_fields(target), [(*r, -1) for r in old] + [(*r, 1) for r in new]))


def window(spark, sql, path: str, target, upkeep: WindowUpkeep, frontier: Frontier,
           held: list, small: bool = True, whole: bool = False) -> Applied | None:
    """Each affected partition's rows = its current rows (window columns dropped) + the change,
    with the window functions evaluated again (`small`, `whole`: as for `aggregate`). Without
    PARTITION BY the DT is one partition: all its rows are evaluated again, and when every window
    allows it (`upkeep.order`) only the rows from the first changed position in their ORDER BY on
    are written."""
    from pyspark.sql import functions as F

    columns, types = target.columns, [f.dataType for f in target.schema.fields]
    plain = [output_column(k) for k in upkeep.plain]
    net, rows = kept(sql(upkeep.change.sql(dialect="spark"))
                     .groupBy(*[F.col(c) for c in plain]).agg(F.sum(WEIGHT).cast("long").alias(WEIGHT))
                     .filter(F.col(WEIGHT) != 0), LOCAL_ROWS, small)
    held.append(net)
    if upkeep.keys:
        predicate = _key_predicate(net, rows, upkeep.keys, columns, types)
        rewritten = predicate           # the partitions' rows are read and rewritten alike
    else:       # one partition: all its rows are read, those from the first change on rewritten
        if (rows is not None and not rows) or (rows is None and net.limit(1).count() == 0):
            return Applied(0, 0, commit_nothing(spark, path, frontier))
        predicate, rewritten = "true", _from_first_change(net, upkeep.order, columns, types)
    if predicate is None:
        return None
    old = target.filter(predicate).select(
        *[F.col(quote(columns[k])).alias(output_column(k)) for k in upkeep.plain],
        F.lit(1).cast("long").alias(WEIGHT))
    combined = (old.unionByName(net).groupBy(*[F.col(c) for c in plain])
                .agg(F.sum(WEIGHT).alias(WEIGHT)).filter(F.col(WEIGHT) != 0))
    copies = F.explode(F.array_repeat(F.lit(1), checked(F.col(WEIGHT), ROWS_MISSING).cast("int")))
    view = "__dt_window_rows"
    combined.select(*[F.col(c) for c in plain], copies.alias("__dt_copy")).createOrReplaceTempView(view)
    try:
        select = ", ".join(
            (f"{quote(output_column(k))}" if k in upkeep.plain else upkeep.windowed[k].sql(dialect="spark"))
            + f" AS {quote(c)}" for k, c in enumerate(columns))
        new_rows = spark.sql(f"SELECT {select} FROM {view}")
        if rewritten != predicate:
            new_rows = new_rows.filter(rewritten)
        return (replace_whole if whole else replace)(spark, path, rewritten, new_rows, frontier)
    finally:
        spark.catalog.dropTempView(view)


def _from_first_change(net, order: list[tuple[int, bool, bool]] | None, columns: list[str],
                       types: list) -> str:
    """Spark SQL selecting the DT's rows that do not sort before the change's first row under
    `order` ((output position, descending, nulls first) per key; NULLs as Spark sorts them):
    the rows whose window values may change. "true" when every row may."""
    from pyspark.sql import functions as F

    if not order or not all(keys_sql.renderable(types[p]) for p, _, _ in order):
        return "true"
    sort = []
    for p, desc, nulls_first in order:
        col = F.col(output_column(p))
        sort.append({(False, True): col.asc_nulls_first(), (False, False): col.asc_nulls_last(),
                     (True, True): col.desc_nulls_first(), (True, False): col.desc_nulls_last()}
                    [(desc, nulls_first)])
    first = net.orderBy(*sort).select(*[output_column(p) for p, _, _ in order]).first()
    before, equal = [], []
    for (p, desc, nulls_first), value in zip(order, first):
        col, lit = quote(columns[p]), keys_sql.literal(value, types[p]) if value is not None else "NULL"
        if lit is None:
            return "true"
        if value is None:
            sooner = None if nulls_first else f"{col} IS NOT NULL"
        else:
            cmp = f"{col} {'>' if desc else '<'} {lit}"
            sooner = f"({col} IS NULL OR {cmp})" if nulls_first else cmp
        if sooner is not None:
            before.append(" AND ".join([*equal, sooner]))
        equal.append(f"{col} <=> {lit}")
    if not before:
        return "true"
    return "NOT coalesce(" + " OR ".join(f"({b})" for b in before) + ", false)"
