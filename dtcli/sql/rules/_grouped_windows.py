"""Window functions over a grouping-sets block, evaluated one block out, over its UNION ALL.

A window in a block with ROLLUP / CUBE / GROUPING SETS ranges over the groups of every set at
once (TPC-DS q36, q70 and q86 rank each level of a ROLLUP within its parent, partitioned by
`grouping(a) + grouping(b)`). grouping_sets.py turns the block into one GROUP BY per set; a
window cannot go into those branches, so it goes out of them: the block computes, per group,
every value a window reads (its function's arguments, its PARTITION BY and ORDER BY terms, and
the parts of an output around a window) as hidden columns, and a SELECT over the UNION ALL
evaluates the windows over those columns, then the block's ORDER BY and LIMIT. The change
compiler refreshes that SELECT as any window over a derived table: the partitions that changed.
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql import functions as fn
from dtcli.sql.rules._blocks import with_children

HIDDEN = "__dt_w"       # a value a window reads, computed per group (`__dt_w0`, ...)


class Refused(Exception):
    """The windows cannot be moved out of the block exactly: it is left as written."""


def has_window(node: exp.Expression) -> bool:
    return any(isinstance(n, exp.Window) for n in node.walk())


SORT = "__dt_s"         # a sort key of the block's top-N that is not an output (`__dt_s0`, ...)


def split(sel: exp.Select, alias: str, sorted_: bool = False
          ) -> tuple[exp.Select, list[exp.Expression], exp.Order | None]:
    """(the block without its windows: its outputs, or for an output holding a window the values
    that window reads as hidden columns; the outputs of the SELECT over it, reading `alias`;
    with `sorted_`, the block's ORDER BY over those outputs: a term that is not an expression of
    output names is computed per group as a hidden column, output as `__dt_s<k>`)."""
    names = [e.alias_or_name for e in sel.expressions]
    if any(not n for n in names) or len({n.lower() for n in names}) != len(names):
        raise Refused                 # the SELECT over the block names every output
    if sel.args.get("windows") or sel.args.get("qualify") or sel.args.get("distinct"):
        raise Refused
    hidden: list[exp.Expression] = []
    inner: list[exp.Expression] = []
    outer: list[exp.Expression] = []

    def hide(node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.Literal, exp.Null, exp.Boolean)):
            return node
        name = f"{HIDDEN}{len(hidden)}"
        hidden.append(exp.alias_(node, name))
        return exp.column(name, table=alias)

    def lift(node: exp.Expression) -> exp.Expression:
        """`node` (a copy, changed in place) reading hidden columns for what is not a window."""
        if not has_window(node):
            return hide(node)
        if isinstance(node, exp.Window):
            return window(node)
        return with_children(node, lift)

    def window(node: exp.Window) -> exp.Window:
        func = node.this
        # IGNORE NULLS, FILTER and DISTINCT wrap or qualify the function's arguments: a
        # wrapped call would be taken for a value of the group
        if not isinstance(func, exp.Func) or isinstance(func, (exp.IgnoreNulls, exp.RespectNulls, exp.Filter)) \
                or any(isinstance(n, exp.Distinct) for n in func.walk()) or has_window(func) \
                or isinstance(node.args.get("alias"), exp.Identifier):
            raise Refused
        with_children(func, hide)
        node.set("partition_by", [lift(p) for p in node.args.get("partition_by") or []])
        order = node.args.get("order")
        if order is not None:
            for term in order.expressions:
                term.set("this", lift(term.this))
        return node

    for output, name in zip(sel.expressions, names):
        expr = output.unalias()
        if has_window(expr):
            outer.append(exp.alias_(lift(expr.copy()), name))
        else:
            inner.append(exp.alias_(expr.copy(), name))
            outer.append(exp.alias_(exp.column(name, table=alias), name))
    order = None
    if sorted_ and sel.args.get("order") is not None:
        order = sel.args["order"].copy()
        by_name = {n.lower(): e.unalias() for n, e in zip(names, sel.expressions)}
        for term in order.expressions:
            if _over_outputs(term.this, set(by_name)):
                continue
            key = _unaliased(term.this, by_name)
            if has_window(key):
                raise Refused           # a sort key over a window's value, not over the groups
            name = f"{SORT}{len(outer) - len(names)}"
            outer.append(exp.alias_(hide(key), name))
            term.set("this", exp.column(name))
    block = sel.copy()
    for arg in ("order", "limit", "offset", "sort", "cluster", "distribute"):
        block.set(arg, None)
    block.set("expressions", inner + hidden)
    return block, outer, order


def _over_outputs(e: exp.Expression, names: set[str]) -> bool:
    """An ordinal, or an expression of output names only (unqualified)."""
    if isinstance(e, exp.Literal) and e.is_int:
        return True
    return not has_window(e) and not any(fn.is_aggregate(n) or isinstance(n, (exp.Grouping, exp.GroupingId))
                                         for n in e.walk()) \
        and all(not c.table and c.name.lower() in names for c in e.find_all(exp.Column))


def _unaliased(e: exp.Expression, outputs: dict[str, exp.Expression]) -> exp.Expression:
    """A sort key with every unqualified output name replaced by the output's expression."""
    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not node.table and node.name.lower() in outputs:
            return outputs[node.name.lower()].copy()
        return node
    return e.copy().transform(swap)
