"""At most one outer, semi or anti join per SELECT block, by nesting the joins before it.

The change compiler recomputes a block with an outer, semi or anti join for the join keys a
change touches (incremental_rewrite/shapes.py); a block has one such key. Joins associate to
the left, so `A ⋈ B LEFT JOIN C ON … LEFT ANTI JOIN D ON …` is `(A ⋈ B LEFT JOIN C ON …)
LEFT ANTI JOIN D ON …`: the part up to and including the first keyed join becomes a derived
table projecting the columns the rest of the block reads, and the block reads them from it.
WHERE conjuncts on that part alone move into it when every later join keeps its rows as they
are (inner, cross, left outer, semi, anti joins), which filters before the join instead of
after it and keys its recompute on fewer rows.

A block that also aggregates (GROUP BY, an aggregate, DISTINCT, a window) is nested the same
way for its one keyed join: the aggregation then reads the join's change like any derived
table's, so it can be maintained from its own rows, and its groups are found from the rows that
changed, not from every row of the join keys that did.

>>> import sqlglot
>>> from dtcli.sql.rules import Notes
>>> def show(sql):
...     print(rewrite(sqlglot.parse_one(sql, read="spark"), Notes()).sql(dialect="spark"))
>>> show("SELECT s.n AS n, COUNT(*) AS c FROM s AS s CROSS JOIN l AS l1 "
...      "LEFT SEMI JOIN l AS l2 ON l2.o = l1.o AND l2.s <> l1.s "
...      "LEFT ANTI JOIN l AS l3 ON l3.o = l1.o AND l3.s <> l1.s "
...      "WHERE s.k = l1.s GROUP BY s.n")
SELECT __dt_j2.n AS n, COUNT(*) AS c FROM (SELECT __dt_j1.n AS n FROM (SELECT s.n AS n, l1.o AS
o, l1.s AS s FROM s AS s CROSS JOIN l AS l1 LEFT SEMI JOIN l AS l2 ON l2.o = l1.o AND l2.s <>
l1.s WHERE s.k = l1.s) AS __dt_j1 LEFT ANTI JOIN l AS l3 ON l3.o = __dt_j1.o AND l3.s <>
__dt_j1.s) AS __dt_j2 GROUP BY __dt_j2.n
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql.analysis.nodes import first_start
from dtcli.sql.analysis.strategies import DERIVED
from dtcli.sql.rules._blocks import (
    Fresh,
    and_all,
    conjuncts,
    derived,
    has_aggregate,
    has_window,
    items,
    nested_queries,
    output_names,
    remap,
    sources,
    tables_of,
)
from dtcli.sql.rules._notes import Notes, Rewrite

RULE = "keyed_joins"
# joins after the nested part that keep its rows as they are: a WHERE conjunct on the nested
# part alone filters the same rows before them as after them
KEEPS_LEFT = {None, "LEFT", "SEMI", "ANTI"}


def rewrite(query: exp.Query, notes: Notes) -> exp.Query:
    """`query` (modified) with at most one outer / semi / anti join per SELECT block, and none
    in a block that also aggregates, where nesting it is exact."""
    fresh = Fresh(query)
    for sel in reversed(list(query.find_all(exp.Select))):
        while _next_to_nest(sel) is not None:
            _nest(sel, _next_to_nest(sel), fresh, notes)
    return query


def kind_of(join: exp.Join) -> str | None:
    """SEMI / ANTI, LEFT / RIGHT / FULL (outer), None (inner or cross)."""
    kind = (join.args.get("kind") or "").upper()
    if kind in ("SEMI", "ANTI"):
        return kind
    return join.side.upper() if join.side else None


def _next_to_nest(sel: exp.Select) -> int | None:
    """The position (in the block's joins) of the keyed join to nest with what precedes it."""
    joins = sel.args.get("joins") or []
    keyed = [k for k, j in enumerate(joins) if kind_of(j)]
    if not keyed or (len(keyed) == 1 and not _aggregates(sel)):
        return None
    if not _nestable(sel):
        return None
    return keyed[0]


def _aggregates(sel: exp.Select) -> bool:
    return bool(sel.args.get("group") or sel.args.get("having") or sel.args.get("distinct")
                or sel.args.get("qualify") or any(has_aggregate(e) or has_window(e)
                                                   for e in sel.expressions))


def _nestable(sel: exp.Select) -> bool:
    """Whether every column of the block names a source, and nothing would need a rename the
    nesting cannot make: a LATERAL VIEW, a star, a subquery left outside FROM, NATURAL JOIN."""
    if sel.args.get("laterals") or sources(sel) is None:
        return False
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star)
           for e in sel.expressions):
        return False
    for key in ("expressions", "where", "group", "having", "qualify", "order", "windows"):
        value = sel.args.get(key)
        for v in (value if isinstance(value, list) else [value]):
            if isinstance(v, exp.Expression) and nested_queries(v):
                return False
    for join in sel.args.get("joins") or ():
        if join.args.get("method") or join.args.get("using") or (
                join.args.get("on") is not None and nested_queries(join.args["on"])):
            return False
    return True


def _nest(sel: exp.Select, position: int, fresh: Fresh, notes: Notes) -> None:
    joins = list(sel.args.get("joins") or [])
    prefix_items = items(sel)[:position + 2]
    prefix = {(i.alias_or_name if isinstance(i, (exp.Table, exp.Subquery)) else i.alias).lower()
              for i in prefix_items}
    later = joins[position + 1:]
    where = sel.args.get("where")
    conds = conjuncts(where.this) if where is not None else []
    movable = all(kind_of(j) in KEEPS_LEFT for j in later)
    inside = [c for c in conds if movable and tables_of(c) and tables_of(c) <= prefix]
    outside = [c for c in conds if not any(c is i for i in inside)]

    rest: list[exp.Expression] = []       # what still reads the nested part's columns
    for key in ("expressions", "group", "having", "qualify", "order", "windows"):
        value = sel.args.get(key)
        rest += [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, exp.Expression)]
    rest += outside + [j.args["on"] for j in later if j.args.get("on") is not None]
    needed = [c for node in rest for c in node.find_all(exp.Column) if c.table.lower() in prefix]
    names = output_names(needed)

    alias = fresh.name("__dt_j")
    from_ = sel.args.get("from_") or sel.args.get("from")
    body = exp.Select(expressions=[exp.alias_(exp.column(col, table), name)
                                   for (table, col), name in names.items()]
                      or [exp.alias_(exp.Literal.number(1), "__dt_one")])
    body.set("from_", exp.From(this=from_.this))
    body.set("joins", joins[:position + 1])
    cond = and_all(inside)
    if cond is not None:
        body.set("where", exp.Where(this=cond))
    item = derived(body, alias)

    nested_join = joins[position]
    sel.set("from_", exp.From(this=item))
    sel.set("joins", later or None)
    cond = and_all([remap(c, prefix, alias, names) for c in outside])
    sel.set("where", exp.Where(this=cond) if cond is not None else None)
    for key in ("expressions", "group", "having", "qualify", "order", "windows"):
        value = sel.args.get(key)
        if isinstance(value, list):
            sel.set(key, [remap(v, prefix, alias, names) for v in value])
        elif isinstance(value, exp.Expression):
            sel.set(key, remap(value, prefix, alias, names))
    for join in later:
        if join.args.get("on") is not None:
            join.set("on", remap(join.args["on"], prefix, alias, names))
    kind = kind_of(nested_join)
    label = f"LEFT {kind} JOIN" if kind in ("SEMI", "ANTI") else f"{kind} OUTER JOIN"
    why = ("a SELECT is recomputed per key of at most one outer, semi or anti join; dt nests "
           "this one with what precedes it in a derived table" if len(
               [j for j in joins if kind_of(j)]) > 1 else
           "the aggregation over it reads the join's changes like those of any derived table")
    notes.add(Rewrite(RULE, f"{label} (nested)", first_start(nested_join), DERIVED, (why,),
                      f"FROM (… {label} …) AS {alias}"), item)
