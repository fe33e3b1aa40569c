"""A block with a LATERAL VIEW and subqueries to turn into joins: its FROM first made one item.

Spark applies a block's LATERAL VIEWs after its joins, so no join can be added after one in the
same block, and the subquery rule adds joins. Its FROM item, joins and LATERAL VIEWs go into a
derived table that selects every column the rest of the block reads (its list, WHERE, GROUP
BY, HAVING, ORDER BY, and the correlated references of its subqueries); the block then reads
that one item, and the subqueries' joins follow it. The rows are the same: the derived table is
the block's FROM clause as it was.
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql.rules._blocks import Fresh, derived, output_names, sources

ALIAS = "__dt_lv"
# the parts of the block that read its FROM clause's columns (the FROM clause itself excepted)
_READERS = ("expressions", "where", "group", "having", "qualify", "order", "windows")


class _Unsafe(Exception):
    """A column whose source cannot be told, or a star: the block is left as written."""


def wrap(sel: exp.Select, fresh: Fresh) -> bool:
    """Move `sel`'s FROM clause, joins and LATERAL VIEWs into a derived table (in place); False
    when the block cannot be wrapped exactly (it is then left as written)."""
    aliases = sources(sel)
    from_ = sel.args.get("from_") or sel.args.get("from")
    if aliases is None or from_ is None or any(
            isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star) for e in sel.expressions):
        return False
    outputs = {e.alias_or_name.lower() for e in sel.expressions}
    try:
        needed = [c for part in _parts(sel) for c in _columns(part, aliases, frozenset(), outputs)]
    except _Unsafe:
        return False
    # a bare column keeps its name as the block's output once it reads the derived table
    sel.set("expressions", [exp.alias_(e, e.name) if isinstance(e, exp.Column) else e
                            for e in sel.expressions])
    names = output_names(needed)
    alias = fresh.name(ALIAS)
    body = exp.Select(expressions=[exp.alias_(exp.column(col, table), name)
                                   for (table, col), name in names.items()]
                      or [exp.alias_(exp.Literal.number(1), "__dt_one")])
    body.set("from_", exp.From(this=from_.this))
    body.set("joins", sel.args.get("joins"))
    body.set("laterals", sel.args.get("laterals"))
    for column in needed:
        column.replace(exp.column(names[(column.table.lower(), column.name)], alias))
    sel.set("from_", exp.From(this=derived(body, alias)))
    sel.set("from", None)
    sel.set("joins", None)
    sel.set("laterals", None)
    return True


def _parts(sel: exp.Select):
    for key in _READERS:
        value = sel.args.get(key)
        for v in (value if isinstance(value, list) else [value]):
            if isinstance(v, exp.Expression):
                yield v


def _columns(node: exp.Expression, aliases: set[str], shadowed: frozenset[str], outputs: set[str]):
    """The columns under `node` naming one of the block's `aliases`, not hidden by a nested
    block's source of the same name (an unqualified one names an output: ORDER BY c2)."""
    if isinstance(node, exp.Column):
        if not node.table and not node.is_star and not shadowed and node.name.lower() in outputs:
            return
        if node.is_star or not node.table:
            raise _Unsafe
        if node.table.lower() in aliases and node.table.lower() not in shadowed:
            yield node
        return
    if isinstance(node, exp.Select):
        inner = sources(node)
        if inner is None:
            raise _Unsafe
        shadowed = shadowed | inner
    for child in node.iter_expressions():
        yield from _columns(child, aliases, shadowed, outputs)
