"""Pushing a change's join keys into the scans of the tables it is joined with.

In a change term such as `ΔL ⋈ O ON l.orderkey = o.orderkey`, only the rows of O whose
`orderkey` is among the change's values can join: the others only cost a scan. Spark cannot
know that before it runs the join, and Delta skips files only by predicates it is given, so
the term gets `o.orderkey` restricted to the change's values as a predicate of its own, which
Delta checks against each file's statistics. The values come from a callback (the engine knows
them once the change is read); without them, or for more values than it renders, nothing is
added and the term reads what it read before.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from dtcli.sql.incremental_rewrite.relations import alias_of, block_items, conjuncts, is_table_ref

# narrow(input name, its column, the input whose scan would take the predicate (None: a FROM item
# that is not an input table)) -> (expression -> predicate restricting it to the change's values
# of that column), or None when they are not known or not worth pushing into that scan
Narrow = Callable[[str, str, "str | None"], Callable[[exp.Expression], exp.Expression | None] | None]


def equalities(sel: exp.Select) -> list[tuple[exp.Column, exp.Column]]:
    """Column = column conditions that hold for every row of an inner-join block (WHERE and
    inner joins' ON); none when the block has an outer join, whose ON does not filter."""
    conds = conjuncts(sel.args["where"].this) if sel.args.get("where") else []
    for join in sel.args.get("joins") or ():
        if join.side or (join.args.get("kind") or "").upper() in ("SEMI", "ANTI", "NATURAL"):
            return []
        conds += conjuncts(join.args.get("on"))
    return [(c.this, c.expression) for c in conds
            if isinstance(c, exp.EQ) and isinstance(c.this, exp.Column)
            and isinstance(c.expression, exp.Column) and c.this.table and c.expression.table]


def pushed_keys(sel: exp.Select, index: int, narrow: Narrow, name: str | None = None) -> list[exp.Expression]:
    """Predicates restricting the other FROM items of `sel` to the join values of item
    `index`'s change (the item is an input table read as its change), or, with `name`, of the
    rows of that name it is read as (a join hub's kept rows, hub.py)."""
    items = block_items(sel)
    item = items[index]
    if not (isinstance(item, exp.Table) and is_table_ref(item)) or sel.args.get("laterals"):
        return []
    mine = (alias_of(item) or "").lower()
    others = {(alias_of(i) or "").lower(): i for k, i in enumerate(items) if k != index}
    if not mine or mine in others:
        return []
    out: list[exp.Expression] = []
    for left, right in equalities(sel):
        for own, other in ((left, right), (right, left)):
            if own.table.lower() != mine or other.table.lower() not in others:
                continue
            target = others[other.table.lower()]
            scanned = target.name.lower() if isinstance(target, exp.Table) and is_table_ref(target) else None
            restrict = narrow(name or item.name.lower(), own.name, scanned)
            cond = restrict(other.copy()) if restrict is not None else None
            if cond is not None:
                out.append(exp.Paren(this=cond))
    return out
