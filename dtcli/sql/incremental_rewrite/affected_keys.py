"""The affected keys of a keyed block (GROUP BY, DISTINCT, windows with PARTITION BY, one outer
join): the keys of every input row a change touches, materialised as a key set, so that the
block is recomputed for those keys only (restriction.py). Each function takes the
DeltaCompiler (`compiler`) whose terms and versions it combines."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from dtcli.sql import functions as fn
from dtcli.sql.incremental_rewrite import shapes
from dtcli.sql.incremental_rewrite.pushdown import pushed_keys
from dtcli.sql.incremental_rewrite.reached_keys import key_parts, own_conditions, reach
from dtcli.sql.incremental_rewrite.relations import (
    BOTH,
    NEW,
    OLD,
    KeySet,
    Unsupported,
    alias_of,
    and_,
    block_items,
    conjuncts,
    key_column,
    union_all,
)
from dtcli.sql.incremental_rewrite.restriction import restriction
from dtcli.sql.incremental_rewrite.shapes import OuterJoin, Shape


def affected_keys(compiler, sel: exp.Select, shape: Shape, changed: list[int]) -> KeySet | None:
    """The keys of every row of the block's input that changed (None: scalar aggregate)."""
    memo = compiler.key_sets.get(id(sel))
    if memo is not None:
        return memo
    if shape.keys is not None and not shape.keys:
        return None
    if shape.join is None:
        keys = derived_keys(compiler, sel, shape.keys, changed)
        if keys is None:
            own = [item_keys(compiler, sel, k, shape.keys) for k in changed]
            plan = reach(sel, shape.keys, changed) if any(part is None for part in own) else None
            if plan is not None:        # fewer keys, named by the changes and a few joins
                keys = replace(compiler.materialize(union_all(key_parts(compiler, sel, plan, changed))),
                               of=plan.of)
            else:
                parts = [part or strip(compiler.term(sel, k, BOTH, keys_only=True), shape.keys)
                         for k, part in zip(changed, own)]
                keys = compiler.materialize(union_all(parts))
    else:
        join_keys = _outer_join_keys(compiler, sel, shape.join, changed)
        if shape.keys is None or shape.keys == shape.join.key:
            # grouped by the join's own key (Q13's customers and their orders): a changed row's
            # group is its join key, so the join keys are the affected keys, a superset at most,
            # without reading the block's rows to map one onto the other
            keys = join_keys
        else:
            parts = []
            for which in (NEW, OLD):
                rows = compiler.version(sel, which)
                rows.set("where", exp.Where(this=and_(
                    rows.args["where"].this if rows.args.get("where") else None,
                    restriction(shape.join.key, join_keys))))
                parts.append(strip(rows, shape.keys))
            keys = compiler.materialize(union_all(parts))
    compiler.key_sets[id(sel)] = keys
    return keys


def strip(sel: exp.Select, exprs: list[exp.Expression], *, keep_where: bool = True) -> exp.Select:
    """The rows of a block before aggregation, projected onto key expressions c0..cn."""
    for arg in ("group", "having", "qualify", "windows", "distinct", "order", "limit",
                "sort", "cluster", "distribute"):
        sel.set(arg, None)
    if not keep_where:
        sel.set("where", None)
    sel.set("expressions", [exp.alias_(e.copy(), key_column(k)) for k, e in enumerate(exprs)])
    return sel


def derived_keys(compiler, sel: exp.Select, exprs: list[exp.Expression], changed: list[int]) -> KeySet | None:
    """When the block reads one derived table that is keyed itself (its change is its rows of
    some keys at the old and new versions: an outer join, a GROUP BY) and is keyed by the columns
    selecting those keys, in order: that table's affected keys, a superset of the block's (a
    changed row's key is its own key). TPC-H Q13's GROUP BY over its customers LEFT JOIN orders
    then finds no keys by reading the joined rows of the join's keys at both versions."""
    items = block_items(sel)
    if len(items) != 1 or changed != [0] or sel.args.get("laterals") or not isinstance(items[0], exp.Subquery):
        return None
    inner, alias = items[0].this, (alias_of(items[0]) or "").lower()
    if not isinstance(inner, exp.Select) or not alias:
        return None
    try:
        inner_shape = shapes.shape(inner)
    except Unsupported:
        return None
    if inner_shape is None:
        return None
    inner_keys = inner_shape.join.key if inner_shape.keys is None else inner_shape.keys
    outputs = {e.alias_or_name.lower(): e.unalias() for e in inner.expressions}
    mapped = [outputs.get(e.name.lower()) if isinstance(e, exp.Column) and e.table.lower() in ("", alias) else None
              for e in exprs]
    if not inner_keys or any(m is None for m in mapped) or mapped != list(inner_keys):
        return None
    inner_changed = [k for k, item in enumerate(block_items(inner)) if compiler.changed(item)]
    # memoised by block: the derived table's own change (select_delta) is restricted to these
    return affected_keys(compiler, inner, inner_shape, inner_changed) if inner_changed else None


def item_keys(compiler, sel: exp.Select, index: int, exprs: list[exp.Expression]) -> exp.Select | None:
    """The keys of item `index`'s changed rows read from its change alone, when every key
    column belongs to that item: a superset of the affected keys (rows the joins would drop
    only cost a recompute that finds nothing) that needs no scan of the other items."""
    items = block_items(sel)
    if len(items) < 2 or sel.args.get("laterals"):
        return None
    alias = (alias_of(items[index]) or "").lower()
    if not alias or sum((alias_of(i) or "").lower() == alias for i in items) != 1:
        return None

    def own(e: exp.Expression) -> bool:
        cols = list(e.find_all(exp.Column))
        return bool(cols) and all(c.table.lower() == alias for c in cols) and not any(
            isinstance(n, (exp.Query, exp.Subquery)) or fn.is_nondeterministic(n)
            or fn.is_user_defined(n) for n in e.walk())
    if not all(own(e) for e in exprs):
        return None
    out = exp.select(*[exp.alias_(e.copy(), key_column(n)) for n, e in enumerate(exprs)]) \
        .from_(compiler.item_relation(items[index], BOTH))
    mine = [c.copy() for c in own_conditions(sel, alias)]
    return out.where(exp.and_(*mine)) if mine else out


def _outer_join_keys(compiler, sel: exp.Select, join: OuterJoin, changed: list[int]) -> KeySet:
    if not join.pairs:
        return compiler.materialize(union_all(_theta_join_keys(compiler, sel, join, changed)))
    parts: list[exp.Query] = []
    right = join.index + 1
    for k in changed:
        if k < right:       # the left side, which is linear up to the outer join
            parts.append(strip(_left_term(compiler, sel, k, join), [left for left, _ in join.pairs]))
        elif k == right:
            item = block_items(sel)[right]
            q = exp.select(*[exp.alias_(r.copy(), key_column(n)) for n, (_, r)
                             in enumerate(join.pairs)]).from_(compiler.item_relation(item, BOTH))
            parts.append(q)
        else:               # inner joins after the outer join are linear in their items
            parts.append(strip(compiler.term(sel, k, BOTH), join.key))
    return compiler.materialize(union_all(parts))


def _theta_join_keys(compiler, sel: exp.Select, join: OuterJoin, changed: list[int]) -> list[exp.Query]:
    """The preserved side's keys a change touches, for an outer join without equalities
    (shapes._theta_join): a changed preserved row's own; for a changed row of the other side,
    those of the preserved rows it satisfies the ON with (the two sides inner-joined on it,
    the preserved side new: a preserved row not there changed itself)."""
    parts: list[exp.Query] = []
    right = join.index + 1
    preserved_left = join.kind != "RIGHT"
    for k in changed:
        if k > right:       # inner joins after the outer join are linear in their items
            parts.append(strip(compiler.term(sel, k, BOTH), join.key))
        elif (k < right) == preserved_left:
            if k < right:
                rows = compiler.term(sel, k, BOTH, items_upto=join.index)
            else:
                rows = exp.select("*").from_(compiler.item_relation(block_items(sel)[right], BOTH))
            parts.append(strip(rows, join.key, keep_where=False))
        else:
            rows = compiler.term(sel, k, BOTH, items_upto=right)
            matched = rows.args["joins"][join.index]
            matched.set("side", None)
            matched.set("kind", None)
            parts.append(strip(rows, join.key, keep_where=False))
    return parts


def _left_term(compiler, sel: exp.Select, index: int, join: OuterJoin) -> exp.Select:
    """The change of the rows left of a keyed join that item `index`'s change makes: the
    items up to the join, with the block's WHERE conjuncts on those items alone when the
    join keeps or drops left rows as they are (LEFT, SEMI, ANTI: a left row failing them
    yields no output row at either version, so its key needs no recompute); a RIGHT or FULL
    join's unmatched right rows depend on every left row, so there WHERE is not applied."""
    out = compiler.term(sel, index, BOTH, items_upto=join.index)
    left = {(alias_of(i) or "").lower() for i in block_items(sel)[:join.index + 1]}
    kept: list[exp.Expression] = []
    where = sel.args.get("where")
    if where is not None and join.kind in ("LEFT", "SEMI", "ANTI"):
        kept = [c for c in conjuncts(where.this)
                if {col.table.lower() for col in c.find_all(exp.Column)} <= left
                and not any(isinstance(n, (exp.Query, exp.Subquery)) for n in c.walk())]
    out.set("where", exp.Where(this=_and_all(kept)) if kept else None)
    if compiler.narrow is not None and kept:
        prefix = sel.copy()
        prefix.set("joins", (prefix.args.get("joins") or [])[:join.index] or None)
        prefix.set("laterals", None)
        prefix.set("where", exp.Where(this=_and_all([c.copy() for c in kept])))
        for cond in pushed_keys(prefix, index, compiler.narrow):
            out.where(cond, copy=False)
    return out


def _and_all(conds: list[exp.Expression]) -> exp.Expression:
    out: exp.Expression | None = None
    for c in conds:
        c = exp.Paren(this=c.copy()) if isinstance(c, (exp.Or, exp.Xor)) else c.copy()
        out = c if out is None else exp.And(this=out, expression=c)
    return out
