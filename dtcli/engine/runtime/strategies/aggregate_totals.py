"""An aggregate over running totals (split by sql/rules/aggregate_totals.py): the totals kept as
an internal table, the DT's rows computed from the totals' groups a change moved.

Every refresh first brings the totals up to the run's versions (engine/runtime/internal_state.py:
the incremental strategy over the totals query, which maintains them from their own rows,
own_rows.py, at the cost of the change), then:

* no group moved: only the frontier is committed;
* a global aggregate: its one row (none under a HAVING it fails) computed from the totals' one
  row and written over the DT's, as a one-row DT's recompute is (query_shape.py);
* the totals' change data feed between the version the DT recorded and the new one holds each
  moved group before (weight -1) and after (+1): the DT's outputs over those rows, HAVING as a
  filter, are the DT's change, netted and applied (`aggregate_totals`). A global aggregate's one
  row is one such group;
* the totals rebuilt, their change feed unreadable, or a `drop` expectation (the rows it keeps
  out are no change to subtract): the DT's rows are computed from the whole totals table, whose
  size is the DT's, and only the difference is written.

The DT's values are Spark's own: COUNT is the count, SUM the sum when the count of its argument
is not 0, AVG Spark's quotient of the two (the rule's `over`). That holds for integer and
decimal arguments only: the types are read when the query is analysed, and a DT summing another
type refreshes as if it kept no totals (its groups recomputed; creation keeps none). Creation,
FULL and REINITIALIZE rebuild the totals and compute the DT from them; the DT's commit records
the totals' version in its frontier (`state_versions`), so a refresh killed between the two
commits loses and doubles nothing.
"""

from __future__ import annotations

from dtcli.engine.runtime import internal_state, listed
from dtcli.engine.runtime.audit import has_drops
from dtcli.engine.runtime.changes import WEIGHT, ChangesUnavailable, quote, read_changes
from dtcli.engine.runtime.context import RefreshContext, RefreshResult
from dtcli.engine.runtime.fallback import guarded
from dtcli.engine.runtime.materialize import LOCAL_ROWS, kept
from dtcli.engine.runtime.strategies.full import as_written, full_refresh, typed
from dtcli.engine.runtime.strategies.incremental import ChangeRefresh, check_types
from dtcli.model import INCREMENTAL, TotalsSpec
from dtcli.model.refresh_terms import AGGREGATE_TOTALS
from dtcli.sql.incremental_rewrite.relations import parse
from dtcli.sql.rules import aggregate_totals as rule

# How the change was applied (the history's `refresh_strategy`)
FROM_TOTALS = "aggregate_totals"


def totals_refresh(ctx: RefreshContext) -> RefreshResult:
    if ctx.step.action != INCREMENTAL:
        return _recompute(ctx)
    return guarded(ctx, _Totals(ctx).run, _recompute)


def _split(ctx: RefreshContext) -> tuple[rule.Totals, dict[int, object]] | None:
    """The split and the type of each summed argument (rule.INTEGRAL or (precision, scale)), or
    None when one is not an integer or a decimal (analysed, not run)."""
    spec: TotalsSpec = ctx.step.options.totals
    split = rule.split(parse(spec.sql))
    if split is None:
        return None
    types = argument_types(ctx.spark, split)
    return (split, types) if types is not None else None


def argument_types(spark, split: rule.Totals) -> dict[int, object] | None:
    """The type of each summed argument of `split` (rule.INTEGRAL or (precision, scale)), or None
    when one is not an integer or a decimal (the block's FROM analysed, not run)."""
    fields = spark.sql(split.probe().sql(dialect="spark")).schema.fields
    types: dict[int, object] = {}
    for j, field in zip(sorted(split.summed), fields):
        kind = type(field.dataType).__name__
        if kind in ("ByteType", "ShortType", "IntegerType", "LongType"):
            types[j] = rule.INTEGRAL
        elif kind == "DecimalType":
            types[j] = (field.dataType.precision, field.dataType.scale)
        else:
            return None
    return types


def _recompute(ctx: RefreshContext) -> RefreshResult:
    """Creation, FULL, REINITIALIZE: the totals rebuilt from the inputs, the DT's rows computed
    from them (the query as written when an argument is not exact: no totals then)."""
    found = _split(ctx)
    if found is None:
        return full_refresh(ctx)
    split, types = found
    state = ctx.step.options.totals.state
    done = internal_state.recompute(ctx, state)
    ctx.frontier.record_state(state.role, done.version)
    return full_refresh(ctx, rows=typed(over_rows(_totals_at(ctx, done.version), split, types), as_written(ctx)))


def _totals_at(ctx: RefreshContext, version: int):
    return listed.read(ctx.spark, ctx.step.options.totals.state.path, version)


def over_rows(totals, split: rule.Totals, types: dict[int, object], carry: tuple[str, ...] = ()):
    """The DT's outputs over `totals` (a DataFrame of the totals' columns, and `carry`)."""
    over = split.over(types, carry=carry)
    where = over.args.get("where")
    rows = totals.filter(where.this.sql(dialect="spark")) if where is not None else totals
    return rows.selectExpr(*[e.sql(dialect="spark") for e in over.expressions])


class _Totals(ChangeRefresh):
    def _run(self) -> RefreshResult:
        found = _split(self.ctx)
        if found is None:           # a summed argument of an inexact type: as if no totals were kept
            return super()._run()
        split, types = found
        spec: TotalsSpec = self.step.options.totals
        role = spec.state.role
        target = listed.read(self.spark, self.step.path)
        check_types(target.schema)
        recorded = (self.step.previous.state_versions or {}).get(role) if self.step.previous else None
        if self._state_unchanged(role, recorded):
            return self._nothing()
        done = internal_state.bring_up(self.ctx, spec.state, recorded)
        self.ctx.frontier.record_state(role, done.version)

        def whole() -> RefreshResult:
            rows = typed(over_rows(_totals_at(self.ctx, done.version), split, types), target.schema)
            return self._write_difference(rows, target, FROM_TOTALS)
        if done.version == recorded and not done.replaced:
            return self._nothing()
        if not split.keys:         # one row: written over the DT's, as query_shape.py's is
            handed = self.ctx.changes.seeded(spec.state.path, recorded, done.version) if self.ctx.changes else None
            if handed is not None and not handed.rows:      # the totals did not move: nor does the row
                return self._nothing()
            return self._one_row_from(typed(over_rows(self._one_total(handed, done.version), split, types),
                                             target.schema))
        if done.replaced or has_drops():
            return whole()
        try:
            cs = read_changes(self.spark, internal_state.name_of(self.ctx, spec.state), spec.state.path,
                              recorded, done.version, small=self._small(), cache=self.ctx.changes)
        except ChangesUnavailable:        # its history is gone: from the whole table
            return whole()
        self.changes[role] = cs
        if cs.rows == 0:
            return self._nothing()
        return self._apply(typed(over_rows(cs.weighted, split, types, carry=(WEIGHT,)), target.schema, (WEIGHT,)),
                           target.columns)

    def _one_total(self, handed, version: int):
        """A global aggregate's totals row at `version`: the new row (weight +1) of the change
        the refresh of the totals handed on (`handed`, ChangeCache.seeded), else read."""
        from dtcli.engine.runtime.materialize import local_frame

        new = [row[:-1] for row in handed.rows if row[-1] > 0] if handed is not None else []
        if len(new) != 1:
            return _totals_at(self.ctx, version)
        return local_frame(self.spark, handed.fields[:-1], new)

    def _one_row_from(self, rows) -> RefreshResult:
        """A global aggregate's row (or none, under HAVING) over the DT's: no change feed read."""
        from dtcli.engine.runtime import apply as applier
        from dtcli.engine.runtime import rewrite

        if self.whole:
            done = rewrite.overwrite_all(self.spark, self.step.path, rows, self.ctx.frontier,
                                         self.step.options.previous_rows or 0)
        else:
            done = applier.replace(self.spark, self.step.path, "true", rows, self.ctx.frontier)
        return RefreshResult(inserted=done.inserted, deleted=done.deleted, table_version=done.version,
                             strategy=FROM_TOTALS)

    def _apply(self, change, columns: list[str]) -> RefreshResult:
        """The DT's rows before (-) and after (+) each moved group, netted and applied."""
        from pyspark.sql import functions as F

        net, local = kept(change.groupBy(*[F.col(quote(c)) for c in columns])
                          .agg(F.sum(WEIGHT).cast("long").alias(WEIGHT))
                          .filter(F.col(WEIGHT) != 0), LOCAL_ROWS, self._small())
        self.cached.append(net)
        if local is not None and not local:
            return self._nothing()
        applied = self._apply_net(net, local)
        return RefreshResult(inserted=applied.inserted, deleted=applied.deleted, copied=applied.copied,
                             table_version=applied.version, strategy=FROM_TOTALS)


STRATEGIES = {AGGREGATE_TOTALS: totals_refresh}   # refresh kinds this module does
