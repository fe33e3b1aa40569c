"""What a top-N DT (`ORDER BY … LIMIT n`) may hold, checked without trusting dt's own split.

With ties at the n-th row a top-N has several right answers, so a DT is not compared with a
recompute as a multiset. It is right when it is the projection of n rows of the query's
unlimited result (all of them when there are fewer) such that no row left out sorts strictly
before a row kept: every row sorting before the n-th one is in, the rest are rows tied with it.
Sorting is Spark's: ASC puts NULLs first and DESC last unless the query says otherwise
(sqlglot's Spark parser records that on each key), strings by code point.

`split` finds the top-N of a query (its outermost ORDER BY and LIMIT, on a SELECT or a set
operation) and gives the unlimited query, with each sort key that is not an output added as a
trailing column (to the SELECT list; an expression over the outputs, in a SELECT around the
query), so that the rows of that query carry their sort values; the checks project them away. Used by the DuckDB oracle (tests/fuzz/oracle.py), the Spark replay and the TPC-H
test, on the query as the user wrote it.
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

HIDDEN = "__top_k"       # prefix of the sort keys added as trailing columns


@dataclass(frozen=True)
class TopN:
    inner: str                              # the query without ORDER BY / LIMIT, sort keys added
    keys: tuple[tuple[int, bool, bool], ...]  # per sort key: (column of `inner`, desc, nulls_first)
    n: int
    outputs: int                            # the query's own columns (the first ones of `inner`)


def _outputs(query: exp.Query) -> list[exp.Expression]:
    while isinstance(query, exp.SetOperation):
        query = query.this
    while isinstance(query, exp.Subquery):
        query = query.this
    return list(query.expressions) if isinstance(query, exp.Select) else []


def _over_outputs(key: exp.Expression, names: list[str]) -> bool:
    """Whether sort key `key` is computed from the query's output columns: it reads some, all of
    them outputs, and aggregates nothing (`ORDER BY COUNT(*)` reads the input's rows)."""
    columns = list(key.find_all(exp.Column))
    return bool(columns) and all(not c.table and c.name in names for c in columns) and key.find(exp.AggFunc) is None


def split(sql: str, dialect: str = "spark", columns: list[str] | None = None) -> TopN | None:
    """The top-N of `sql`, or None when its outermost query has no LIMIT (LIMIT without ORDER
    BY is a top-N whose rows all tie: any n of them are right). `columns`: the query's output
    names, which a `SELECT *` needs (TPC-DS q21, q53: `SELECT * FROM (...) ORDER BY a LIMIT n`)."""
    query = sqlglot.parse_one(sql, read=dialect)
    limit, order = query.args.get("limit"), query.args.get("order")
    if not isinstance(query, exp.Query) or limit is None or query.args.get("offset"):
        return None
    inner = query.copy()
    inner.set("limit", None)
    inner.set("order", None)
    outputs = _outputs(query)
    starred = any(isinstance(o, exp.Star) or (isinstance(o, exp.Column) and o.is_star) for o in outputs)
    if starred and columns is None:
        raise ValueError("the output names of a top-N over `*` must be given")
    names = list(columns) if starred else [o.alias_or_name for o in outputs]
    texts = [] if starred else [(o.this if isinstance(o, exp.Alias) else o).sql(dialect=dialect) for o in outputs]
    keys, over_outputs = [], []
    for ordered in (order.expressions if order else []):
        key = ordered.this
        if isinstance(key, exp.Literal) and not key.is_string:
            position = int(key.name) - 1
        elif isinstance(key, exp.Column) and not key.table and key.name in names:
            position = names.index(key.name)
        elif key.sql(dialect=dialect) in texts:
            position = texts.index(key.sql(dialect=dialect))
        elif _over_outputs(key, names):
            # an expression over the outputs (Spark resolves its columns to them first): computed
            # over the query's rows, after any key appended to its SELECT list
            position = -1 - len(over_outputs)
            over_outputs.append(key)
        elif isinstance(inner, exp.Select):
            position = len(names) + sum(1 for e in inner.expressions if e.alias_or_name.startswith(HIDDEN))
            inner.select(exp.alias_(key.copy(), f"{HIDDEN}{len(keys)}"), copy=False)
        else:
            raise ValueError(f"sort key {key.sql()} of a set operation is not over its outputs")
        keys.append([position, bool(ordered.args.get("desc")), bool(ordered.args.get("nulls_first"))])
    if over_outputs:
        columns = (names + [e.alias_or_name for e in inner.expressions if e.alias_or_name.startswith(HIDDEN)]
                   if isinstance(inner, exp.Select) else names)
        width = len(columns)
        # the query's columns by name (a `*` is what a change compiler may not expand), then
        # the keys over them
        star = len(set(columns)) < width
        listed = ["*"] if star else [exp.column(c, table="__top_q") for c in columns]
        added = []
        for i, k in enumerate(over_outputs):
            k = k.copy()
            for c in k.find_all(exp.Column):
                c.set("table", exp.to_identifier("__top_q"))
            added.append(exp.alias_(k, f"{HIDDEN}x{i}"))
        inner = exp.select(*listed, *added).from_(inner.subquery("__top_q"))
        for key in keys:
            if key[0] < 0:
                key[0] = width + (-1 - key[0])
    return TopN(inner.sql(dialect=dialect), tuple(tuple(k) for k in keys), int(limit.expression.name), len(names))


def _compare(keys, a: tuple, b: tuple) -> int:
    for position, desc, nulls_first in keys:
        x, y = a[position], b[position]
        if x is None or y is None:
            if x is None and y is None:
                continue
            return (-1 if x is None else 1) * (1 if nulls_first else -1)
        if x != y:
            less = x < y
            return (-1 if less else 1) * (-1 if desc else 1)
    return 0


def ordered(rows: list[tuple], top: TopN) -> list[tuple]:
    """`rows` sorted as Spark sorts them by the top-N's keys (stable: ties keep their order)."""
    return sorted(rows, key=functools.cmp_to_key(functools.partial(_compare, top.keys)))


def expand(rows) -> list[tuple]:
    """A Counter of rows, or an iterable of rows, as a list with repeats."""
    if isinstance(rows, Counter):
        return [r for r, n in rows.items() for _ in range(n)]
    return [tuple(r) for r in rows]


def pick(inner_rows, top: TopN, rng: random.Random) -> Counter:
    """A right answer, ties broken at random: what a refresh may legitimately store."""
    rows = expand(inner_rows)
    rng.shuffle(rows)
    return Counter(r[:top.outputs] for r in ordered(rows, top)[:top.n])


def problem(dt_rows: Counter, inner_rows, top: TopN) -> str | None:
    """None when `dt_rows` (the DT's rows, a multiset) is a right answer of the top-N over
    `inner_rows` (the unlimited query's rows with their sort values); else what is wrong."""
    rows = ordered(expand(inner_rows), top)
    project = top.outputs
    size = sum(dt_rows.values())
    if len(rows) <= top.n:
        expected = Counter(r[:project] for r in rows)
        if dt_rows != expected:
            return (f"top-{top.n} of {len(rows)} rows must hold them all: only in DT {dict(dt_rows - expected)}, "
                    f"missing {dict(expected - dt_rows)}")
        return None
    if size != top.n:
        return f"top-{top.n} holds {size} rows"
    boundary = rows[top.n - 1]
    before = Counter(r[:project] for r in rows if _compare(top.keys, r, boundary) < 0)
    tied = Counter(r[:project] for r in rows if _compare(top.keys, r, boundary) == 0)
    if before - dt_rows:
        return (f"top-{top.n} lacks rows sorting before its last one: {dict(before - dt_rows)} "
                f"(the n-th row sorts as {boundary})")
    extra = (dt_rows - before) - tied
    if extra:
        return (f"top-{top.n} holds rows that are not among the first {top.n} (nor tied with the "
                f"n-th, {boundary}): {dict(extra)}")
    return None
