"""INCREMENTAL: apply the change of the DT's query since its frontier, in one atomic commit.

Each changed input's change set is read from the change data feed; the query is compiled into
queries for the rows its result gains and loses (`dtcli.sql.incremental_rewrite`); their net,
per distinct row, is merged into the DT together with the new frontier.

When the changes cannot be read (vacuumed, feed off, schema changed), the DT is reinitialized;
when the query has a construct the compiler does not handle, or the change does not fit the
table, it is recomputed FULL. Either way in the same refresh, with the reason recorded: a
change is never dropped silently.
"""

from __future__ import annotations

import itertools

from sqlglot import exp

from dtcli.engine import apply as applier
from dtcli.engine import literals as lit
from dtcli.engine.changes import WEIGHT, ChangeSet, ChangesUnavailable, quote, read_changes
from dtcli.engine.checkpoints import release
from dtcli.engine.context import RefreshContext, RefreshResult
from dtcli.engine.strategies import register
from dtcli.model import FULL, INCREMENTAL, REINITIALIZE
from dtcli.sql.incremental_rewrite import (
    BOTH,
    MINUS,
    NEW,
    OLD,
    PLUS,
    Bindings,
    DeltaCompiler,
    KeySet,
    Unsupported,
)

# Affected-key sets up to this size are also pushed into scans as literal IN lists, so that
# Delta's file skipping prunes the files that cannot hold an affected key, and a keyed DT
# replaces exactly those keys' rows in one `replaceWhere` commit.
LITERAL_KEYS = 10_000
_views = itertools.count()


@register(INCREMENTAL)
def incremental_refresh(ctx: RefreshContext) -> RefreshResult:
    try:
        return _Refresh(ctx).run()
    except ChangesUnavailable as err:
        return _fallback(ctx, REINITIALIZE, str(err))
    except (Unsupported, applier.Inconsistent) as err:
        return _fallback(ctx, FULL, f"incremental refresh not possible, refreshed FULL: {err}")
    except Exception as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
        return _fallback(ctx, FULL, f"incremental refresh failed, refreshed FULL: {first}")


def _fallback(ctx: RefreshContext, action: str, reason: str) -> RefreshResult:
    from dtcli.engine.strategies.full import full_refresh

    ctx.frontier.refresh_action = action
    result = full_refresh(ctx)
    result.extra.update({"refresh_action": action, "message": reason})
    if action == REINITIALIZE:
        result.extra["reinit_reason"] = reason
    return result


class _Refresh:
    def __init__(self, ctx: RefreshContext):
        self.ctx, self.spark, self.step = ctx, ctx.spark, ctx.step
        # with frozen_where: the active region at this refresh's data timestamp (Spark SQL)
        self.active: str | None = ctx.step.options.get("active")
        self.views: list[str] = []
        self.cached: list = []
        self.changes: dict[str, ChangeSet] = {}

    def run(self) -> RefreshResult:
        try:
            return self._run()
        finally:
            for view in self.views:
                self.spark.catalog.dropTempView(view)
            for df in self.cached:
                release(df)
            for cs in self.changes.values():
                cs.release()

    def _run(self) -> RefreshResult:
        step, spark = self.step, self.spark
        previous = step.previous.source_versions if step.previous else {}
        names = [i.name for i in step.inputs]
        changed: set[str] = set()
        frames: dict[str, tuple] = {}
        for inp in step.inputs:
            now = self.ctx.input_versions[inp.name]
            before = previous.get(inp.name)
            if before is None:
                raise ChangesUnavailable(f"the frontier records no version of input {inp.name}")
            if before > now:
                raise ChangesUnavailable(f"input {inp.name} is at version {now}, older than the "
                                         f"version {before} the table reflects (recreated?)")
            new = spark.table(quote(inp.name))      # bound by the executor at version `now`
            old = new
            if before < now:
                try:
                    old = self._read(inp.path, int(before))
                except Exception as exc:
                    raise ChangesUnavailable(f"input {inp.name} cannot be read at version "
                                             f"{before}: {str(exc).splitlines()[0][:300]}") from exc
                cs = read_changes(spark, inp.name, inp.path, int(before), int(now), old, new)
                self.changes[inp.name] = cs
                if cs.rows:
                    changed.add(inp.name)
            frames[inp.name] = (new, old)
        bindings = Bindings.for_inputs(names, changed)
        for inp in step.inputs:
            views = bindings.views[inp.name]
            new, old = frames[inp.name]
            self._view(views[NEW], new)
            self._view(views[OLD], old if inp.name in changed else new)
            if inp.name in changed:
                cs = self.changes[inp.name]
                self._view(views[PLUS], cs.plus())
                self._view(views[MINUS], cs.minus())
                self._view(views[BOTH], cs.both())
        if not changed:
            version = applier.commit_nothing(spark, step.path, self.ctx.frontier)
            return RefreshResult(table_version=version)

        compiler = DeltaCompiler(bindings, self._materialize)
        target = spark.read.format("delta").load(step.path)
        columns = target.columns
        _check_types(target.schema)
        query = step.options.get("delta_sql") or step.sql   # columns bound to their inputs
        keyed = compiler.keyed(query)
        if keyed is not None and keyed.keys.rows is not None:     # a literal-sized key set
            if not keyed.keys.rows:       # the change touches no key: the table stays as is
                version = applier.commit_nothing(spark, step.path, self.ctx.frontier)
                return RefreshResult(table_version=version)
            predicate = lit.key_predicate([columns[p] for p in keyed.positions], keyed.keys.rows)
            if predicate:                 # None: a NULL inside a multi-column key
                return self._replace(keyed, predicate, columns)
        plus, minus = compiler.compile(query)
        from pyspark.sql import functions as F

        parts = []
        for query, weight in ((plus, 1), (minus, -1)):
            if query is None:
                continue
            df = spark.sql(query.sql(dialect="spark"))
            if len(df.columns) != len(columns):
                raise Unsupported(f"the change query yields {len(df.columns)} columns, the table "
                                  f"has {len(columns)}")
            parts.append(self._as_table(df, columns).withColumn(WEIGHT, F.lit(weight)))
        if not parts:
            version = applier.commit_nothing(spark, step.path, self.ctx.frontier)
            return RefreshResult(table_version=version)
        union = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
        if self.active:       # frozen rows never change: only the active region's change applies
            union = union.filter(self.active)
        net = (union.groupBy(*[F.col(quote(c)) for c in columns])
               .agg(F.sum(WEIGHT).cast("long").alias(WEIGHT))
               .filter(F.col(WEIGHT) != 0)
               .localCheckpoint(eager=True))
        self.cached.append(net)
        stats = net.agg(F.count(F.lit(1)).alias("n"),
                        F.sum(F.when(F.col(WEIGHT) < 0, 1).otherwise(0)).alias("neg")).first()
        if not stats["n"]:
            version = applier.commit_nothing(spark, step.path, self.ctx.frontier)
            return RefreshResult(table_version=version)
        applied = applier.apply_row_changes(spark, step.path, net, self.ctx.frontier,
                                            negatives=bool(stats["neg"]), region=self.active)
        return RefreshResult(inserted=applied.inserted, deleted=applied.deleted,
                             copied=applied.copied, table_version=applied.version)

    def _replace(self, keyed, predicate: str, columns: list[str]) -> RefreshResult:
        """The rows of the affected keys, recomputed at the new versions, replace the ones the
        DT holds for those keys. Rows of those keys that did not change are rewritten too (and
        counted in the statistics); downstream DTs see them cancel out in their change sets."""
        df = self.spark.sql(keyed.query.sql(dialect="spark"))
        if len(df.columns) != len(columns):
            raise Unsupported(f"the change query yields {len(df.columns)} columns, the table "
                              f"has {len(columns)}")
        rows = self._as_table(df, columns)
        if self.active:       # the affected keys' rows in the active region only
            predicate, rows = f"({predicate}) AND ({self.active})", rows.filter(self.active)
        done = applier.replace(self.spark, self.step.path, predicate, rows, self.ctx.frontier)
        return RefreshResult(inserted=done.inserted, deleted=done.deleted,
                             table_version=done.version)

    # -- helpers ----------------------------------------------------------------------------

    def _as_table(self, df, columns: list[str]):
        """A change query's rows named (and, with `columns:` config, typed) as the table's."""
        from dtcli.engine.strategies.full import shaped

        return shaped(df, self.step.options.get("columns")) if self.step.options.get("columns") \
            else df.toDF(*columns)

    def _read(self, path: str, version: int):
        return self.spark.read.format("delta").option("versionAsOf", version).load(path)

    def _view(self, name: str, df) -> None:
        df.createOrReplaceTempView(name)
        self.views.append(name)

    def _materialize(self, query: exp.Query) -> KeySet:
        name = f"__dt_k{next(_views)}"
        df = self.spark.sql(f"SELECT DISTINCT * FROM ({query.sql(dialect='spark')}) AS __dt_keys")
        # a checkpoint cuts the lineage: later queries do not re-analyse the time travel
        df = df.localCheckpoint(eager=True)
        self.cached.append(df)
        self._view(name, df)
        literals, tuples = None, None
        rows = df.limit(LITERAL_KEYS + 1).collect()
        if len(rows) <= LITERAL_KEYS:
            types = [field.dataType for field in df.schema.fields]
            literals = [lit.literals([r[k] for r in rows], t) for k, t in enumerate(types)]
            if all(lit.renderable(t) for t in types):
                tuples = [tuple(lit.literal(v, t) for v, t in zip(r, types)) for r in rows]
        return KeySet(name, literals, tuples)


def _check_types(schema) -> None:
    from pyspark.sql.types import MapType

    def has_map(dt) -> bool:
        if isinstance(dt, MapType):
            return True
        for child in ("elementType", "valueType", "keyType"):
            if hasattr(dt, child) and has_map(getattr(dt, child)):
                return True
        return any(has_map(f.dataType) for f in getattr(dt, "fields", []) or [])
    for f in schema.fields:
        if has_map(f.dataType):
            raise Unsupported(f"column {f.name} holds a MAP, which rows cannot be compared on")

