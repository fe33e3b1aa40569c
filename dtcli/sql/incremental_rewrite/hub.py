"""A join's hub: the large input the changes of the others are joined to, read once for all terms.

The delta rule gives a block of inner joins one term per changed input, and each term reads
every other input whole: in TPC-H Q9 (part, supplier, lineitem, partsupp and orders changed,
each joined to lineitem) four terms scan lineitem, where a recompute scans it once. Yet a term
keeps only the rows of lineitem that join its change: `l_partkey` among the changed parts'
keys in one, `l_orderkey` among the changed orders' in another. So the rows of the hub that
any term can keep are computed first, in one scan:

    SELECT * FROM lineitem AS lineitem
    WHERE lineitem.l_partkey IN (SELECT part.p_partkey FROM <part's change> AS part)
       OR lineitem.l_orderkey IN (SELECT orders.o_orderkey FROM <orders' change> AS orders)
       OR ...

kept for the refresh (a few hundred rows for a small change), and every term that reads the
hub at its new version reads those rows instead. An input joined to the hub through others
(customer through orders in Q7) is reached by nesting: `l_orderkey IN (SELECT o_orderkey FROM
orders WHERE o_custkey IN (SELECT c_custkey FROM <customer's change>))`, the inputs between
read at their new version.

Exact because a term's row joins the hub through every chain of equalities of the block: the
hub rows a term keeps are among those one chain from a change reaches. The terms are ordered
from the hub outwards (the delta rule holds in any order of the inputs): the hub first, then
by the number of joins between an input and the hub, so that in the term of a changed input
the hub and the inputs between them are read at their new version, as the chain's predicate
reads them. A term that reads several changes (own_rows.py's inclusion-exclusion terms) reads
the kept rows when one of its changes is reached through inputs it reads at their new version
(`Hub.serves`).

Chosen only for a block of inner joins whose equalities join the hub to at least two changed
inputs whose terms would read it whole (with one, its one term reads the hub once either way;
a change whose join values let Delta skip most of the hub's files costs its term little), and
only when the engine keeps rows (`keep`) and gives the input's size (`size`), which it does for
inputs large enough that a second scan costs more than the Spark job keeping the rows
(engine/runtime/narrowing.py). Changes are reached through inputs smaller than the hub only
(the kept rows' query scans them); of several candidates, the one saving the most bytes of scans.

>>> import sqlglot
>>> sel = sqlglot.parse_one("SELECT 1 FROM l AS l, o AS o, c AS c, p AS p WHERE l.ok = o.ok "
...                         "AND o.ck = c.ck AND l.pk = p.pk", read="spark")
>>> found = find(sel, {1, 2, 3}, {"l": 1 << 30}.get)
>>> found.index, [found.rank[k] for k in range(4)], found.paths
(0, [0, 1, 3, 2], {1: [1], 2: [1, 2], 3: [3]})
>>> found.serves({2}), found.serves({1, 2}), found.serves({0, 1})
(True, True, False)

Where the changes of o and p name values that let l's scan skip most of its files, only c's
term would read l whole: no hub.

>>> find(sel, {1, 2, 3}, {"l": 1 << 30}.get, lambda hub, item, links: item in (1, 3)) is None
True
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from dtcli.sql.incremental_rewrite.pushdown import item_links
from dtcli.sql.incremental_rewrite.relations import alias_of, block_items, is_table_ref, scope_nodes


@dataclass
class Hub:
    index: int                       # the hub's FROM item
    rank: dict[int, int]             # FROM item -> its place in the terms' order (the hub 0)
    # changed item -> the items from the hub to it (the hub left out, the item last)
    paths: dict[int, list[int]]
    # (item, item) -> the equalities joining them: [(column of the first, column of the second)]
    links: dict[tuple[int, int], list[tuple[exp.Column, exp.Column]]]
    view: str | None = None          # the kept rows, once computed

    def serves(self, changes: set[int]) -> bool:
        """Whether a term reading the items `changes` as their change may read the kept rows
        for the hub: the hub is not among them and one of them is reached. The one nearest the
        hub is then reached through items the term reads at their new version: nearer ones,
        which the delta rule's order puts before it and an inclusion-exclusion term (own_rows.py)
        reads new unless they are among `changes`, which they are not, being nearer."""
        return self.index not in changes and any(k in self.paths for k in changes)

    def rows(self, sel: exp.Select, new: Callable[[exp.Expression], exp.Expression],
             change: Callable[[exp.Expression], exp.Expression]) -> exp.Select:
        """The query of the hub rows some change reaches: `new(item)` reads an item at its
        new version, `change(item)` as its change."""
        items = block_items(sel)
        hub = items[self.index]
        cond: exp.Expression | None = None
        for k in sorted(self.paths):
            chain = [self.index, *self.paths[k]]
            reach = _reach(items, chain, self.links, new, change)
            cond = reach if cond is None else exp.or_(cond, reach, copy=False)
        rel = new(hub)
        names = used_columns(sel, alias_of(items[self.index]))
        outputs = [exp.column(n, alias_of(rel), quoted=True) for n in names] if names else [exp.Star()]
        return exp.select(*outputs).from_(rel).where(cond, copy=False)


def used_columns(sel: exp.Select, alias: str | None) -> list[str] | None:
    """The columns of the FROM item `alias` that block `sel` reads, in the order first met; None
    when that cannot be told (a star, an unqualified column, a nested query, whose own FROM may
    reuse the alias): then the kept rows keep every column. Per FROM item, not per input as
    sql/columns_read.py counts them: a self-join's other reading of the hub's table adds none.
    The hub is often the widest input (lineitem, of which a block reads 5 of 16 columns), and
    Parquet reads only the columns asked for: at TPC-H SF10 the kept rows of Q8 scanned all of
    lineitem's columns for 63 s.

    >>> import sqlglot
    >>> sel = sqlglot.parse_one("SELECT SUM(l.price) FROM l AS l, o AS o WHERE l.ok = o.ok "
    ...                         "AND l.day > 3", read="spark")
    >>> used_columns(sel, "l"), used_columns(sel, "o")
    (['price', 'ok', 'day'], ['ok'])
    >>> used_columns(sqlglot.parse_one("SELECT l.*, o.ok FROM l AS l, o AS o", read="spark"), "l") is None
    True
    >>> used_columns(sqlglot.parse_one("SELECT price FROM l AS l, o AS o", read="spark"), "l") is None
    True
    >>> used_columns(sqlglot.parse_one("SELECT l.price FROM l AS l WHERE l.ok IN (SELECT l.ok FROM m AS l)",
    ...                                read="spark"), "l") is None
    True
    """
    if not alias:
        return None
    names: dict[str, str] = {}          # lower-cased -> as first written: Spark's names ignore case
    for node in scope_nodes(sel):
        if isinstance(node, (exp.Star, exp.Query)) or (
                isinstance(node, exp.Column) and (node.is_star or not node.table)):
            return None
        if isinstance(node, exp.Column) and node.table.lower() == alias.lower():
            names.setdefault(node.name.lower(), node.name)
    return list(names.values()) or None


def _reach(items, chain: list[int], links, new, change) -> exp.Expression:
    """`column of the chain's first link IN (SELECT … FROM next item WHERE … IN (…))`, down to
    the last item read as its change; a link of several equalities is one IN per equality."""
    inner: exp.Expression | None = None
    for step in range(len(chain) - 1, 0, -1):
        here, before = chain[step], chain[step - 1]
        rel = change(items[here]) if step == len(chain) - 1 else new(items[here])
        alias = alias_of(rel) or alias_of(items[here])
        conds = []
        # every equality with the change itself (it is small); one through an input between,
        # whose scan each would repeat
        pairs = links[(before, here)] if step == len(chain) - 1 else links[(before, here)][:1]
        for outer_col, own_col in pairs:
            sub = exp.select(exp.column(own_col.name, alias, quoted=True)).from_(rel.copy())
            if inner is not None:
                sub = sub.where(inner.copy(), copy=False)
            conds.append(exp.In(this=exp.column(outer_col.name, alias_of(items[before]), quoted=True),
                                query=exp.Subquery(this=sub)))
        inner = exp.and_(*conds, copy=False) if len(conds) > 1 else conds[0]
    assert inner is not None
    return inner


def find(sel: exp.Select, changed: set[int], size: Callable[[str], int | None],
         skips: Callable[[int, int, list[tuple[exp.Column, exp.Column]]], bool] | None = None) -> Hub | None:
    """The block's hub when it has one worth keeping (see the module docstring), else None.
    `changed`: the FROM items read as their change; `size(input)`: its bytes, None when it is
    too small to be a hub; `skips(hub, item, links)`: whether the change of `item`, joined to
    the hub by `links` ([(hub's column, item's column)]), names values that let the hub's scan
    skip most of its files, so that its term does not read the hub whole either way."""
    items = block_items(sel)
    tables = {k for k, i in enumerate(items) if isinstance(i, exp.Table) and is_table_ref(i)}
    links = item_links(sel, tables.__contains__)
    if links is None:
        return None
    sizes = {k: size(items[k].name.lower()) for k in tables}
    best: Hub | None = None
    best_saving = 0
    for h in sorted(tables):
        bytes_ = sizes[h]
        if bytes_ is None:
            continue
        # through inputs smaller than the hub only: the kept rows' query scans those between
        passable = {k for k in tables if k == h or (sizes[k] or 0) < bytes_}
        parent, dist = _bfs(h, len(items), links, passable)
        paths = {k: _path(k, parent) for k in changed if k != h and k in tables and k in dist}
        # the terms that would scan the hub whole: not those whose change's values skip most of
        # its files (a direct link the engine narrows, pushdown.py)
        whole = [k for k, path in paths.items()
                 if skips is None or len(path) > 1 or not skips(h, k, links[(h, k)])]
        # the scans saved, less those the kept rows' query adds for the inputs between
        saving = (len(whole) - 1) * bytes_ - sum(sizes[j] or 0 for path in paths.values() for j in path[:-1])
        if len(whole) >= 2 and saving > best_saving:
            order = sorted(range(len(items)), key=lambda k: (dist.get(k, len(items)), k))
            best, best_saving = Hub(h, {k: r for r, k in enumerate(order)}, paths, links), saving
    return best


def _bfs(start: int, n: int, links, passable: set[int]) -> tuple[dict[int, int], dict[int, int]]:
    """Parents and distances from `start` along the links, going on only from `passable` items."""
    parent: dict[int, int] = {}
    dist = {start: 0}
    queue = deque([start])
    while queue:
        here = queue.popleft()
        if here not in passable:
            continue
        for nxt in range(n):
            if (here, nxt) in links and nxt not in dist:
                dist[nxt], parent[nxt] = dist[here] + 1, here
                queue.append(nxt)
    return parent, dist


def _path(k: int, parent: dict[int, int]) -> list[int]:
    out = [k]
    while out[-1] in parent:
        out.append(parent[out[-1]])
    return list(reversed(out[:-1]))      # the hub left out
