"""Affected keys of a GROUP BY over inner joins found from the changes and the few inputs that
lead to a join column among the keys, instead of from every term of the join.

The affected keys of a keyed block are the keys of the rows a change touches (affected_keys.py).
Read as the delta rule's terms, each changed input's term joins its change with every other
input: in TPC-H Q10 (`GROUP BY c_custkey, c_name, …, n_name` over customer, orders, lineitem
and nation), a changed customer is joined with orders and lineitem, a scan of both, only to learn
which customers changed. Yet any subset of the key columns names groups too, coarser ones: all
the rows of a group share its value of `c_custkey`, so the block recomputed for "the groups whose
`c_custkey` is among these" recomputes every affected group whole (and perhaps some others, which
come out as they were). Keys that are join columns (`c_custkey`, joined to `o_custkey`) are
entity identifiers, almost as fine as the whole key, and a change reaches them cheaply:

* a changed customer names its own `c_custkey`; a changed order names it as `o_custkey`, the
  column the block equates with it (read from the change alone);
* a changed line item has no such column: it is joined with orders at the new version (the
  input next to it on the way to one that has), `l_orderkey = o_orderkey`, for `o_custkey`.

Exact (a superset of the affected keys): take an output row at either version that a change
touched, and among its rows that changed, the one nearest, along the join paths below, to an
input naming the keys. The rows between are unchanged, so in the new version, and they satisfy
the block's equalities and their own conditions: the join from that change row finds them and
names the output row's keys. The paths form a tree (a breadth-first search from the inputs that
name the keys), so that "nearest" is the same for every change along it.

The keys kept are the key columns joined by an equality of the block; the others are left out
when their input holds one of the kept columns or is joined directly to one that does (Q10's
`c_name` and, through `c_nationkey`, `n_name`). A key column of an input standing apart (a
nation's name beside an order's date) could make the groups much coarser: then no subset, and
the terms are read as before. The engine checks that the keys' values read through another
input's column have the type of the DT's column before naming rows by them (strategies/
incremental.py).

>>> import sqlglot
>>> sel = sqlglot.parse_one(
...     "SELECT c.ck, c.name, n.name, SUM(l.v) FROM c AS c, o AS o, l AS l, n AS n "
...     "WHERE c.ck = o.ck AND l.ok = o.ok AND o.day > 3 AND c.nk = n.nk "
...     "GROUP BY c.ck, c.name, n.name", read="spark")
>>> plan = reach(sel, [e.copy() for e in sel.args["group"].expressions], [0, 1, 2])
>>> plan.of, {k: [c.sql() for c in cols] for k, cols in plan.covering.items()}, plan.paths
((0,), {0: ['c.ck'], 1: ['o.ck']}, {2: [1]})
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from sqlglot import exp

from dtcli.sql import functions as fn
from dtcli.sql.incremental_rewrite.pushdown import Links, item_links
from dtcli.sql.incremental_rewrite.relations import BOTH, NEW, alias_of, block_items, conjuncts, key_column


@dataclass
class Reach:
    of: tuple[int, ...]                  # the key positions kept
    covering: dict[int, list[exp.Column]]  # item -> its column naming each kept key
    paths: dict[int, list[int]]          # changed item naming none -> the items to one that does
    links: Links


def reach(sel: exp.Select, exprs: list[exp.Expression], changed: list[int]) -> Reach | None:
    """How each changed item's change names the kept keys (see the module docstring), or None
    when no key column is joined, a left-out column stands apart, or a change reaches none."""
    links = item_links(sel)
    if links is None:
        return None
    items = block_items(sel)
    at = {(alias_of(i) or "").lower(): k for k, i in enumerate(items)}
    joined = {(a, own.name.lower()) for (a, _), pairs in links.items() for own, _ in pairs}

    def owner(e: exp.Expression) -> int | None:
        return at.get(e.table.lower()) if isinstance(e, exp.Column) and e.table else None

    def owners(e: exp.Expression) -> set[int | None]:
        return {at.get(c.table.lower()) if c.table else None for c in e.find_all(exp.Column)} or {None}
    of = tuple(p for p, e in enumerate(exprs) if owner(e) is not None and (owner(e), e.name.lower()) in joined)
    if not of:
        return None
    keyed = {owner(exprs[p]) for p in of}
    near = keyed | {b for (a, b) in links if a in keyed}
    if any(not owners(e) <= near for p, e in enumerate(exprs) if p not in of):
        return None
    covering = {k: names for k in range(len(items)) if (names := _names(k, [exprs[p] for p in of], owner, links))}
    parent = _bfs(set(covering), len(items), links)
    paths: dict[int, list[int]] = {}
    for k in changed:
        if k in covering:
            continue
        if k not in parent:
            return None
        path, here = [], k
        while here not in covering:
            here = parent[here]
            path.append(here)
        paths[k] = path
    return Reach(of, covering, paths, links)


def _names(k: int, keys: list[exp.Expression], owner, links) -> list[exp.Column] | None:
    """Item k's column naming each of `keys`: the key column itself when k holds it, else one
    k equates with it; None when k names some key by none."""
    out = []
    for e in keys:
        r = owner(e)
        if r == k:
            out.append(e)
            continue
        found = [mine for mine, theirs in links.get((k, r), []) if theirs.name.lower() == e.name.lower()]
        if not found:
            return None
        out.append(found[0])
    return out


def _bfs(starts: set[int], n: int, links) -> dict[int, int]:
    """Each item's next item on a shortest way to one of `starts` (a tree rooted at them)."""
    parent: dict[int, int] = {}
    seen = set(starts)
    queue = deque(sorted(starts))
    while queue:
        here = queue.popleft()
        for nxt in range(n):
            if (nxt, here) in links and nxt not in seen:
                seen.add(nxt)
                parent[nxt] = here
                queue.append(nxt)
    return parent


def key_parts(compiler, sel: exp.Select, plan: Reach, changed: list[int]) -> list[exp.Select]:
    """Per changed item, the query of the kept keys its change names (columns c0..cn-1): its
    change, joined along its path with the items there at their new version, each item's own
    conditions applied."""
    items = block_items(sel)
    parts = []
    for k in changed:
        chain = [k, *plan.paths.get(k, [])]
        last = chain[-1]
        cols = [exp.alias_(col.copy(), key_column(n)) for n, col in enumerate(plan.covering[last])]
        out = exp.select(*cols).from_(compiler.item_relation(items[k], BOTH))
        for before, here in zip(chain, chain[1:]):
            on = exp.and_(*[exp.EQ(this=a.copy(), expression=b.copy()) for a, b in plan.links[(before, here)]])
            out = out.join(compiler.item_relation(items[here], NEW), on=on)
        own = [c.copy() for j in chain for c in own_conditions(sel, alias_of(items[j]))]
        if own:
            out = out.where(exp.and_(*own))
        parts.append(out)
    return parts


def own_conditions(sel: exp.Select, alias: str | None) -> list[exp.Expression]:
    """The WHERE's conjuncts on the columns of FROM item `alias` alone (no subquery, nothing
    nondeterministic or user-defined): conditions its every row in the block's output meets."""
    if not alias:
        return []
    where = sel.args.get("where")

    def own(c: exp.Expression) -> bool:
        cols = list(c.find_all(exp.Column))
        return bool(cols) and all(col.table.lower() == alias.lower() for col in cols) and not any(
            isinstance(n, (exp.Query, exp.Subquery)) or fn.is_nondeterministic(n) or fn.is_user_defined(n)
            for n in c.walk())
    return [c for c in conjuncts(where.this if where is not None else None) if own(c)]
