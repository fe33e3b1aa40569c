"""The views one incremental refresh reads: every version and change of every input, bound
lazily (an old version costs Delta a rebuild of the table's state from its log: most refreshes
never read one), and the key sets and hub rows the change compiler asks to be kept
(sql/incremental_rewrite: `Materialize`, `Keep`). ChangeRefresh (incremental.py) builds on it;
`release` drops them all when the refresh ends."""

from __future__ import annotations

import itertools
import re
from functools import partial

from sqlglot import exp

from dtcli.engine.runtime.changes import WEIGHT, ChangeSet, ChangesUnavailable, quote, read_changes
from dtcli.engine.runtime.checkpoints import release
from dtcli.engine.runtime.context import RefreshContext
from dtcli.engine.runtime.key_sets import key_set
from dtcli.engine.runtime.materialize import LOCAL_ROWS, kept
from dtcli.engine.runtime.narrowing import KeptRows, Narrowing
from dtcli.engine.runtime.pinned import read_at
from dtcli.engine.runtime.spark_errors import SPARK_ERRORS
from dtcli.sql.incremental_rewrite import BOTH, MINUS, NEW, OLD, PLUS, PRIOR, WEIGHTED, Bindings, KeySet
from dtcli.sql.incremental_rewrite.change_filters import change_filters

_views = itertools.count()
VIEW_NAME = re.compile(r"__dt_i\d+_(?:new|old|plus|minus|both|weighted|prior)\b")


class RefreshViews:
    """The views of one refresh of `ctx`'s step, made when a query first reads them."""

    def __init__(self, ctx: RefreshContext):
        self.ctx, self.spark, self.step = ctx, ctx.spark, ctx.step
        self.views: list[str] = []
        self.cached: list = []
        self.changes: dict[str, ChangeSet] = {}
        self.lazy: dict[str, object] = {}        # view name -> function making its DataFrame
        self._bindings: Bindings | None = None
        # which scans the change's join values are pushed into (narrowing.py)
        self._narrow = Narrowing(self.changes, {i.name: (i.path, ctx.input_versions.get(i.name))
                                                for i in ctx.step.inputs})

    def release(self) -> None:
        for view in self.views:
            self.spark.catalog.dropTempView(view)
        for df in self.cached:
            release(df)
        for cs in self.changes.values():
            cs.release()

    def _small(self) -> bool:
        """Whether the planner expects this refresh's change to be small (unknown: yes)."""
        expected = self.step.options.estimate.change_rows
        return expected is None or expected <= LOCAL_ROWS

    def _bind(self) -> Bindings:
        """Read each changed input's change; every version and change of every input becomes
        a view, created when a query first reads it (an old version costs Delta a rebuild of
        the table's state from its log: most refreshes never read one). Once per refresh."""
        if self._bindings is None:
            self._bindings = self._read_bindings()
        return self._bindings

    def _read_bindings(self) -> Bindings:
        step, spark = self.step, self.spark
        previous = step.previous.source_versions if step.previous else {}
        read_columns = step.options.read_columns or {}
        changed: set[str] = set()
        versions: dict[str, tuple[int, int]] = {}
        # the rows of a change that can move the result at all (change_filters.py): an input
        # whose change has none is unchanged for this DT
        filters = change_filters(step.options.delta_sql or step.sql)
        for inp in step.inputs:
            now = self.ctx.input_versions[inp.name]
            before = previous.get(inp.name)
            if before is None:
                raise ChangesUnavailable(f"the frontier records no version of input {inp.name}")
            if before > now:
                raise ChangesUnavailable(f"input {inp.name} is at version {now}, older than the "
                                         f"version {before} the table reflects (recreated?)")
            versions[inp.name] = (int(before), int(now))
            if before < now:
                cs = read_changes(spark, inp.name, inp.path, int(before), int(now),
                                  read_columns.get(inp.name), small=self._small(),
                                  cache=self.ctx.changes)
                if inp.name in self.ctx.derived:
                    cs = cs.mapped(partial(self.ctx.derived[inp.name], carry=(WEIGHT,)))
                if cs.rows and inp.name.lower() in filters:
                    cs = cs.where(filters[inp.name.lower()])
                self.changes[inp.name] = cs
                if cs.rows:
                    changed.add(inp.name)
        bindings = Bindings.for_inputs([i.name for i in step.inputs], changed)
        for inp in step.inputs:
            views = bindings.views[inp.name]
            before, _ = versions[inp.name]
            new = partial(spark.table, quote(inp.name))     # bound by the executor
            self.lazy[views[NEW]] = new
            if inp.name not in changed:
                self.lazy[views[OLD]] = new
                continue
            cs = self.changes[inp.name]
            self.lazy[views[OLD]] = (lambda inp=inp, before=before: self._read_old(inp, before))
            self.lazy[views[PLUS]] = cs.plus
            self.lazy[views[MINUS]] = cs.minus
            self.lazy[views[BOTH]] = cs.both
            self.lazy[views[WEIGHTED]] = (lambda cs=cs: cs.weighted)
            self.lazy[views[PRIOR]] = (lambda cs=cs, new=new: cs.prior(new()))
        return bindings

    def _read_old(self, inp, version: int):
        try:
            rows = self._read(inp.path, version)
            return self.ctx.derived[inp.name](rows) if inp.name in self.ctx.derived else rows
        except SPARK_ERRORS as exc:
            raise ChangesUnavailable(f"input {inp.name} cannot be read at version "
                                     f"{version}: {str(exc).splitlines()[0][:300]}") from exc

    def _sql(self, text: str):
        """spark.sql over the refresh's views, creating those the text reads first."""
        for name in dict.fromkeys(VIEW_NAME.findall(text)):
            if name in self.lazy and name not in self.views:
                self._view(name, self.lazy[name]())
        return self.spark.sql(text)

    def _read(self, path: str, version: int):
        return read_at(self.ctx.pinned, self.spark, path, version)

    def _view(self, name: str, df) -> None:
        df.createOrReplaceTempView(name)
        self.views.append(name)

    def _materialize(self, query: exp.Query) -> KeySet:
        name = f"__dt_k{next(_views)}"
        df = self._sql(f"SELECT DISTINCT * FROM ({query.sql(dialect='spark')}) AS __dt_keys")
        # kept (collected or checkpointed): later queries do not re-analyse the time travel
        df, rows = kept(df, LOCAL_ROWS, self._small())
        self.cached.append(df)
        self._view(name, df)
        if rows is not None:      # their values narrow the scans joined to a derived table's change
            self._narrow.kept[name] = KeptRows(rows, df.schema)
        return key_set(name, rows, [field.dataType for field in df.schema.fields])

    def _keep(self, query: exp.Query) -> str:
        """A join hub's rows that the change reaches (sql/incremental_rewrite/hub.py), computed
        once for every term that reads them: collected when few (a local relation, whose size
        Spark knows, and whose join values narrow the scans joined to it), else checkpointed."""
        name = f"__dt_k{next(_views)}"
        df, rows = kept(self._sql(query.sql(dialect="spark")), LOCAL_ROWS, self._small())
        self.cached.append(df)
        self._view(name, df)
        if rows is not None:      # their join values narrow the scans joined to them
            self._narrow.kept[name] = KeptRows(rows, df.schema)
        return name
