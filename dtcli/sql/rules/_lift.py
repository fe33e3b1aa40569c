"""Lifting a grouped block into a derived table, for the expressions of its SELECT list and
HAVING that read a subquery's value (see _scalar.py): a value joined from outside cannot be read
under the GROUP BY, so the aggregation becomes `FROM (grouped block) AS __dt_gN` and those
expressions are evaluated over its outputs, plus hidden columns for their parts that read no
subquery."""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql.analysis.nodes import first_start
from dtcli.sql.analysis.strategies import DERIVED
from dtcli.sql.rules._blocks import (
    and_all,
    conjuncts,
    derived,
    has_aggregate,
    has_window,
    nested_queries,
    with_children,
)
from dtcli.sql.rules._notes import Rewrite, left_as_is, why_left

RULE = "subqueries"


def candidates(node: exp.Expression) -> list[exp.Expression]:
    """Scalar subqueries, EXISTS and IN tests in an expression."""
    out = []
    for q in nested_queries(node):
        if why_left(q) is not None:
            continue
        parent = q.parent
        if isinstance(parent, exp.In):
            if parent.args.get("query") is q:
                out.append(parent)      # under OR, in the SELECT list (_predicate_values.in_value)
            else:
                leave_value(q, "a subquery in a list of IN values is not rewritten")
            continue
        if isinstance(parent, exp.Exists):
            out.append(parent)
        elif isinstance(parent, (exp.Any, exp.All)):
            # `x > ANY (SELECT ...)` compares x with every row of the set: not a scalar value (a
            # WHERE conjunct `x = ANY` / `x <> ALL` is IN / NOT IN, rewritten before this)
            leave_value(q, f"a comparison with {parent.key.upper()} (SELECT ...) is not rewritten "
                           "unless it is a WHERE conjunct x = ANY or x <> ALL")
        elif isinstance(q, exp.Subquery):
            out.append(q)
        else:
            leave_value(q, "a subquery in this place is not rewritten")
    return out


def leave_value(node: exp.Expression, reason: str) -> None:
    if isinstance(node, exp.In):
        node = node.args["query"]
    left_as_is(node.this if isinstance(node, exp.Exists) else node, reason)


def lift(block) -> exp.Select | None:
    """Turn the grouped block into `SELECT ... FROM (grouped block) AS __dt_gN`, whose SELECT
    list and WHERE evaluate the expressions that read subqueries, over the grouped outputs and
    hidden columns for the parts of those expressions without a subquery. The block node itself
    becomes the outer SELECT (its place in the query stays); None when it cannot be done."""
    sel = block.sel
    names = _liftable_names(sel)
    if names is None:
        return None
    order = sel.args.get("order")
    inside = order is not None and not (sel.args.get("limit") or sel.args.get("offset"))
    g = block.fresh.name("__dt_g")
    inner = exp.Select()
    # a WITH stays on the outer block: the subqueries it keeps may read its CTEs too (TPC-DS q24)
    for arg in ("from_", "from", "joins", "where", "group"):
        if sel.args.get(arg) is not None:
            inner.set(arg, sel.args[arg])
    projected = [exp.alias_(e.unalias().copy(), name) for e, name in zip(sel.expressions, names)
                 if not candidates(e)]
    outside = _Outside(sel, names, g, block.fresh)
    outer_exprs = []
    for e, name in zip(sel.expressions, names):
        if candidates(e):
            outer_exprs.append(exp.alias_(outside(e.unalias()), name))
        else:
            outer_exprs.append(exp.alias_(exp.column(name, g), name))
    kept_having, outer_where = [], []
    having = sel.args.get("having")
    for cond in conjuncts(having.this) if having is not None else []:
        (outer_where if candidates(cond) else kept_having).append(cond)
    outer_where = [outside(c) for c in outer_where]
    inner.set("expressions", projected + outside.hidden)
    if kept_having:
        inner.set("having", exp.Having(this=and_all(kept_having)))
    if inside:
        inner.set("order", order)
    for arg in ("from_", "from", "joins", "where", "group", "having"):
        if arg in sel.args:
            sel.set(arg, None)
    if inside:
        sel.set("order", None)
    sel.set("expressions", outer_exprs)
    item = derived(inner, g)
    sel.set("from_", exp.From(this=item))
    block.notes.add(Rewrite(RULE, "aggregation read by a subquery's value", first_start(inner),
                            DERIVED, ("a value joined from a subquery cannot be read under the "
                                      "GROUP BY: the aggregation is a derived table, the "
                                      "expressions reading the value are evaluated over it",),
                            f"FROM (… GROUP BY …) AS {g}"), item)
    cond = and_all(outer_where)
    if cond is not None:
        sel.set("where", exp.Where(this=cond))
    return sel


def _liftable_names(sel: exp.Select) -> list[str] | None:
    """The block's output names when it can be lifted: no DISTINCT, QUALIFY or windows, each
    output named once, and an ORDER BY beside a LIMIT naming outputs only."""
    if sel.args.get("distinct") or sel.args.get("qualify") or sel.args.get("windows") or any(
            has_window(e) for e in sel.expressions):
        return None
    names = [e.alias_or_name for e in sel.expressions]
    if any(not n or n == "*" for n in names) or len({n.lower() for n in names}) != len(names):
        return None
    order = sel.args.get("order")
    limited = sel.args.get("limit") or sel.args.get("offset")
    # ORDER BY stays with the aggregation it orders, as written; a LIMIT needs it outside, over
    # the outputs it then must name
    if limited and order is not None and not all(
            isinstance(o.this, exp.Column) and not o.this.table and o.this.name.lower() in
            {n.lower() for n in names} for o in order.expressions):
        return None
    return names


class _Outside:
    """An expression that reads a subquery, rewritten to be evaluated over the lifted block `g`:
    each of its parts without a subquery becomes a column of `g`, an output the block already
    has or a hidden one added to it (`hidden`, named in the order they are met)."""

    def __init__(self, sel: exp.Select, names: list[str], g: str, fresh):
        self.g, self.fresh = g, fresh
        self.plain = [(e.unalias(), name) for e, name in zip(sel.expressions, names) if not candidates(e)]
        self.hidden: list[exp.Expression] = []

    def __call__(self, node: exp.Expression) -> exp.Expression:
        if candidates(node) == [] and not isinstance(node, (exp.Subquery, exp.Exists)):
            if isinstance(node, (exp.Literal, exp.Null, exp.Boolean)) or not (
                    node.find(exp.Column) or has_aggregate(node)):
                return node.copy()
            return self._column_for(node)
        if isinstance(node, (exp.Subquery, exp.Exists)):
            return node
        return with_children(node, self)

    def _column_for(self, part: exp.Expression) -> exp.Expression:
        for expr, name in self.plain:
            if expr == part:
                return exp.column(name, self.g)
        name = self.fresh.name("__dt_h")
        self.hidden.append(exp.alias_(part.copy(), name))
        return exp.column(name, self.g)
