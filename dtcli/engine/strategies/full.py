"""FULL (and REINITIALIZE): recompute the query over the pinned inputs and replace the DT."""

from __future__ import annotations

from dtcli.engine import commit
from dtcli.engine.context import RefreshContext, RefreshResult
from dtcli.engine.strategies import register
from dtcli.model import FULL, REINITIALIZE


@register(FULL, REINITIALIZE)
def full_refresh(ctx: RefreshContext) -> RefreshResult:
    step = ctx.step
    df = ctx.spark.sql(step.sql)
    commit.overwrite(df, step.path, ctx.frontier, step.options.get("partition_by"))
    last = commit.last_commit(step.path)
    inserted = int(last["metrics"].get("numOutputRows", 0))
    deleted = int(step.options.get("previous_rows") or 0)
    return RefreshResult(inserted=inserted, deleted=deleted, table_version=last["version"])
