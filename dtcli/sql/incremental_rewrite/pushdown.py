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

from collections import deque
from collections.abc import Callable

from sqlglot import exp

from dtcli.sql.incremental_rewrite.relations import alias_of, block_items, conjuncts, is_table_ref, key_column

# narrow(input name, its column, the input whose scan would take the predicate (None: a FROM item
# that is not an input table)[, via]) -> (expression -> predicate restricting it to the change's
# values of that column), or None when they are not known or not worth pushing into that scan.
# `via`: the (input, column) pairs a chain of equalities goes through to the column restricted,
# which must hold values of the change column's type for the chain to carry them (see below)
Narrow = Callable[..., Callable[[exp.Expression], exp.Expression | None] | None]
MAX_VIA = 2         # the most input columns a chain goes through


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


Links = dict[tuple[int, int], list[tuple[exp.Column, exp.Column]]]


def item_links(sel: exp.Select, keep: Callable[[int], bool] = lambda k: True) -> Links | None:
    """The equalities joining each pair of FROM items of an inner-join block, both ways:
    (item, item) -> [(column of the first, column of the second)], between the items `keep`
    accepts; None when the block has a LATERAL, or an item without an alias or two of one."""
    if sel.args.get("laterals"):
        return None
    aliases = [(alias_of(i) or "").lower() for i in block_items(sel)]
    if "" in aliases or len(set(aliases)) != len(aliases):
        return None
    at = {a: k for k, a in enumerate(aliases)}
    links: Links = {}
    for left, right in equalities(sel):
        a, b = at.get(left.table.lower()), at.get(right.table.lower())
        if a is None or b is None or a == b or not keep(a) or not keep(b):
            continue
        links.setdefault((a, b), []).append((left, right))
        links.setdefault((b, a), []).append((right, left))
    return links


def pushed_keys(sel: exp.Select, index: int, narrow: Narrow, name: str | None = None) -> list[exp.Expression]:
    """Predicates restricting the other FROM items of `sel` to the join values of item
    `index`'s change (the item is an input table read as its change), or, with `name`, of the
    rows of that name it is read as (a join hub's kept rows, hub.py)."""
    items = block_items(sel)
    item = items[index]
    if not (isinstance(item, exp.Table) and is_table_ref(item)):
        return []
    source = name or item.name.lower()
    out = _joined(sel, index, lambda column, scanned: narrow(source, column, scanned))
    if out is not None and name is None:
        out += _through_inputs(sel, items, (alias_of(item) or "").lower(), source, narrow)
    return out or []


def _joined(sel: exp.Select, index: int, restriction) -> list[exp.Expression] | None:
    """Per equality between a column of FROM item `index` and another item's, the predicate
    `restriction(own column's name, the other item's input table or None)` makes of the other
    column, where it makes one; None when the item cannot be told apart by its alias."""
    items = block_items(sel)
    mine = (alias_of(items[index]) or "").lower()
    others = {(alias_of(i) or "").lower(): i for k, i in enumerate(items) if k != index}
    if not mine or mine in others or sel.args.get("laterals"):
        return None
    out: list[exp.Expression] = []
    for left, right in equalities(sel):
        for own, other in ((left, right), (right, left)):
            if own.table.lower() != mine or other.table.lower() not in others:
                continue
            target = others[other.table.lower()]
            scanned = target.name.lower() if isinstance(target, exp.Table) and is_table_ref(target) else None
            restrict = restriction(own.name, scanned)
            cond = restrict(other.copy()) if restrict is not None else None
            if cond is not None:
                out.append(exp.Paren(this=cond))
    return out


def _through_inputs(sel: exp.Select, items: list[exp.Expression], mine: str, name: str,
                    narrow: Narrow) -> list[exp.Expression]:
    """Predicates on the columns of derived tables (FROM items that are subqueries) that a chain
    of equalities through input tables' columns joins to a column of the change: in TPC-H Q2,
    `__dt_sq1.ps_partkey = part.p_partkey AND part.p_partkey = partsupp.ps_partkey` restrict the
    minimum cost per part to the parts of the changed partsupp rows, a filter on the derived
    table's GROUP BY key that Spark pushes below its aggregate into its scan of partsupp: pushed
    only where that scan's files let it skip enough (the engine's narrowing), so the column
    must be one of an input table's the derived table selects as it is. Equality carries
    a value along a chain only between columns of one type (a string equal to a number is equal
    to other strings than that one's text), which the engine checks (`via`)."""
    kinds = {(alias_of(i) or "").lower(): i for i in items}
    derived = {a for a, i in kinds.items() if isinstance(i, exp.Subquery)}
    inputs = {a: i.name.lower() for a, i in kinds.items() if isinstance(i, exp.Table) and is_table_ref(i)}
    graph: dict[tuple[str, str], list[exp.Column]] = {}
    for left, right in equalities(sel):
        for a, b in ((left, right), (right, left)):
            graph.setdefault((a.table.lower(), a.name.lower()), []).append(b)
    out: list[exp.Expression] = []
    owns = {c.name.lower(): c for pairs in graph.values() for c in pairs if c.table.lower() == mine}
    for own in owns.values():
        start = (mine, own.name.lower())
        seen, queue = {start}, deque([(start, [])])
        while queue:
            here, via = queue.popleft()
            for nxt in graph.get(here, []):
                node = (nxt.table.lower(), nxt.name.lower())
                if node in seen or node[0] == mine:
                    continue
                seen.add(node)
                if node[0] in derived and via:
                    scanned = _scanned(kinds[node[0]], node[1])
                    restrict = narrow(name, own.name, scanned, via=[(inputs[t], c) for t, c in via]) \
                        if scanned is not None else None
                    cond = restrict(nxt.copy()) if restrict is not None else None
                    if cond is not None:
                        out.append(exp.Paren(this=cond))
                elif node[0] in inputs and len(via) < MAX_VIA:
                    queue.append((node, [*via, node]))
    return out


def _scanned(derived: exp.Subquery, column: str) -> str | None:
    """The input table a derived table's output `column` is a column of, under the same name
    (whose file statistics then tell whether a filter on it skips files), else None."""
    inner = derived.this
    if not isinstance(inner, exp.Select):
        return None
    found = [e.unalias() for e in inner.expressions if e.alias_or_name.lower() == column]
    if len(found) != 1 or not isinstance(found[0], exp.Column) or found[0].name.lower() != column:
        return None
    tables = [i for i in block_items(inner) if (alias_of(i) or "").lower() == found[0].table.lower()]
    ok = len(tables) == 1 and isinstance(tables[0], exp.Table) and is_table_ref(tables[0])
    return tables[0].name.lower() if ok else None


def key_set_pushed(sel: exp.Select, index: int, view: str, names: list[str | None],
                   narrow: Narrow) -> list[exp.Expression]:
    """Predicates restricting the columns `sel` equates with FROM item `index`'s key columns to
    the keys that item's change holds: the key set `view`, whose column n is the item's output
    `names[n]` (None: not selected), its values pushed as a change's are (`narrow`: into a scan
    they let skip enough of). Every row of a keyed derived table's change has its key among the
    keys the change was recomputed for, so a row it joins has the joined column's value among
    them: TPC-H Q2's minimum cost per part, recomputed for the changed parts, restricts part's
    key, and through part's equality with partsupp's (Spark infers it) partsupp's scan."""
    position = {n.lower(): k for k, n in reversed(list(enumerate(names))) if n is not None}

    def restriction(column: str, scanned: str | None):
        k = position.get(column.lower())
        return narrow(view, key_column(k), scanned) if k is not None else None
    return _joined(sel, index, restriction) or []
