"""Which rows of an input's change can move a query's result at all.

A row of input T reaches a query only through T's references, and a reference in a FROM or
JOIN of block B passes on only the rows that satisfy B's conditions on T alone: the WHERE
conjuncts that read nothing but T's columns (when T is not on the NULL-extended side of an
outer join, where a NULL row can pass a condition the real rows fail), and those of T's own ON
when T's rows only ever appear matched (an inner join, the right side of a LEFT, SEMI or ANTI
join). A change row that fails such a condition at every reference of T changes no output
row, in any version of the other inputs: it can be left out of T's change before anything is
joined with it. When every row of the change is left out, T is as good as unchanged for this
query (its terms, key sets and scans are not computed at all).

So the filter of T is the OR over its references of each one's conditions; a reference with
none (or one this module cannot place, e.g. inside a LATERAL) means no filter for T. Conditions
that read a subquery, an aggregate, a window or a clock, or call a nondeterministic or
user-defined function are not used: they are not conditions on T's row alone.
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql import functions as fn
from dtcli.sql.incremental_rewrite.ctes import inline_ctes
from dtcli.sql.incremental_rewrite.relations import (
    Unsupported,
    alias_of,
    block_items,
    conjuncts,
    is_table_ref,
    parse,
)


def change_filters(sql: str | exp.Query) -> dict[str, str]:
    """Input name (lower case) -> a Spark SQL condition over its own (unqualified) columns that
    every row of its change able to move the query's result satisfies; inputs without one are
    left out. The query is the qualified one (every column names its table's alias).

    >>> change_filters("SELECT o.k FROM orders AS o JOIN lines AS l ON l.k = o.k AND l.q > 5 "
    ...                "WHERE o.d < DATE '1995-01-01' AND o.k = l.k")
    {'orders': "d < CAST('1995-01-01' AS DATE)", 'lines': 'q > 5'}

    A second reference without a condition of its own: no filter for that input.

    >>> change_filters("SELECT a.k FROM t AS a WHERE a.v = 1 AND EXISTS "
    ...                "(SELECT 1 FROM t AS b WHERE b.k = a.k)")
    {}

    Two references, each with its own condition: either one lets a row through.

    >>> change_filters("SELECT a.k FROM t AS a LEFT SEMI JOIN (SELECT b.k FROM t AS b "
    ...                "WHERE b.v > 2) AS s ON s.k = a.k WHERE a.v = 1")
    {'t': '(v = 1) OR (v > 2)'}

    An OR whose every branch has conditions on a table alone implies their OR for it.

    >>> change_filters("SELECT p.k FROM p AS p, l AS l WHERE (p.k = l.k AND p.b = 1 AND l.q < 5) "
    ...                "OR (p.k = l.k AND p.b = 2 AND l.q > 9 AND l.m = 'AIR') OR (p.k = l.k AND p.b = 3)")
    {'p': '(b = 1) OR (b = 2) OR (b = 3)'}

    The NULL-extended side of an outer join: a WHERE condition on it does not filter its rows
    (`r.v IS NULL` keeps the left rows that no right row matches), its own ON does.

    >>> change_filters("SELECT l.k FROM a AS l LEFT JOIN b AS r ON r.k = l.k AND r.w > 0 "
    ...                "WHERE r.v IS NULL AND l.v = 3")
    {'a': 'v = 3', 'b': 'w > 0'}
    """
    try:
        query = inline_ctes(parse(sql))
    except Unsupported:
        return {}
    found: dict[str, list[exp.Expression | None]] = {}
    for table in query.find_all(exp.Table):
        if not is_table_ref(table) or table.db:
            continue
        found.setdefault(table.name.lower(), []).append(_reference_filter(table))
    out: dict[str, str] = {}
    for name, filters in found.items():
        if not filters or any(f is None for f in filters):
            continue
        unique = list(dict.fromkeys(f.sql(dialect="spark") for f in filters))
        out[name] = unique[0] if len(unique) == 1 else " OR ".join(f"({u})" for u in unique)
    return out


def _reference_filter(table: exp.Table) -> exp.Expression | None:
    """The conditions the rows of this reference must satisfy to reach its block's result, as
    one expression over unqualified columns; None when there are none or the reference is not
    a FROM or JOIN item of a SELECT."""
    holder = table.parent
    sel = holder.parent if isinstance(holder, (exp.From, exp.Join)) else None
    if not isinstance(sel, exp.Select) or table.arg_key != "this" or sel.args.get("laterals"):
        return None
    items = block_items(sel)
    index = next((k for k, item in enumerate(items) if item is table), None)
    alias = (alias_of(table) or "").lower()
    if index is None or not alias or [(alias_of(i) or "").lower() for i in items].count(alias) != 1:
        return None
    joins = sel.args.get("joins") or []
    nullable, hidden = _nullable(joins)
    conds: list[exp.Expression] = []
    if index not in nullable and index not in hidden:
        conds += conjuncts(sel.args["where"].this) if sel.args.get("where") else []
        # an inner join's ON is a WHERE condition
        conds += [c for j in joins if _inner(j) for c in conjuncts(j.args.get("on"))]
    elif index >= 1 and _matched_only(joins[index - 1]):
        conds += conjuncts(joins[index - 1].args.get("on"))
    own = [found for c in conds if (found := _own_part(c, alias)) is not None]
    if not own:
        return None
    out = None
    for c in dict.fromkeys(own):
        c = _unqualified(c)
        out = c if out is None else exp.And(this=out, expression=c)
    return out


def _kind(join: exp.Join) -> tuple[str, str]:
    return (join.side or "").upper(), (join.args.get("kind") or "").upper()


def _inner(join: exp.Join) -> bool:
    side, kind = _kind(join)
    return not side and kind in ("", "INNER", "CROSS")


def _matched_only(join: exp.Join) -> bool:
    """Whether the joined item's rows reach the result only as matches of this join's ON."""
    side, kind = _kind(join)
    return side in ("", "LEFT") and kind in ("", "INNER", "CROSS", "OUTER", "SEMI", "ANTI")


def _nullable(joins: list[exp.Join]) -> tuple[set[int], set[int]]:
    """The items NULL-extended by an outer join, and those not in the block's rows at all (the
    right side of a SEMI or ANTI join), by index in block_items; any join of another kind
    (NATURAL, USING with a side, ...) makes every item count as NULL-extended."""
    nullable: set[int] = set()
    hidden: set[int] = set()
    for k, join in enumerate(joins, start=1):
        side, kind = _kind(join)
        if join.args.get("method") or join.args.get("using"):
            nullable.update(range(len(joins) + 1))
        elif kind in ("SEMI", "ANTI") and side in ("", "LEFT"):
            hidden.add(k)
        elif side == "LEFT" and kind in ("", "OUTER"):
            nullable.add(k)
        elif side == "RIGHT" and kind in ("", "OUTER"):
            nullable.update(range(k))
        elif side == "FULL" and kind in ("", "OUTER"):
            nullable.update(range(k + 1))
        elif side or kind not in ("", "INNER", "CROSS"):
            nullable.update(range(len(joins) + 1))
    return nullable, hidden


def _own_part(cond: exp.Expression, alias: str) -> exp.Expression | None:
    """What `cond` requires of the row of `alias` alone: `cond` itself when it reads only that
    row; for an OR, the OR of what each branch requires (TPC-H Q19's `(p … AND l …) OR (p …
    AND l …)` requires of l one of its branches' conditions on l), when every branch requires
    something; else None."""
    if _reads_only(cond, alias):
        return cond
    cond = cond.unnest()
    if not isinstance(cond, exp.Or):
        return None
    branches = []
    for branch in cond.flatten():
        own = [c for c in conjuncts(branch) if _reads_only(c, alias)]
        if not own:
            return None
        branches.append(exp.and_(*own) if len(own) > 1 else own[0])
    return exp.or_(*[exp.Paren(this=b) for b in branches])


def _reads_only(cond: exp.Expression, alias: str) -> bool:
    """Whether `cond` is a deterministic condition on the row of `alias` alone."""
    columns = list(cond.find_all(exp.Column))
    if not columns or any(c.table.lower() != alias or c.args.get("db") or c.args.get("catalog")
                          or c.is_star for c in columns):
        return False
    for node in cond.walk():
        if isinstance(node, (exp.Query, exp.Subquery, exp.Exists, exp.Window, exp.Placeholder)):
            return False
        if fn.is_aggregate(node) or fn.is_nondeterministic(node) or fn.is_user_defined(node):
            return False
    return True


def _unqualified(cond: exp.Expression) -> exp.Expression:
    out = cond.copy()
    for column in out.find_all(exp.Column):
        column.set("table", None)
    return out
