"""An incremental top-N (`ORDER BY … LIMIT n` outermost, split by sql/rules/top_n.py): the change
of the query under it (the *inner* query) applied to the top n, in one commit with the frontier.

The inner query's net change (rows gained, rows lost) comes from its internal table when the DT
keeps one (`TopNSpec.state`: the table is brought up to the run's versions first, see
engine/runtime/internal_state.py, and its change data feed read), else it is compiled from the inputs'
changes as any DT's change is. Then:

* no change: only the frontier is committed;
* no row lost is among the DT's rows (compared on the DT's columns), and the top-N's keys are
  output columns (no OFFSET): the new top n is the top n of the DT's rows and the rows gained,
  sorted by Spark with the query's own keys (NULL ordering and ties as Spark's), the DT's rows
  first among ties, so a refresh keeps the tied rows it holds (`top_n_merged`);
* otherwise the top n is recomputed: over the internal table (`top_n_from_state`), whose size
  is the inner query's result, or from the inputs, as the query is written (`top_n_recomputed`),
  when the inner query is a filter of one input, which costs what a copy of it would.

The new rows are compared with the DT's and only the difference is written, so downstream DTs
read a change as small as the top-N's. Every action (creation, FULL, REINITIALIZE, a fallback)
keeps the internal table at the versions the DT reflects and records its version in the DT's
frontier.
"""

from __future__ import annotations

from dtcli.engine.runtime import audit, internal_state, listed
from dtcli.engine.runtime.changes import WEIGHT, ChangesUnavailable, quote, read_changes
from dtcli.engine.runtime.context import RefreshContext, RefreshResult
from dtcli.engine.runtime.fallback import guarded
from dtcli.engine.runtime.materialize import LOCAL_ROWS, kept
from dtcli.engine.runtime.strategies.full import as_written, full_refresh, typed
from dtcli.engine.runtime.strategies.incremental import ChangeRefresh, check_types
from dtcli.model import INCREMENTAL, TopNSpec
from dtcli.model.refresh_terms import TOP_N
from dtcli.sql.incremental_rewrite import DeltaCompiler, Unsupported

# How the change was applied (the history's `refresh_strategy`)
TOP_N_MERGED, TOP_N_FROM_STATE, TOP_N_RECOMPUTED = "top_n_merged", "top_n_from_state", "top_n_recomputed"
_HELD = "__dt_held"      # 0 for the DT's rows, 1 for rows gained: ties keep the DT's rows


def top_n_refresh(ctx: RefreshContext) -> RefreshResult:
    if ctx.step.action != INCREMENTAL:
        return _recompute(ctx)
    return guarded(ctx, _TopN(ctx).run, _recompute)


def _recompute(ctx: RefreshContext) -> RefreshResult:
    """Creation, FULL, REINITIALIZE: the internal table rebuilt from the inputs, and the DT's
    rows the top n of it (or the query as written, when the DT keeps no internal table)."""
    spec: TopNSpec = ctx.step.options.top_n
    if spec.state is None:
        return full_refresh(ctx)
    done = internal_state.recompute(ctx, spec.state)
    ctx.frontier.record_state(spec.state.role, done.version)
    return full_refresh(ctx, rows=_from_state(ctx, spec, done.version, as_written(ctx)))


def _from_state(ctx: RefreshContext, spec: TopNSpec, version: int, schema):
    """The top-N of the internal table at `version`, as the DT's columns."""
    rows = listed.read(ctx.spark, spec.state.path, version)
    return typed(window(rows, spec), schema)


def window(rows, spec: TopNSpec, tiebreak: str | None = None):
    """The rows of `rows` (the inner query's columns, in order) the top-N keeps, sorted by the
    query's keys (then `tiebreak`, ascending), its outputs only."""
    from pyspark.sql import functions as F

    names = rows.columns
    keys = []
    for key in spec.order:
        col = F.col(quote(names[key.position]))
        keys.append({(False, True): col.asc_nulls_first(), (False, False): col.asc_nulls_last(),
                     (True, True): col.desc_nulls_first(), (True, False): col.desc_nulls_last()}
                    [(key.desc, key.nulls_first)])
    if tiebreak is not None:
        keys.append(F.col(quote(tiebreak)).asc())
    out = rows.orderBy(*keys) if keys else rows
    if spec.offset:
        out = out.offset(spec.offset)
    if spec.limit is not None:
        out = out.limit(spec.limit)
    return out.select(*[F.col(quote(c)) for c in names[:spec.outputs]])


class _TopN(ChangeRefresh):
    def _run(self) -> RefreshResult:
        self.spec: TopNSpec = self.step.options.top_n
        self.target = listed.read(self.spark, self.step.path)
        check_types(self.target.schema)
        if self.spec.state is not None:
            return self._over_state()
        return self._over_inputs()

    def _over_state(self) -> RefreshResult:
        spec, step = self.spec, self.step
        role = spec.state.role
        recorded = (step.previous.state_versions or {}).get(role) if step.previous else None
        if self._state_unchanged(role, recorded):
            return self._nothing()
        done = internal_state.bring_up(self.ctx, spec.state, recorded)
        self.ctx.frontier.record_state(role, done.version)

        def recompute():
            return _from_state(self.ctx, spec, done.version, self.target.schema)
        if done.replaced:
            return self._write(recompute(), TOP_N_FROM_STATE)
        if done.version == recorded:
            return self._nothing()
        try:
            cs = read_changes(self.spark, internal_state.name_of(self.ctx, spec.state), spec.state.path,
                              recorded, done.version, small=self._small(), cache=self.ctx.changes)
        except ChangesUnavailable:        # its history is gone: the top n from the table itself
            return self._write(recompute(), TOP_N_FROM_STATE)
        self.changes[role] = cs
        return self._apply(cs.weighted, cs.local, recompute, TOP_N_FROM_STATE)

    def _over_inputs(self) -> RefreshResult:
        from pyspark.sql import functions as F

        bindings = self._bind()
        if not bindings.changed:
            return self._nothing()
        plus, minus = DeltaCompiler(bindings, self._materialize, self._narrow).compile(self.spec.inner_sql)
        parts = []
        for query, weight in ((plus, 1), (minus, -1)):
            if query is not None:
                df = self._sql(query.sql(dialect="spark"))
                parts.append(df.toDF(*[f"__dt_c{k}" for k in range(len(df.columns))])
                             .withColumn(WEIGHT, F.lit(weight)))
        if not parts:
            return self._nothing()
        union = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
        cols = [F.col(c) for c in union.columns if c != WEIGHT]
        net, local = kept(union.groupBy(*cols).agg(F.sum(WEIGHT).cast("long").alias(WEIGHT))
                          .filter(F.col(WEIGHT) != 0), LOCAL_ROWS, self._small())
        self.cached.append(net)

        def recompute():
            return typed(self.spark.sql(self.step.sql), self.target.schema)
        return self._apply(net, local, recompute, TOP_N_RECOMPUTED)

    def _apply(self, net, local: list | None, recompute, how: str) -> RefreshResult:
        """The inner query's net change (its columns in order + WEIGHT) applied to the top n."""
        from pyspark.sql import functions as F

        spec = self.spec
        if local is not None and not local:
            return self._nothing()
        columns = [c for c in net.columns if c != WEIGHT]
        if len(columns) != spec.outputs + spec.hidden:
            raise Unsupported(f"the inner query's change has {len(columns)} columns, the top-N "
                              f"expects {spec.outputs + spec.hidden}")
        if local is None and net.limit(1).count() == 0:
            return self._nothing()
        outputs = columns[:spec.outputs]
        w = F.col(WEIGHT)
        # a drop expectation keeps rows out of the DT: the DT's rows are then no top n to merge into
        mergeable = spec.offset == 0 and spec.hidden == 0 and spec.limit is not None and not audit.has_drops()
        if not mergeable or self._holds_lost(net.filter(w < 0).select(*[F.col(quote(c)) for c in outputs]),
                                              local, outputs):
            return self._write(recompute(), how)
        gained = (net.filter(w > 0)
                  .select(*[F.col(quote(c)) for c in outputs],
                          F.explode(F.array_repeat(F.lit(1), w.cast("int"))).alias("__dt_copy"))
                  .select(*[F.col(quote(c)) for c in outputs]))
        schema = self.target.schema
        candidates = (self.target.withColumn(_HELD, F.lit(0))
                      .unionByName(typed(gained, schema).withColumn(_HELD, F.lit(1))))
        return self._write(window(candidates, spec, tiebreak=_HELD), TOP_N_MERGED)

    def _holds_lost(self, lost, local: list | None, outputs: list[str]) -> bool:
        """Whether a row the change removes is among the DT's rows (on the DT's columns)."""
        from functools import reduce

        from pyspark.sql import functions as F

        if local is not None and not any(r[WEIGHT] < 0 for r in local):
            return False
        rows = self._held_rows(local)
        if rows is not None:
            return held_among(rows, [tuple(r[c] for c in outputs) for r in local if r[WEIGHT] < 0])
        held = self.target.toDF(*[f"__dt_t{k}" for k in range(len(outputs))])
        match = reduce(lambda a, b: a & b, [F.col(f"__dt_t{k}").eqNullSafe(F.col(quote(c)))
                                            for k, c in enumerate(outputs)])
        return held.join(F.broadcast(lost.distinct()), match, "left_semi").limit(1).count() > 0

    def _held_rows(self, local: list | None) -> set[tuple] | None:
        """The DT's rows, collected, when the change's rows are (`local`), the DT holds at most
        LOCAL_ROWS (its LIMIT) and its columns' values compare in Python as in Spark
        (change_cache.plain); else None. One small job instead of a join's few."""
        from dtcli.engine.runtime.change_cache import plain

        if local is None or self.spec.limit is None or self.spec.limit > LOCAL_ROWS \
                or not all(plain(f.dataType) for f in self.target.schema.fields):
            return None
        return {tuple(r) for r in self.target.collect()}

    def _write(self, rows, how: str) -> RefreshResult:
        """Write the difference between the new top rows and the DT's in one commit."""
        return self._write_difference(rows, self.target, how)


def held_among(held: set[tuple], gone: list[tuple]) -> bool:
    """Whether a row of `gone` is among `held` (values of change_cache.plain types, collected).
    Python's == is Spark's <=> for them but for NaN, which Spark holds equal to itself: a row
    with a NaN counts as held (the top n is then recomputed, which is never wrong).

    >>> held_among({(1, "x"), (2, None)}, [(2, None)]), held_among({(1, "x")}, [(1, "y")])
    (True, False)
    >>> held_among({(1, float("nan"))}, [(1, float("nan"))])
    True
    """
    if any(isinstance(v, float) and v != v for row in gone for v in row):
        return True
    return not held.isdisjoint(gone)


STRATEGIES = {TOP_N: top_n_refresh}   # refresh kinds this module does
