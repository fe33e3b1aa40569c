"""Aggregates inside a DT's query kept as running totals (sql/rules/kept_aggregates.py): brought
to the run's versions before the DT's refresh, then read by it as inputs of their own.

Each kept aggregate is an internal table of totals (engine/runtime/internal_state.py): rebuilt
with every recompute of the DT (creation, FULL, REINITIALIZE), whose rows are then computed from
the totals (the aggregate computed once), brought up from its own rows before an incremental
refresh, at the cost of the change. The DT's refresh then runs its strategy as
it would (incremental, top-N, totals) on its query with each kept derived table replaced by an
input `__dt_kept<n>`, bound to the aggregate's values over the totals at the new version (the
rule's `over`); its old version is the same over the totals at the version the DT recorded, and
its change the same over the totals' change (ChangeSet.mapped): row by row, since each group of
the totals makes at most one row of the aggregate.

The DT's commit records each totals version it read (`Frontier.state_versions`), after the
totals committed: a kill between the two leaves the totals ahead, and the next refresh reads
their change from the version the DT recorded, which covers both commits. An aggregate whose
summed arguments are not integers or decimals (a float sum depends on the order it is added in)
is not kept: the DT's query reads it as written.
"""

from __future__ import annotations

import dataclasses

from dtcli.engine.runtime import internal_state, listed
from dtcli.engine.runtime.changes import ChangesUnavailable
from dtcli.engine.runtime.context import RefreshContext, RefreshResult
from dtcli.engine.runtime.strategies import Strategy
from dtcli.model import INCREMENTAL, KeptAggregate
from dtcli.model.plan import StepInput
from dtcli.sql.incremental_rewrite.relations import parse
from dtcli.sql.rules import aggregate_totals as totals_rule
from dtcli.sql.rules import kept_aggregates as rule


def refresh(ctx: RefreshContext, strategy: Strategy) -> RefreshResult:
    """Run `strategy` for the DT, over its kept aggregates when it keeps any."""
    from dtcli.engine.runtime.strategies.aggregate_totals import over_rows
    from dtcli.engine.runtime.strategies.full import as_written, full_refresh, typed

    usable = _usable(ctx)
    if not usable:
        return strategy(ctx)
    inputs, versions, old, derived = [], {}, {}, {}
    for spec, kept, types in usable:
        version, before = _bring_up(ctx, spec)
        ctx.frontier.record_state(spec.state.role, version)
        inputs.append(StepInput(spec.name, "internal", spec.state.path, version))
        versions[spec.name] = version
        old[spec.name] = before
        derived[spec.name] = (lambda df, carry=(), kept=kept, types=types: over_rows(df, kept.split, types, carry))
    if ctx.step.action == INCREMENTAL and None in old.values():
        # totals just built (the DT's first refresh since it keeps them): no change of them to
        # read, so this refresh reads the query as written; the next one reads the totals
        return strategy(ctx)
    for inp in inputs:
        derived[inp.name](listed.read(ctx.spark, inp.path, inp.version)).createOrReplaceTempView(inp.name)
    try:
        over = _over_kept(ctx, [k for _, k, _ in usable], inputs, versions, old, derived)
        if strategy is full_refresh:
            # a recompute reads the totals it just built rather than aggregating the inputs again
            return full_refresh(over, rows=typed(over.spark.sql(over.step.options.delta_sql), as_written(over)))
        return strategy(over)
    finally:
        for inp in inputs:
            ctx.spark.catalog.dropTempView(inp.name)


def _usable(ctx: RefreshContext) -> list[tuple[KeptAggregate, rule.Kept, dict]]:
    """The DT's kept aggregates whose summed arguments are exact (analysed, not run)."""
    from dtcli.engine.runtime.strategies.aggregate_totals import argument_types

    out = []
    for spec in ctx.step.options.kept or []:
        block = parse(spec.block_sql)
        split = totals_rule.split(block, own_rows=True)
        types = argument_types(ctx.spark, split) if split is not None else None
        if types is not None:
            out.append((spec, rule.Kept(spec.name, spec.state.role, block, split), types))
    return out


def _bring_up(ctx: RefreshContext, spec: KeptAggregate) -> tuple[int, int | None]:
    """The totals at the run's versions: (their version, the version the DT last read, None
    when that one cannot be read from: rebuilt, or never recorded)."""
    previous = ctx.step.previous
    recorded = (previous.state_versions or {}).get(spec.state.role) if previous else None
    if ctx.step.action == INCREMENTAL and recorded is not None:
        try:
            done = internal_state.bring_up(ctx, spec.state, recorded)
            return done.version, recorded
        except ChangesUnavailable:
            pass
    return internal_state.recompute(ctx, spec.state).version, None


def _over_kept(ctx: RefreshContext, kept: list[rule.Kept], inputs: list[StepInput],
               versions: dict[str, int], old: dict[str, int], derived: dict) -> RefreshContext:
    """The refresh with the kept aggregates as inputs: the query (and the internal tables' queries)
    reading them instead of the derived tables, their versions among the inputs' (`old`: the
    versions the DT recorded, None when it recorded none). The frontier the DT commits is the same
    object: it records the inputs' versions, not the aggregates' (those are its `state_versions`)."""
    step = ctx.step
    options = step.options

    def sub(sql: str | None) -> str | None:
        return rule.substitute(parse(sql), kept).sql(dialect="spark") if sql else sql

    def state(table):
        return dataclasses.replace(table, sql=sub(table.sql)) if table is not None else None
    top_n = dataclasses.replace(options.top_n, inner_sql=sub(options.top_n.inner_sql),
                                state=state(options.top_n.state)) if options.top_n else None
    totals = dataclasses.replace(options.totals, sql=sub(options.totals.sql),
                                 state=state(options.totals.state)) if options.totals else None
    previous = step.previous
    if previous is not None:
        previous = dataclasses.replace(previous, source_versions={
            **previous.source_versions, **{k: v for k, v in old.items() if v is not None}})
    step = dataclasses.replace(step, inputs=[*step.inputs, *inputs], previous=previous, options=dataclasses.replace(
        options, delta_sql=sub(options.delta_sql), top_n=top_n, totals=totals))
    return RefreshContext(ctx.spark, ctx.plan, step, {**ctx.input_versions, **versions}, ctx.frontier,
                          ctx.pinned, ctx.changes, derived={**ctx.derived, **derived})
