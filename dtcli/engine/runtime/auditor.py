"""The checks of one refresh evaluated on a pending commit (engine/runtime/audit.py hands it over).

`Pending` is what a commit is about to do; `Auditor.screen` keeps out the rows a `drop`
expectation rejects, evaluates every other check by its shape, records each result, and raises
`AuditFailed` when a check whose action is `fail` found rows. Row-level checks are all counted in
one pass over the written rows; `unique` and combinations read only the old rows of the written
keys (a key predicate Delta skips files by, or a semi join when the keys are many).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import reduce

from deltalake.exceptions import DeltaError

from dtcli.data_tests import (
    ERROR_STATUS,
    FAILED_STATUS,
    KEEP_OUT,
    KEY,
    LINK,
    PASS,
    QUERY,
    ROW,
    SKIPPED_STATUS,
    STOP,
    TEST_FAILED,
    WARN_STATUS,
    Check,
    CheckResult,
    SampleRow,
)
from dtcli.engine.runtime.changes import WEIGHT, quote
from dtcli.engine.runtime.materialize import LOCAL_ROWS, kept
from dtcli.engine.runtime.spark_errors import SPARK_ERRORS

SAMPLES = 5            # failing rows a result keeps, to show
_VALUE_CHARS = 80      # a sample value longer than this is cut


class AuditFailed(Exception):
    """A check whose action is `fail` found rows: the refresh commits nothing."""

    def __init__(self, message: str, results: list[CheckResult]):
        super().__init__(message)
        self.results = results

    def getCondition(self) -> str:     # read as Spark's errors are (spark_errors.error_condition)
        return TEST_FAILED


@dataclass
class Pending:
    """What a commit is about to do: `written` (the table's columns + WEIGHT) adds, or with a
    negative weight removes, copies of rows; `kept` are the old rows that stay (None: none).
    `local`: `written`'s rows on the driver, when few."""

    written: object
    kept: object | None
    local: list | None = None
    # the columns the predicate of the replaced rows reads (a slice replacement): an old row
    # whose key holds them all had that key's values, so it was replaced, not kept
    replaced_by: frozenset[str] | None = None


class Auditor:
    def __init__(self, spark, step, checks: list[Check], frontier):
        self.spark, self.step, self.checks = spark, step, checks
        self.frontier = frontier        # its refresh_action says when a strategy fell back to FULL
        self.inside = False
        self.results: dict[str, CheckResult] = {}
        self.held: list = []        # checkpoints to release after the commit
        # a weighted change's key checks, waiting for its commit path (audit.change)
        self.deferred: Pending | None = None
        self.deferred_checks: list[Check] = []

    @property
    def outcome(self) -> list[CheckResult]:
        return list(self.results.values())

    def release(self) -> None:
        from dtcli.engine.runtime.checkpoints import release

        for df in self.held:
            release(df)
        self.held.clear()

    def screen(self, pending: Pending, checks: list[Check] | None = None,
               stop: bool = True) -> tuple[object, list | None]:
        """Drop, then check; raise AuditFailed when a `fail` check found rows (unless not `stop`:
        more checks follow). `checks`: only these (no drop: the rows were screened before), for
        the key checks a change deferred."""
        from pyspark.sql import functions as F

        if checks is None:
            written, local = self._drop(pending)
            pending = Pending(written, pending.kept, local, pending.replaced_by)
            checks = [c for c in self.checks if c.action != KEEP_OUT and c not in self.deferred_checks]
            for check in [c for c in checks if c.proven]:
                self._result(check, PASS, 0, message=f"proven by the query: {check.proven}")
        else:
            written, local = pending.written, pending.local
        rows = [c for c in checks if c.shape == ROW and not c.proven]
        counts = self._row_counts(rows, pending)
        for check in checks:
            if check.proven:
                continue
            try:
                missing = self._missing(check)
                if missing:
                    self._result(check, SKIPPED_STATUS, 0, message=f"{missing} does not exist yet: not checked")
                    continue
                if check.shape == ROW:
                    found = counts[check.name] if check.name in counts else _sums(
                        pending.written, pending.local, [F.when(_flag(check), F.col(WEIGHT)).otherwise(0)])[0]
                    samples = _samples(pending.written.filter(F.col(WEIGHT) > 0).filter(_flag(check))) \
                        if found else []
                else:
                    found, samples = _EVALUATE[check.shape](self, check, pending)
            except (*SPARK_ERRORS, DeltaError, OSError) as exc:   # the check broke (its SQL, a table it reads):
                # an error-severity one fails the refresh
                from dtcli.engine.runtime.spark_errors import error_message

                self._result(check, ERROR_STATUS, 0,
                             message=f"{check.name} could not run: {error_message(exc)[:300]}")
                continue
            status = PASS if not found else (FAILED_STATUS if check.action == STOP else WARN_STATUS)
            self._result(check, status, found, samples)
        if stop:
            self.stop_if_failed()
        return written, local

    def stop_if_failed(self) -> None:
        stopped = self.stopped()
        if stopped:
            raise AuditFailed("; ".join(said(r) for r in stopped) + "; nothing was committed", self.outcome)

    def stopped(self) -> list[CheckResult]:
        """The results that stop a refresh: failed checks, and error-severity ones that could
        not run."""
        return [r for r in self.results.values()
                if r.status == FAILED_STATUS or (r.status == ERROR_STATUS and r.action == STOP)]

    def _result(self, check: Check, status: str, failures: int, samples: list | None = None,
                message: str | None = None) -> None:
        result = CheckResult(name=check.name, unique_id=check.unique_id, kind=check.kind, test=check.test,
                             table=self.step.name, status=status, failures=int(failures),
                             action=check.action, samples=samples or [], column=check.column)
        result.message = message or (said(result) if failures else None)
        self.results[check.name] = result

    def _drop(self, pending: Pending) -> tuple[object, list | None]:
        """The written rows without those a `drop` expectation keeps out, each drop counted (in
        written copies; a removed copy of such a row is dropped too, uncounted)."""
        from pyspark.sql import functions as F

        drops = [c for c in self.checks if c.action == KEEP_OUT]
        if not drops:
            return pending.written, pending.local
        written = pending.written
        flags = [_flag(c) for c in drops]
        positive = F.when(F.col(WEIGHT) > 0, F.col(WEIGHT)).otherwise(F.lit(0))
        keep = reduce(lambda a, b: a & b, [~f for f in flags])
        *counts, anywhere = _sums(written, pending.local, [F.when(f, positive).otherwise(0) for f in flags]
                                  + [F.when(keep, 0).otherwise(1)])
        for check, count in zip(drops, counts):
            samples = _samples(written.filter(F.col(WEIGHT) > 0).filter(_flag(check))) if count else []
            self._result(check, WARN_STATUS if count else PASS, count, samples,
                         message=f"{count} row(s) kept out of the table" if count else None)
        if not anywhere:        # no row, written or removed, breaks a drop expectation
            return written, pending.local
        written = written.filter(keep)
        written, local = kept(written, LOCAL_ROWS, pending.local is not None)
        self.held.append(written)
        return written, local

    # -- the shapes ------------------------------------------------------------------------------

    def _row_counts(self, checks: list[Check], pending: Pending) -> dict[str, int]:
        """The written copies breaking each row-level check, all counted in one pass (a check
        that cannot be evaluated raises, and is then evaluated alone to say which)."""
        from pyspark.sql import functions as F

        if not checks:
            return {}
        positive = F.col(WEIGHT) > 0
        try:
            counts = _sums(pending.written, pending.local,
                           [F.when(_flag(c) & positive, F.col(WEIGHT)).otherwise(0) for c in checks])
            return {c.name: n for c, n in zip(checks, counts)}
        except SPARK_ERRORS:
            out = {}
            for c in checks:
                try:
                    out[c.name] = _sums(pending.written, pending.local,
                                        [F.when(_flag(c) & positive, F.col(WEIGHT)).otherwise(0)])[0]
                except SPARK_ERRORS:
                    pass            # evaluated again by screen, which reports the error
            return out

    def _keys(self, check: Check, pending: Pending):
        """Keys written whose rows the table will hold more than once."""
        from pyspark.sql import functions as F

        from dtcli.engine.runtime import key_predicates

        cols = list(check.columns or [])
        key = [F.col(quote(c)) for c in cols]
        written = pending.written.filter(check.where) if check.where else pending.written
        within = pending.replaced_by is not None and pending.replaced_by <= {c.lower() for c in cols}
        local = _local_duplicates(cols, pending) if (pending.kept is None or within) \
            and pending.local is not None and not check.where else None
        if local is not None:
            return local
        delta = written.groupBy(*key).agg(F.sum(WEIGHT).alias("__dt_delta"),
                                          F.max(F.col(WEIGHT)).alias("__dt_top"))
        if pending.kept is None or within:      # no kept row can share a written key: count the written
            dups = delta.select(*key, F.col("__dt_delta").alias("rows")).filter(F.col("rows") > 1)
            count = dups.count()
            return count, (_samples(dups) if count else [])
        keys_df, keys = kept(delta.filter(F.col("__dt_top") > 0), LOCAL_ROWS, pending.local is not None)
        self.held.append(keys_df)
        if keys is not None and not keys:
            return 0, []
        old = pending.kept.filter(check.where) if check.where else pending.kept
        types = [old.schema[c].dataType for c in cols]
        predicate = None
        if keys is not None and all(key_predicates.renderable(t) for t in types):
            predicate = key_predicates.match_keys(cols, types, [tuple(r[c] for c in cols) for r in keys])
        old = old.filter(predicate) if predicate else \
            old.join(F.broadcast(keys_df.select(*key)), _null_safe(old, keys_df, cols), "left_semi")
        held = old.groupBy(*key).agg(F.count(F.lit(1)).alias("__dt_held"))
        if keys is not None:            # few keys: the old rows' counts come back, summed here
            counts = {tuple(r[c] for c in cols): r["__dt_held"] for r in held.collect()}
            total = [(r, counts.get(tuple(r[c] for c in cols), 0) + r["__dt_delta"]) for r in keys]
            dups = [{**{c: r[c] for c in cols}, "rows": n} for r, n in total if n > 1]
            return len(dups), [_jsonable(d) for d in dups[:SAMPLES]]
        joined = keys_df.alias("k").join(held.alias("h"), _null_safe(keys_df, held, cols, "k", "h"), "left") \
            .select(*[F.col(f"k.{quote(c)}").alias(c) for c in cols],
                    (F.coalesce(F.col("h.__dt_held"), F.lit(0)) + F.col("k.__dt_delta")).alias("rows"))
        dups = joined.filter(F.col("rows") > 1)
        count = dups.count()
        return count, (_samples(dups) if count else [])

    def _link(self, check: Check, pending: Pending):
        """Written values of the column that the `to` table's field does not hold."""
        from pyspark.sql import functions as F

        to = check.to or {}
        target = self._table(to["name"], to["path"])
        col = F.col(quote(check.column))
        values = pending.written.filter(F.col(WEIGHT) > 0).filter(col.isNotNull())
        if check.where:
            values = values.filter(check.where)
        values = values.select(col.alias("__dt_value")).distinct()
        missing = values.join(target.select(F.col(quote(to["field"])).alias("__dt_value")).distinct(),
                              "__dt_value", "left_anti")
        count = missing.count()
        samples = [{check.column: s["__dt_value"]} for s in _samples(missing)] if count else []
        return count, samples

    def _query(self, check: Check, pending: Pending):
        """A singular test over the table as the commit leaves it (the other tables as this run
        reads them)."""
        made: list[str] = []
        try:
            for name, path in (check.reads or {}).items():
                if path == "":          # every row written (a recompute, `dt test`): the table as it will be
                    view = pending.written.drop(WEIGHT) if pending.kept is None else _pending_table(pending)
                elif self._bound(name):
                    continue
                else:
                    view = self.spark.read.format("delta").load(path)
                view.createOrReplaceTempView(name)
                made.append(name)
            failing = self.spark.sql(check.sql)
            count = failing.count()
            return count, (_samples(failing) if count else [])
        finally:
            for name in made:
                self.spark.catalog.dropTempView(name)

    def _missing(self, check: Check) -> str | None:
        """A table the check reads that has not been created yet (created later in this run, or
        never refreshed), which the check then cannot read."""
        from dtcli.state.delta_log import open_table

        paths = {check.to["name"]: check.to["path"]} if check.to else dict(check.reads or {})
        for name, path in paths.items():
            if path and not self._bound(name) and open_table(path) is None:
                return name
        return None

    def _bound(self, name: str) -> bool:
        return any(i.name == name for i in self.step.inputs)

    def _table(self, name: str, path: str):
        return self.spark.table(quote(name)) if self._bound(name) else self.spark.read.format("delta").load(path)


_EVALUATE = {KEY: Auditor._keys, LINK: Auditor._link, QUERY: Auditor._query}


def _local_duplicates(cols: list[str], pending: Pending) -> tuple[int, list] | None:
    """Keys the written rows (on the driver, none kept beside them) hold more than once, counted
    here: three small Spark jobs fewer per refresh than the same count over a local relation.
    None for a NaN in a key (Spark groups NaNs together; Python's NaNs are all different)."""
    fields = {f.lower(): f for f in pending.written.columns}
    names = [fields.get(c.lower(), c) for c in cols]
    counts: dict[tuple, int] = {}
    for r in pending.local or ():
        k = tuple(r[n] for n in names)
        if any(isinstance(v, float) and v != v for v in k):
            return None
        counts[k] = counts.get(k, 0) + int(r[WEIGHT])
    dups = [{**dict(zip(cols, k)), "rows": n} for k, n in counts.items() if n > 1]
    return len(dups), [_jsonable(d) for d in dups[:SAMPLES]]


def _flag(check: Check):
    """True for a written row that breaks the check (NULL counts as not breaking it)."""
    from pyspark.sql import functions as F

    text = f"({check.violation})" + (f" AND ({check.where})" if check.where else "")
    return F.coalesce(F.expr(text), F.lit(False))


def _sums(df, local: list | None, columns: list) -> list[int]:
    """Each column summed over `df`; for a DataFrame of rows already on the driver the values
    are computed without a Spark job (Spark evaluates a projection of local rows while it
    plans) and summed here."""
    from pyspark.sql import functions as F

    if local is not None:
        rows = df.select(*[c.cast("long").alias(f"s{k}") for k, c in enumerate(columns)]).collect()
        return [sum(int(r[k] or 0) for r in rows) for k in range(len(columns))]
    row = df.agg(*[F.sum(c).cast("long").alias(f"s{k}") for k, c in enumerate(columns)]).first()
    return [int(row[k] or 0) for k in range(len(columns))]


def _samples(df) -> list[SampleRow]:
    out = []
    for row in df.drop(WEIGHT).limit(SAMPLES).collect():
        out.append(_jsonable(row.asDict(recursive=True)))
    return out


def _jsonable(row: dict[str, object]) -> SampleRow:
    """A sampled row as JSON: numbers and booleans as they are, anything else as (short) text."""
    def value(v):
        if v is None or isinstance(v, (bool, int, float)):
            return v
        text = str(v)
        return text if len(text) <= _VALUE_CHARS else text[:_VALUE_CHARS - 1] + "…"
    return {k: value(v) for k, v in row.items()}


def said(result: CheckResult) -> str:
    if result.status == ERROR_STATUS:
        return result.message or f"{result.name} could not run"
    what = "expectation" if result.kind == "expectation" else "data test"
    rows = f"{result.failures} row{'s' if result.failures != 1 else ''}"
    shown = ", ".join(json.dumps(s, default=str, separators=(",", ":")) for s in result.samples[:3])
    return f"{what} {result.name} failed: {rows}" + (f", e.g. {shown}" if shown else "")


def _null_safe(left, right, cols: list[str], la: str | None = None, ra: str | None = None):
    from pyspark.sql import functions as F

    def side(df, alias, c):
        return F.col(f"{alias}.{quote(c)}") if alias else df[quote(c)]
    return reduce(lambda a, b: a & b, [side(left, la, c).eqNullSafe(side(right, ra, c)) for c in cols])


def _pending_table(pending: Pending):
    """The table as the commit leaves it: the rows kept, plus the written copies, minus the
    removed ones."""
    from pyspark.sql import functions as F

    cols = [c for c in pending.written.columns if c != WEIGHT]
    rows = [F.col(quote(c)) for c in cols]
    parts = [pending.written.select(*rows, F.col(WEIGHT))]
    if pending.kept is not None:
        parts.insert(0, pending.kept.select(*rows, F.lit(1).cast("long").alias(WEIGHT)))
    net = reduce(lambda a, b: a.unionByName(b), parts).groupBy(*rows).agg(F.sum(WEIGHT).alias(WEIGHT)) \
        .filter(F.col(WEIGHT) > 0)
    return net.select(*rows, F.explode(F.array_repeat(F.lit(1), F.col(WEIGHT).cast("int"))).alias("__dt_copy")) \
        .select(*rows)
