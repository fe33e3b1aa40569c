"""FULL (and REINITIALIZE): recompute the query over the pinned inputs and replace the DT.

With a frozen region (after creation) only the active region is replaced: the query's rows in
it, in one `replaceWhere` commit that leaves frozen rows alone. At creation with `backfill`, the
DT is a copy of the backfill source (its frozen region only, when there is one, and the query's
rows for the rest), made in one commit and never read again.
"""

from __future__ import annotations

from dtcli.engine.runtime import apply, audit, backfill, column_mapping, commit, listed, slice_commit
from dtcli.engine.runtime.checkpoints import release
from dtcli.engine.runtime.context import RefreshContext, RefreshResult
from dtcli.engine.runtime.deletion_vectors import table_property
from dtcli.model import FULL, REINITIALIZE


def full_refresh(ctx: RefreshContext, rows=None) -> RefreshResult:
    """`rows`: the DT's new rows when the caller computed them (a top-N from its internal
    table), else the query is run as written."""
    step, spark = ctx.step, ctx.spark
    options = step.options
    df = rows if rows is not None else shaped(spark.sql(step.sql), options.columns)
    if options.names:                 # unaliased outputs: named as dt derived them (Spark's names)
        df = df.toDF(*options.names)
    if options.backfill.copy:
        return _backfilled(ctx, df)
    if options.regions.active:
        active = options.regions.active
        done = apply.replace(spark, step.path, active, df.filter(active), ctx.frontier)
        return RefreshResult(inserted=done.inserted, deleted=done.deleted, table_version=done.version)
    done = _rows_replaced(ctx, df)
    if done is not None:
        return done
    _replace_table(ctx, df)
    last = commit.last_commit(step.path)
    inserted = int(last["metrics"].get("numOutputRows", 0))
    deleted = int(options.previous_rows or 0)
    return RefreshResult(inserted=inserted, deleted=deleted, table_version=last["version"],
                         table_replaced=True)


def _replace_table(ctx: RefreshContext, rows) -> None:
    layout = ctx.step.options.layout
    commit.replace_table(ctx.spark, rows, ctx.step.path, ctx.frontier,
                         partition_by=layout.partition_by, cluster_by=layout.cluster_by,
                         comment=layout.comment, properties=_properties(layout),
                         sort_by=layout.sort_by, max_rows_per_file=layout.max_rows_per_file or 0)


def _properties(layout) -> dict[str, str]:
    return {**table_property(layout.deletion_vectors), **column_mapping.table_property(layout.column_mapping)}


def _rows_replaced(ctx: RefreshContext, rows) -> RefreshResult | None:
    """Every row of a small DT replaced in a commit dt builds from its file list
    (slice_commit.py) rather than by `CREATE OR REPLACE`, which rebuilds the table's state from
    its log first: where the DT exists with the definition the replace would give it (no
    clustering or sorted files to lay out; a REINITIALIZE always replaces the table). None,
    with nothing written, where it does not apply."""
    step, spark, layout = ctx.step, ctx.spark, ctx.step.options.layout
    if step.action == REINITIALIZE or step.previous is None or layout.cluster_by or layout.sort_by:
        return None
    # any table listed: a FULL writes it whole either way (`spark.dt.wholeWriteBytes` is about slices)
    at = slice_commit.target(spark, step.path, most=listed.LISTED_BYTES)
    if at is None or not at.holds(rows, partition_by=layout.partition_by, comment=layout.comment,
                                  properties=_properties(layout)):
        return None
    done = slice_commit.replace(spark, step.path, at, None, audit.rows(spark, None, rows, None), ctx.frontier,
                                max_rows_per_file=layout.max_rows_per_file or 0)
    if done is None:
        return None
    written, _, version = done
    return RefreshResult(inserted=written, deleted=int(step.options.previous_rows or 0), table_version=version)


def _backfilled(ctx: RefreshContext, computed) -> RefreshResult:
    """Create the DT as a copy of the backfill source at its pinned version (its frozen region
    only, with the query's rows for the active region, when the DT has a frozen_where)."""
    copied = backfill.copied_rows(ctx.spark, ctx.step.options.backfill.copy,
                                  [(f.name, f.dataType) for f in computed.schema.fields])
    frozen = ctx.step.options.regions.frozen
    if frozen:
        copied = copied.filter(frozen)
    # a checkpoint: the copy is counted and written from one read of the source
    copied = copied.localCheckpoint(eager=True)
    count = copied.count()
    if frozen:
        rows = copied.unionByName(computed.filter(f"NOT {frozen}"))
    else:
        rows = copied
    _replace_table(ctx, rows)
    last = commit.last_commit(ctx.step.path)
    written = int(last["metrics"].get("numOutputRows", 0))
    release(copied)
    return RefreshResult(inserted=written - count, copied=count, table_version=last["version"],
                         table_replaced=True)


def shaped(df, columns: list[dict] | None):
    """The query's result named (and typed) as the table's `columns:` config says."""
    if not columns:
        return df
    from pyspark.sql import functions as F

    if len(columns) != len(df.columns):
        raise ValueError(f"columns lists {len(columns)} columns but the query returns {len(df.columns)}")
    renamed = df.toDF(*[c["name"] for c in columns])
    return renamed.select(*[F.col(f"`{c['name']}`").cast(c["type"]).alias(c["name"]) if c.get("type")
                            else F.col(f"`{c['name']}`") for c in columns])


STRATEGIES = {FULL: full_refresh, REINITIALIZE: full_refresh}   # refresh kinds this module does


def as_written(ctx: RefreshContext):
    """The DT's columns as the query as written names and types them (analysed, not run)."""
    return shaped(ctx.spark.sql(ctx.step.sql), ctx.step.options.columns).schema


def typed(df, schema, carry: tuple[str, ...] = ()):
    """`df`'s columns, by position, named and typed as `schema`'s (then `carry` as they are):
    rows computed another way than the query as written (from internal state), shaped as its."""
    from pyspark.sql import functions as F

    from dtcli.engine.runtime.changes import quote

    named = [F.col(quote(c)).cast(f.dataType).alias(f.name) for c, f in zip(df.columns, schema.fields)]
    return df.select(*named, *[F.col(quote(c)) for c in carry])
