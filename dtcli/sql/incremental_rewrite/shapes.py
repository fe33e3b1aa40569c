"""How a SELECT block is keyed: linear (None), or recomputed per key — GROUP BY keys, window
partitions, DISTINCT rows, or the key of its one outer, semi or anti join. Pure sqlglot;
refusals raise Unsupported.

A semi or anti join keeps or drops each left row by whether some right row of its key matches
(the ON condition's equalities between the sides; other conjuncts of ON may compare anything):
a left row's fate depends on the right rows of its own key only, so the block is recomputed for
the keys either side's change touches, like a LEFT OUTER JOIN keyed by its preserved side."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dtcli.sql import functions as fn
from dtcli.sql.incremental_rewrite.relations import (
    Unsupported,
    alias_of,
    block_items,
    conjuncts,
    is_generator,
    scope_nodes,
)


@dataclass
class OuterJoin:
    index: int                                           # position in the block's joins
    # (left expr, right expr) equalities; none for a join on another condition, keyed by the
    # preserved side's columns
    pairs: list[tuple[exp.Expression, exp.Expression]]
    key: list[exp.Expression]                            # key of each output row
    kind: str = "LEFT"                                   # LEFT | RIGHT | FULL | SEMI | ANTI


def keyed_join_kind(join: exp.Join) -> str | None:
    """SEMI / ANTI, LEFT / RIGHT / FULL for an outer join, None for an inner or cross join
    (sqlglot gives `LEFT SEMI JOIN` the side LEFT: the kind decides)."""
    kind = (join.args.get("kind") or "").upper()
    if kind in ("SEMI", "ANTI"):
        return kind
    return join.side.upper() if join.side else None


@dataclass
class Shape:
    join: OuterJoin | None
    keys: list[exp.Expression] | None   # None: the outer join's key; []: the single row


def shape(sel: exp.Select) -> Shape | None:
    """How a non-linear block is keyed, or None for a linear block."""
    joins = sel.args.get("joins") or []
    outer = [k for k, j in enumerate(joins) if keyed_join_kind(j)]
    for j in joins:
        if j.args.get("method"):
            raise Unsupported(f"{j.args['method']} JOIN is refreshed FULL", j)
    if len(outer) > 1:
        raise Unsupported("more than one outer, semi or anti join in one SELECT is refreshed "
                          "FULL; split it into dynamic tables of one such join each",
                          joins[outer[1]])
    join = outer_join(sel, outer[0]) if outer else None
    group = sel.args.get("group")
    aggs = [n for n in scope_nodes(sel, ("expressions", "having", "order", "qualify"))
            if fn.is_aggregate(n) and not fn.is_windowed(n)]
    windows = [n for n in scope_nodes(sel, ("expressions", "qualify", "order"))
               if isinstance(n, exp.Window)]
    distinct = sel.args.get("distinct")
    if distinct is not None and distinct.args.get("on"):
        raise Unsupported("DISTINCT ON is refreshed FULL", distinct)
    if sel.args.get("qualify") and not windows:
        raise Unsupported("QUALIFY without a window is refreshed FULL", sel.args["qualify"])
    keys: list[exp.Expression] | None
    keyed = group is not None or aggs or windows or distinct is not None
    generator = next((n for e in sel.expressions for n in e.walk() if is_generator(n)), None)
    if keyed and generator is not None:
        raise Unsupported("a generator in the SELECT list of an aggregation, window or "
                          "DISTINCT is refreshed FULL", generator)
    if group is not None or aggs:
        if distinct is not None:
            raise Unsupported("DISTINCT over an aggregation is refreshed FULL", distinct)
        gkeys = group_keys(sel, group) if group is not None else []
        if windows:
            if not gkeys:
                raise Unsupported("a window over a scalar aggregate is refreshed FULL", windows[0])
            parts = window_partitions(sel, windows)     # []: the groups are one partition
            if not all(any(p == g for g in gkeys) for p in parts):
                raise Unsupported("a window whose PARTITION BY is not made of the GROUP BY "
                                  "keys is refreshed FULL", windows[0])
            keys = parts
        else:
            keys = gkeys
    elif windows:
        if distinct is not None:
            raise Unsupported("DISTINCT over window functions is refreshed FULL", distinct)
        keys = window_partitions(sel, windows)      # []: the block is one partition
    elif distinct is not None:
        if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star)
               for e in sel.expressions):
            raise Unsupported("SELECT DISTINCT * is refreshed FULL; name the columns", distinct)
        keys = [e.unalias() for e in sel.expressions]
    elif join is not None:
        keys = None     # the outer join's own key
    else:
        return None
    return Shape(join=join, keys=keys)

def group_keys(sel: exp.Select, group: exp.Group) -> list[exp.Expression]:
    if group.args.get("grouping_sets") or group.args.get("rollup") or group.args.get("cube") \
            or group.args.get("totals"):
        raise Unsupported("GROUPING SETS / ROLLUP / CUBE are refreshed FULL", group)
    outputs = [e.unalias() for e in sel.expressions]
    if group.args.get("all"):
        return [e for e in outputs if not any(fn.is_aggregate(n) for n in e.walk())]
    keys = []
    for key in group.expressions:
        if isinstance(key, (exp.GroupingSets, exp.Rollup, exp.Cube)):
            raise Unsupported("GROUPING SETS / ROLLUP / CUBE are refreshed FULL", group)
        if isinstance(key, exp.Literal) and key.is_int:
            n = int(key.name)
            if not 0 < n <= len(outputs):
                raise Unsupported(f"GROUP BY {n} does not name an output column", group)
            key = outputs[n - 1]
        if any(fn.is_aggregate(n) for n in key.walk()):
            raise Unsupported("an aggregate in GROUP BY cannot be refreshed incrementally", group)
        keys.append(key)
    return keys

def window_partitions(sel: exp.Select, windows: list[exp.Window]) -> list[exp.Expression]:
    """The PARTITION BY keys every window shares; [] when a window has none (or they share
    none): the whole block is then one partition, recomputed as one key (a scalar's)."""
    named = {w.name.lower(): w for w in sel.args.get("windows") or ()}
    common: list[exp.Expression] | None = None
    for win in windows:
        spec = win
        parts = spec.args.get("partition_by") or []
        alias = win.args.get("alias")
        if not parts and alias is not None and alias.name.lower() in named:
            parts = named[alias.name.lower()].args.get("partition_by") or []
        if not parts:
            return []
        common = list(parts) if common is None else [p for p in common
                                                     if any(p == q for q in parts)]
    return [p.copy() for p in common or []]

def outer_join(sel: exp.Select, index: int) -> OuterJoin:
    joins = sel.args["joins"]
    join = joins[index]
    side = keyed_join_kind(join) or ""
    semi = side in ("SEMI", "ANTI")
    label = f"LEFT {side} JOIN" if semi else f"{side} OUTER JOIN"
    if join.args.get("kind") and join.args["kind"].upper() == "NATURAL":
        raise Unsupported("NATURAL JOIN is refreshed FULL", join)
    items = block_items(sel)
    left_aliases = {(alias_of(i) or "").lower() for i in items[:index + 1]}
    right = items[index + 1]
    right_alias = (alias_of(right) or "").lower()
    if "" in left_aliases or not right_alias:
        raise Unsupported(f"an {'semi or anti' if semi else 'outer'} join between FROM items "
                          "without names is refreshed FULL", join)
    pairs: list[tuple[exp.Expression, exp.Expression]] = []
    using = join.args.get("using")
    if using:
        if index != 0:
            raise Unsupported(f"{label} with USING after other joins is refreshed FULL; "
                              "write ON with qualified columns", join)
        left_alias = alias_of(items[0])
        for ident in using:
            name = ident.name
            pairs.append((exp.column(name, left_alias), exp.column(name, alias_of(right))))
    else:
        for c in conjuncts(join.args.get("on")):
            # <=> keys as = does: the affected keys are matched null-safely, so a NULL key
            # recomputes the NULL rows of both sides
            if not isinstance(c, (exp.EQ, exp.NullSafeEQ)):
                continue

            def side_of(e):
                tabs = {col.table.lower() for col in e.find_all(exp.Column)}
                cols = list(e.find_all(exp.Column))
                if not cols or any(not col.table for col in cols):
                    return None
                if tabs <= left_aliases:
                    return "L"
                if tabs == {right_alias}:
                    return "R"
                return None
            a, b = side_of(c.this), side_of(c.expression)
            if (a, b) == ("L", "R"):
                pairs.append((c.this.copy(), c.expression.copy()))
            elif (a, b) == ("R", "L"):
                pairs.append((c.expression.copy(), c.this.copy()))
    if not pairs:
        return _theta_join(sel, index, side, label, left_aliases, right_alias)
    if side in ("LEFT", "SEMI", "ANTI"):
        key = [left for left, _ in pairs]
    elif side == "RIGHT":
        key = [r for _, r in pairs]
    else:
        key = [exp.Coalesce(this=left.copy(), expressions=[right_.copy()]) for left, right_ in pairs]
    return OuterJoin(index=index, pairs=pairs, key=key, kind=side)


def _theta_join(sel: exp.Select, index: int, side: str, label: str, left_aliases: set[str],
                right_alias: str) -> OuterJoin:
    """An outer, semi or anti join whose ON pairs no expression of one side with one of the
    other (`ON a.x < b.y`, an OR, a condition on one side only; an EXISTS correlated by `<`):
    keyed by the preserved side's columns the block reads (the left side's for SEMI / ANTI).
    Every result row comes from one preserved row, whose key it carries; the rows of the other
    side it matches depend on the ON, which reads key columns only (any other column of that
    side is left out of both); so a preserved row's change touches its key, and a change of the
    other side the keys of the preserved rows its rows satisfy the ON with (found by joining
    them, affected_keys._theta_join_keys). Recomputing those keys is exact, under a `*` too."""
    join = sel.args["joins"][index]
    if side == "FULL":
        raise Unsupported("FULL OUTER JOIN without an equality between columns of both sides is "
                          "refreshed FULL: neither side's rows key its result", join)
    preserved = {right_alias} if side == "RIGHT" else left_aliases
    key: list[exp.Expression] = []
    for node in scope_nodes(sel):
        if isinstance(node, exp.Column) and not node.is_star and node.table.lower() in preserved \
                and node not in key:
            key.append(node.copy())
    if not key:
        raise Unsupported(f"{label} without an equality between columns of both sides, "
                          "whose preserved side's columns the query does not read, is refreshed "
                          "FULL", join)
    return OuterJoin(index=index, pairs=[], key=key, kind=side)
