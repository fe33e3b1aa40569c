"""Audit before publish: a refresh checks what it is about to commit, and commits only if it passes.

Every refresh ends in one Delta commit, written by one of a few primitives (apply.py's change
and slice replacement, commit.replace_table, a custom table's statement). Just before it writes,
each primitive hands its `Pending` write here: the rows it writes (with a weight: a negative
one removes a copy) and the old rows that stay. The DT's checks (dtcli/data_tests.py, compiled
by planning) are evaluated on that, at the cost of the change:

* row-level checks (not_null, accepted_values, expression_is_true, expectations) and
  `relationships` read only the rows written;
* `unique` and unique_combination_of_columns count, for each key written, the rows the table
  will hold: the old rows that stay with that key (found by a key predicate Delta skips files
  by) plus the written ones;
* a singular test reads the table as it will be (the whole table: its query may read anything);
* a FULL refresh writes every row, so it checks them all.

A failing check whose action is `fail` (error severity, `fail` expectations) raises `AuditFailed`
before the write: nothing is committed, the DT stays at its last good version, and the refresh
is recorded FAILED with the state_code DATA_TEST_FAILED, the check, the count and a few rows.
`warn` checks record their counts; `drop` expectations keep the violating rows out of the write
(and count them). With no checks configured the primitives write as before, untouched.

The auditor of the refresh running in a thread is found through a context variable, so the
commit primitives need no new parameter: the executor sets it around the refresh.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from dtcli.data_tests import KEEP_OUT, KEY
from dtcli.engine.runtime import listed
from dtcli.engine.runtime.auditor import AuditFailed, Auditor, Pending
from dtcli.engine.runtime.changes import WEIGHT, quote
from dtcli.engine.runtime.materialize import LOCAL_ROWS, checkpointed, kept
from dtcli.model import INCREMENTAL

__all__ = ["AuditFailed", "auditing", "change", "has_drops", "idle", "rows", "settle", "statement", "suspended"]


_current: ContextVar[Auditor | None] = ContextVar("dt_auditor", default=None)


@contextmanager
def auditing(ctx) -> Iterator[Auditor | None]:
    """The auditor of one refresh (`ctx`: its RefreshContext; None when the DT has no checks),
    found by the commit primitives."""
    spec = ctx.step.options.audit
    if spec is None or not spec.checks:
        yield None
        return
    auditor = Auditor(ctx.spark, ctx.step, spec.checks, ctx.frontier)
    token = _current.set(auditor)
    try:
        yield auditor
    finally:
        _current.reset(token)
        auditor.release()


@contextmanager
def suspended() -> Iterator[None]:
    """No audit inside: a DT's internal tables (engine/runtime/internal_state.py) commit in the DT's
    refresh, and the DT's checks are about the DT's columns, not theirs."""
    token = _current.set(None)
    try:
        yield
    finally:
        _current.reset(token)


def has_drops() -> bool:
    auditor = _current.get()
    return auditor is not None and any(c.action == KEEP_OUT for c in auditor.checks)


@contextmanager
def change(spark, path: str, changes, local: list | None) -> Iterator[tuple[object, list | None]]:
    """Around applying a weighted change (apply.apply_row_changes): the change screened (drop
    expectations filter it, both signs: the DT never held a violating row) and checked against
    the table as it is; the primitives it calls are not audited again."""
    auditor = _current.get()
    if auditor is None or auditor.inside:
        yield changes, local
        return
    target = listed.read(spark, path)
    # `unique` and combinations wait for the commit path: a slice replacement reads the old rows
    # of the slice anyway, and checks its keys there (`rows`); any other path checks them
    # against the table as it is (`settle`), before it writes
    auditor.deferred_checks = [c for c in auditor.checks if c.shape == KEY and not c.proven
                               and c.action != KEEP_OUT]
    changes, local = auditor.screen(Pending(changes, target, local), stop=False)
    auditor.deferred = Pending(changes, target, local) if auditor.deferred_checks else None
    if auditor.stopped():       # failed already: every check is reported, then the refresh stops
        settle()
        auditor.stop_if_failed()
    auditor.inside = True
    try:
        yield changes, local
    finally:
        auditor.inside = False
        auditor.deferred, auditor.deferred_checks = None, []


def idle() -> bool:
    """Whether no data test audits the refresh running in this thread."""
    return _current.get() is None


def settle() -> None:
    """The key checks `change` deferred, evaluated against the table as it is: each commit
    path of a weighted change calls this before it writes (a no-op once they were checked)."""
    auditor = _current.get()
    if auditor is None or auditor.deferred is None:
        return
    pending, auditor.deferred = auditor.deferred, None
    auditor.screen(pending, auditor.deferred_checks, stop=False)
    auditor.stop_if_failed()


def rows(spark, path: str | None, new_rows, replaced: str | None):
    """Rows about to replace the old rows matching `replaced` (None: the whole table), screened
    and checked; returns the rows to write."""
    auditor = _current.get()
    if auditor is None:
        return new_rows
    if auditor.inside and (auditor.deferred is None or replaced is None):
        settle()
        return new_rows
    kept_rows = None if replaced is None else \
        listed.read(spark, path).filter(f"NOT coalesce(({replaced}), false)")
    if auditor.inside:
        return _slice_keys(auditor, new_rows, kept_rows, _columns_of(replaced))
    return _screened(auditor, new_rows, kept_rows, _columns_of(replaced))


def _slice_keys(auditor: Auditor, new_rows, kept_rows, replaced_by: frozenset[str] | None):
    """A weighted change written as a slice replacement (apply.replace): a key check whose
    columns hold every column the slice is selected by counts the slice's new rows alone (an
    old row with such a key lay in the slice, so it is replaced, not kept): no second read of
    the old rows. The other key checks are evaluated against the table as it is."""
    within = [c for c in auditor.deferred_checks
              if replaced_by is not None and replaced_by <= {k.lower() for k in c.columns or ()}]
    pending, auditor.deferred = auditor.deferred, None
    others = [c for c in auditor.deferred_checks if c not in within]
    if others:      # every check is reported before a failed one stops the refresh
        auditor.screen(pending, others, stop=not within)
    if not within:
        return new_rows
    return _screened(auditor, new_rows, kept_rows, replaced_by, within)


def _columns_of(predicate: str | None) -> frozenset[str] | None:
    """The columns a predicate over one row reads (None: not known, or it reads more than
    the row)."""
    if predicate is None:
        return None
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(predicate, read="spark")
    except (sqlglot.errors.SqlglotError, RecursionError):
        return None
    if tree is None or any(isinstance(n, (exp.Query, exp.Subquery)) for n in tree.walk()):
        return None
    return frozenset(c.name.lower() for c in tree.find_all(exp.Column))


def statement(spark, sql: str, columns: list[dict], targeted: str, path: str, views: list[str]) -> str:
    """A custom table's statement (`sql`, as written; `targeted`: as it will run), its effect
    screened and checked first (dtcli/sql/custom_effect.py); returns the statement to run: with
    a `drop` expectation (INSERT INTO SELF only), an INSERT of the screened rows instead."""
    auditor = _current.get()
    if auditor is None or auditor.inside:
        return targeted
    from dtcli.sql.custom import SELF_VIEW
    from dtcli.sql.custom_effect import statement_effect

    effect = statement_effect(sql, columns, SELF_VIEW)
    screened = _screened(auditor, spark.sql(effect.written), spark.sql(effect.kept))
    if not has_drops():
        return targeted
    view = "__dt_audited_rows"
    screened.createOrReplaceTempView(view)
    views.append(view)
    return f"INSERT INTO delta.{quote(path)} SELECT * FROM {view}"


def _screened(auditor: Auditor, new_rows, kept_rows, replaced_by: frozenset[str] | None = None,
              checks: list | None = None):
    from pyspark.sql import functions as F

    weighted = new_rows.withColumn(WEIGHT, F.lit(1).cast("long"))
    if auditor.frontier.refresh_action == INCREMENTAL:     # the rows of the keys a change touched
        written, local = kept(weighted, LOCAL_ROWS, True)
    else:                         # a recompute writes every row: kept on the executors
        written, local = checkpointed(weighted), None
    auditor.held.append(written)
    screened, _ = auditor.screen(Pending(written, kept_rows, local, replaced_by), checks)
    return screened.drop(WEIGHT)
