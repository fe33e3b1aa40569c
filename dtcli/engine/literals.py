"""Spark values as SQL literals, and the key predicates built from them.

A small set of changed keys, written into a query as literals, lets Delta's file skipping prune
files and lets a `replaceWhere` commit name exactly the rows it replaces. Only types whose
literals round-trip exactly are rendered; anything else returns None and the caller takes its
join-based path instead.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from sqlglot import exp


def literal(value, data_type) -> exp.Expression | None:
    """`value` (of Spark type `data_type`) as a SQL literal, or None when not renderable."""
    from pyspark.sql.types import (
        BooleanType,
        ByteType,
        DateType,
        DecimalType,
        IntegerType,
        LongType,
        ShortType,
        StringType,
    )

    if value is None:
        return exp.Null()
    if isinstance(data_type, (ByteType, ShortType, IntegerType, LongType)):
        return exp.Literal.number(int(value))
    if isinstance(data_type, StringType):
        return exp.Literal.string(value)
    if isinstance(data_type, BooleanType):
        return exp.Boolean(this=bool(value))
    # Spark's typed literals, written out directly: thousands of keys are common, and building
    # a CAST tree per value costs a second of sqlglot time per few thousand. A decimal keeps its
    # column's scale, so comparing it with the column loses nothing.
    if isinstance(data_type, DecimalType) and isinstance(value, Decimal) and value.is_finite():
        return exp.Var(this=f"{value:f}BD")
    if isinstance(data_type, DateType) and isinstance(value, date):
        return exp.Var(this=f"DATE'{value.isoformat()}'")
    return None


def literals(values: list, data_type) -> list[exp.Expression] | None:
    """Distinct literals for `values`, None if any cannot be rendered."""
    out: list[exp.Expression] = []
    for v in dict.fromkeys(values):
        lit = literal(v, data_type)
        if lit is None:
            return None
        out.append(lit)
    return out


def renderable(data_type) -> bool:
    from pyspark.sql.types import (
        BooleanType,
        ByteType,
        DateType,
        DecimalType,
        IntegerType,
        LongType,
        ShortType,
        StringType,
    )

    return isinstance(data_type, (BooleanType, ByteType, DateType, DecimalType, IntegerType,
                                  LongType, ShortType, StringType))


def key_predicate(columns: list[str], rows: list[tuple[exp.Expression, ...]]) -> str | None:
    """Spark SQL matching the rows whose `columns` equal one of the key tuples `rows`
    (NULL-safely for a single column); None when it cannot be written (a NULL in a multi-column
    key) or when there is no key at all."""
    if not rows:
        return None
    cols = [exp.column(c, quoted=True) for c in columns]
    if len(cols) == 1:
        values = [r[0] for r in rows if not isinstance(r[0], exp.Null)]
        conds: list[exp.Expression] = []
        if values:
            conds.append(exp.In(this=cols[0].copy(), expressions=[v.copy() for v in values]))
        if len(values) != len(rows):
            conds.append(exp.Is(this=cols[0].copy(), expression=exp.Null()))
        pred = conds[0] if len(conds) == 1 else exp.Or(this=conds[0], expression=conds[1])
        return pred.sql(dialect="spark")
    if any(isinstance(v, exp.Null) for r in rows for v in r):
        return None
    pred = exp.In(this=exp.Tuple(expressions=[c.copy() for c in cols]),
                  expressions=[exp.Tuple(expressions=[v.copy() for v in r]) for r in rows])
    return pred.sql(dialect="spark")
