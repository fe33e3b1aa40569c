"""INCREMENTAL: apply the change of the DT's query since its frontier, in one atomic commit.

Each changed input's change set is read from the change data feed; the query is compiled into
queries for the rows its result gains and loses (`dtcli.sql.incremental_rewrite`); their net,
per distinct row, is merged into the DT together with the new frontier.

When the changes cannot be read (vacuumed, feed off, schema changed), the DT is reinitialized;
when the query has a construct the compiler does not handle, or the change does not fit the
table, or the incremental refresh fails, it is recomputed FULL under ADAPTIVE. Either way in the
same refresh, with the reason recorded: a change is never dropped silently. A DT whose
`refresh_mode` is `incremental` is not recomputed instead: its refresh fails with the error.
"""

from __future__ import annotations

from dtcli.engine.runtime import apply as applier
from dtcli.engine.runtime import commit, key_predicates, listed, own_rows, rewrite
from dtcli.engine.runtime.audit import has_drops
from dtcli.engine.runtime.changes import WEIGHT, ChangesUnavailable, quote
from dtcli.engine.runtime.context import RefreshContext, RefreshResult
from dtcli.engine.runtime.fallback import guarded
from dtcli.engine.runtime.materialize import LOCAL_ROWS, kept
from dtcli.engine.runtime.query_shape import SINGLE_ROW_RECOMPUTED, holds_one_row
from dtcli.engine.runtime.strategies.refresh_views import RefreshViews
from dtcli.engine.runtime.table_state import Prefetch
from dtcli.model import INCREMENTAL
from dtcli.sql.incremental_rewrite import DeltaCompiler, Unsupported
from dtcli.sql.incremental_rewrite.own_rows import AggregateUpkeep
from dtcli.sql.types import map_reason

# How the change was applied, as the history's `refresh_strategy` records it (with
# apply.APPENDED, SLICE_REPLACED, MERGED for the general case).
OWN_ROWS_AGGREGATE, OWN_ROWS_WINDOW = "own_rows_aggregate", "own_rows_window"
KEYS_RECOMPUTED, NO_ROW_CHANGED = "keys_recomputed", "no_row_changed"


def incremental_refresh(ctx: RefreshContext) -> RefreshResult:
    from dtcli.engine.runtime.strategies.full import full_refresh

    return guarded(ctx, ChangeRefresh(ctx).run, full_refresh)


class ChangeRefresh(RefreshViews):
    """One incremental refresh: the inputs' changes bound as views (refresh_views.py), the change
    compiled and applied (`_run`; strategies over the change of a query under the DT's, as
    top_n.py's, override it)."""

    def __init__(self, ctx: RefreshContext):
        super().__init__(ctx)
        # with frozen_where: the active region at this refresh's data timestamp (Spark SQL)
        self.active: str | None = ctx.step.options.regions.active
        self.whole = rewrite.applies(ctx.step.options)     # a small DT is written whole

    def run(self) -> RefreshResult:
        prefetch = Prefetch(self.spark, self._scanned_later(), self.ctx.pinned)
        try:
            return self._run()
        finally:
            prefetch.join()
            self.release()

    def _run(self) -> RefreshResult:
        step, spark = self.step, self.spark
        # one row recomputed, but running totals, which follow the change (own_rows.py)
        one_row = not self.active and holds_one_row(step.options.delta_sql or step.sql)
        if one_row and not step.options.running_totals:
            return self._nothing() if self._inputs_unmoved() else self._one_row()
        bindings = self._bind()
        if not bindings.changed:
            return self._nothing()
        compiler = DeltaCompiler(bindings, self._materialize, self._narrow, self._keep,
                                 self._narrow.hub_bytes, self._one_row_inputs())
        target = listed.read(spark, step.path)
        columns = target.columns
        check_types(target.schema)
        query = step.options.delta_sql or step.sql   # columns bound to their inputs
        # a frozen region's predicate may name columns the change's rows do not have (a window's
        # rank): those DTs recompute their affected keys, whose rows the predicate can filter
        # ... and a `drop` expectation leaves rows out that the DT's own rows would then miss
        if not step.options.columns and not self.active and not has_drops():
            done = self._from_own_rows(compiler, query, target)
            if done is not None:
                return done
        if one_row:
            return self._one_row()
        keyed = compiler.keyed(query)
        types = [f.dataType for f in target.schema.fields]
        if keyed is not None and keyed.keys.rows is not None and _named_as_stored(keyed, types):
            if not keyed.keys.rows:       # the change touches no key: the table stays as is
                return self._nothing()
            predicate = key_predicates.match_keys([columns[p] for p in keyed.positions],
                                                  [types[p] for p in keyed.positions],
                                                  keyed.keys.rows) if keyed.positions else "true"
            if predicate:                 # None: a NULL inside a multi-column key
                return self._replace(keyed, predicate, columns)
        return self._rows_changed(compiler, query, columns)

    def _one_row_inputs(self) -> set[str]:
        """The kept aggregates without GROUP BY (one row each), for a DT small enough to be
        written whole (slice_commit.py's setting): when one of them moves and is compared with
        every row, all of the DT's keys are recomputed at once (single_row.moves_every_row),
        one read of the inputs instead of the terms' two, and the DT written whole."""
        from dtcli.engine.runtime.slice_commit import whole_bytes
        from dtcli.sql.incremental_rewrite.relations import parse
        from dtcli.state.delta_log import file_stats

        single = {k.name for k in self.step.options.kept or [] if not parse(k.block_sql).args.get("group")}
        if not single:
            return set()
        stats = file_stats(self.step.path)
        return single if stats is not None and stats.bytes <= whole_bytes(self.spark) else set()

    def _scanned_later(self) -> list:
        """The tables whose state a refresh of a join needs after reading its changes: the
        inputs at their current versions (each change is joined with the others' rows), then
        the DT. A DT of one input scans only itself, soon after its changes are read: building
        its state on the side took as long as in line, the two threads sharing the cores
        (measured at TPC-H SF3 on 2 cores: 5-7 % slower, so it is not done)."""
        step = self.step
        if len(step.inputs) < 2:
            return []
        return [*((i.path, self.ctx.input_versions[i.name]) for i in step.inputs), (step.path, None)]

    def _inputs_unmoved(self) -> bool:
        """For a DT whose one row is recomputed: whether no input's change has a row the
        query's conditions keep (change_filters.py), so that the row cannot move and the refresh
        commits the frontier alone instead of recomputing it (a scan of every input, against
        reading the change: for a filter on recent dates, most changes). A change that cannot
        be read is no reason to fail: the row is recomputed, as it needs no change."""
        try:
            return not self._bind().changed
        except ChangesUnavailable:
            return False

    def _state_unchanged(self, role: str, recorded: int | None) -> bool:
        """For a DT kept over internal state: whether no input's change can move its rows (every
        change row fails the query's conditions, change_filters.py). Then the state is not
        brought up (it catches up from its own frontier at the next refresh that needs it) and
        the DT records the state's version it recorded before."""
        if recorded is None or self._bind().changed:
            return False
        self.ctx.frontier.record_state(role, recorded)
        return True

    def _nothing(self) -> RefreshResult:
        version = applier.commit_nothing(self.spark, self.step.path, self.ctx.frontier)
        return RefreshResult(table_version=version, strategy=NO_ROW_CHANGED)

    def _from_own_rows(self, compiler: DeltaCompiler, query: str, target) -> RefreshResult | None:
        """Aggregates and windows maintained from the DT's own rows (see engine/runtime/own_rows.py);
        None when the query is not of that shape or the change does not allow it."""
        upkeep = compiler.own_rows(query)
        if upkeep is None:
            return None
        if isinstance(upkeep, AggregateUpkeep):
            done = own_rows.aggregate(self.spark, self._sql, self.step.path, target, upkeep, self.ctx.frontier,
                                      self.cached, self._small(), self.whole,
                                      hand_on=self.step.options.read_by_tables)
        else:
            done = own_rows.window(self.spark, self._sql, self.step.path, target, upkeep, self.ctx.frontier,
                                   self.cached, self._small(), self.whole)
        if done is None:
            return None
        how = OWN_ROWS_AGGREGATE if isinstance(upkeep, AggregateUpkeep) else OWN_ROWS_WINDOW
        if not (done.inserted or done.deleted):       # the change reached no group or partition
            how = NO_ROW_CHANGED
        if done.change is not None and self.ctx.changes is not None:    # the run's readers need no feed
            start, fields, rows = done.change
            if done.version == start + 1:
                self.ctx.changes.seed(self.step.path, start, done.version, fields, rows)
        return RefreshResult(inserted=done.inserted, deleted=done.deleted, table_version=done.version,
                             strategy=how)

    def _one_row(self) -> RefreshResult:
        """A scalar aggregate's row recomputed from the inputs at their new versions (the views
        the run bound) and written over the one the DT holds (query_shape.py)."""
        columns = self.spark.read.format("delta").load(self.step.path).columns
        rows = self._as_table(self.spark.sql(self.step.sql), columns)
        if self.whole:
            done = rewrite.overwrite_all(self.spark, self.step.path, rows, self.ctx.frontier,
                                         self.step.options.previous_rows or 0)
        else:
            done = applier.replace(self.spark, self.step.path, "true", rows, self.ctx.frontier)
        return RefreshResult(inserted=done.inserted, deleted=done.deleted, table_version=done.version,
                             strategy=SINGLE_ROW_RECOMPUTED)

    def _rows_changed(self, compiler: DeltaCompiler, query: str, columns: list[str]) -> RefreshResult:
        """The general case: the rows the DT gains and loses, netted per distinct row, applied."""
        from pyspark.sql import functions as F

        plus, minus = compiler.compile(query)
        parts = []
        for query, weight in ((plus, 1), (minus, -1)):
            if query is None:
                continue
            df = self._sql(query.sql(dialect="spark"))
            if len(df.columns) != len(columns):
                raise Unsupported(f"the change query yields {len(df.columns)} columns, the table "
                                  f"has {len(columns)}")
            parts.append(self._as_table(df, columns).withColumn(WEIGHT, F.lit(weight)))
        if not parts:
            return self._nothing()
        union = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
        if self.active:       # frozen rows never change: only the active region's change applies
            union = union.filter(self.active)
        net, local = kept(union.groupBy(*[F.col(quote(c)) for c in columns])
                          .agg(F.sum(WEIGHT).cast("long").alias(WEIGHT))
                          .filter(F.col(WEIGHT) != 0), LOCAL_ROWS, self._small())
        self.cached.append(net)
        if local is not None and not local:
            return self._nothing()
        applied = self._apply_net(net, local, region=self.active)
        return RefreshResult(inserted=applied.inserted, deleted=applied.deleted,
                             copied=applied.copied, table_version=applied.version,
                             strategy=applied.how)

    def _apply_net(self, net, local: list | None, region: str | None = None) -> applier.Applied:
        """`net` (the DT's columns + WEIGHT, one row per distinct row; `local`: its rows when
        collected) applied in one commit. A change another DT reads, its rows on the driver, is
        also kept for the run's readers of this DT (ChangeCache.seed): they read no change feed."""
        before = self._hand_on_from(net, local)
        applied = applier.apply_row_changes(self.spark, self.step.path, net, self.ctx.frontier,
                                            local=local, region=region,
                                            prefer=(self.step.options.layout.sort_by or [None])[0],
                                            whole=rewrite.changes_whole if self.whole else None)
        if before is not None and applied.version == before + 1:
            self.ctx.changes.seed(self.step.path, before, applied.version, list(net.schema.fields),
                                  [tuple(r) for r in local])
        return applied

    def _hand_on_from(self, net, local: list | None) -> int | None:
        """The DT's version before the commit of `net`, when its change is to be handed on: a DT
        another DT reads, the rows on the driver, all of them written (no `drop` expectation) and
        typed as the table's columns (the feed would show the table's values); else None."""
        if local is None or self.ctx.changes is None or not self.step.options.read_by_tables or has_drops():
            return None
        table = self.spark.read.format("delta").load(self.step.path).schema
        if [f.dataType for f in net.schema.fields[:-1]] != [f.dataType for f in table.fields]:
            return None
        return commit.last_commit(self.step.path)["version"]

    def _replace(self, keyed, predicate: str, columns: list[str]) -> RefreshResult:
        """The rows of the affected keys, recomputed at the new versions, replace the ones the
        DT holds for those keys. Rows of those keys that did not change are rewritten too (and
        counted in the statistics); downstream DTs see them cancel out in their change sets."""
        df = self._sql(keyed.query.sql(dialect="spark"))
        if len(df.columns) != len(columns):
            raise Unsupported(f"the change query yields {len(df.columns)} columns, the table "
                              f"has {len(columns)}")
        rows = self._as_table(df, columns)
        if self.active:       # the affected keys' rows in the active region only
            predicate, rows = f"({predicate}) AND ({self.active})", rows.filter(self.active)
        write = rewrite.replace_whole if self.whole else applier.replace
        done = write(self.spark, self.step.path, predicate, rows, self.ctx.frontier)
        return RefreshResult(inserted=done.inserted, deleted=done.deleted,
                             table_version=done.version, strategy=KEYS_RECOMPUTED)

    def _write_difference(self, rows, target, how: str) -> RefreshResult:
        """Write the difference between `rows` (the DT's new rows, in its columns' order) and
        `target` (its current rows) in one commit: a change of the size of what moved."""
        from pyspark.sql import functions as F

        columns = target.columns
        cols = [F.col(quote(c)) for c in columns]
        diff = (rows.toDF(*columns).select(*cols, F.lit(1).cast("long").alias(WEIGHT))
                .unionByName(target.select(*cols, F.lit(-1).cast("long").alias(WEIGHT)))
                .groupBy(*cols).agg(F.sum(WEIGHT).cast("long").alias(WEIGHT))
                .filter(F.col(WEIGHT) != 0))
        net, local = kept(diff, LOCAL_ROWS, True)
        self.cached.append(net)
        if local is not None and not local:
            return self._nothing()
        done = applier.apply_row_changes(self.spark, self.step.path, net, self.ctx.frontier, local=local)
        return RefreshResult(inserted=done.inserted, deleted=done.deleted, copied=done.copied,
                             table_version=done.version, strategy=how)

    # -- helpers ----------------------------------------------------------------------------

    def _as_table(self, df, columns: list[str]):
        """A change query's rows named (and, with `columns:` config, typed) as the table's."""
        from dtcli.engine.runtime.strategies.full import shaped

        return shaped(df, self.step.options.columns) if self.step.options.columns \
            else df.toDF(*columns)

def check_types(schema) -> None:
    """The planner's verdict on a MAP column (planning/query_mode.py), for a DT whose output
    types it could not infer."""
    for f in schema.fields:
        reason = map_reason(f.name, f.dataType.simpleString())
        if reason:
            raise Unsupported(reason)


def _named_as_stored(keyed, types: list) -> bool:
    """Whether the key values name the DT's rows as stored: a subset of the keys may be read
    through another input's column the query equates with the key (reached_keys.py), of another
    type (an INT joined to a BIGINT, a string to a number); its values are then not written as
    literals of the DT's type, and the change is found row by row instead."""
    keys = keyed.keys
    if keys.of is None:
        return True
    return keys.types is not None and all(t == types[p] for t, p in zip(keys.types, keyed.positions))


STRATEGIES = {INCREMENTAL: incremental_refresh}   # refresh kinds this module does
