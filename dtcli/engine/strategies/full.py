"""FULL (and REINITIALIZE): recompute the query over the pinned inputs and replace the DT."""

from __future__ import annotations

from dtcli.engine import commit
from dtcli.engine.context import RefreshContext, RefreshResult
from dtcli.engine.deletion_vectors import table_property
from dtcli.engine.strategies import register
from dtcli.model import FULL, REINITIALIZE


@register(FULL, REINITIALIZE)
def full_refresh(ctx: RefreshContext) -> RefreshResult:
    step = ctx.step
    df = shaped(ctx.spark.sql(step.sql), step.options.get("columns"))
    commit.replace_table(ctx.spark, df, step.path, ctx.frontier,
                         partition_by=step.options.get("partition_by"),
                         cluster_by=step.options.get("cluster_by"),
                         comment=step.options.get("comment"),
                         properties=table_property(step.options.get("deletion_vectors", True)))
    last = commit.last_commit(step.path)
    inserted = int(last["metrics"].get("numOutputRows", 0))
    deleted = int(step.options.get("previous_rows") or 0)
    return RefreshResult(inserted=inserted, deleted=deleted, table_version=last["version"])


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
