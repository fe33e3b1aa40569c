"""A key set an incremental refresh computed (the keys a change touches), as the change compiler
reads it (`KeySet`): a view of its rows and, when few enough to write out, the values themselves,
so that Delta's file skipping prunes the files holding no affected key and a keyed DT replaces
exactly those keys' rows."""

from __future__ import annotations

from sqlglot import exp

from dtcli.engine.runtime import key_predicates
from dtcli.sql.incremental_rewrite import KeySet


def key_set(name: str, rows: list | None, types: list) -> KeySet:
    """The KeySet of the view `name`, whose `rows` (None: not collected) have columns of
    `types`: with filters and literal rows when there are at most MAX_LITERALS of them."""
    if rows is None or len(rows) > key_predicates.MAX_LITERALS:
        return KeySet(name, types=list(types))
    filters = [column_filter([r[k] for r in rows], t) for k, t in enumerate(types)]
    values = [tuple(r) for r in rows] if all(key_predicates.renderable(t) for t in types) else None
    return KeySet(name, filters=filters, rows=values, types=list(types))


def column_filter(values: list, data_type):
    """Restricts an expression to `values` (NULL included when it is one), prunably."""
    if not key_predicates.renderable(data_type):
        return None
    has_null = any(v is None for v in values)
    present = [v for v in values if v is not None]

    def restrict(expr: exp.Expression) -> exp.Expression | None:
        column = expr.sql(dialect="spark")
        sql = key_predicates.among(column, present, data_type) if present else None
        if present and sql is None:       # a value not written as a literal: not narrowed
            return None
        if has_null:
            sql = f"{column} IS NULL" if sql is None else f"({column} IS NULL OR {sql})"
        return exp.Var(this=sql) if sql is not None else exp.false()
    return restrict
