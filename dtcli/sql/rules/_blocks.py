"""Taking a qualified SELECT block apart and putting joins into it: the vocabulary the rules
that turn subqueries into joins share (subqueries.py, _scalar.py, _predicate_values.py, keyed_joins.py).

Every column of a qualified query names its source (`alias.column`); a block's sources are the
aliases of its FROM items, joins and LATERAL VIEWs. A column of a subquery whose alias is not
one of the subquery's own sources is a correlated reference to the block around it.
"""

from __future__ import annotations

import re

from sqlglot import exp

from dtcli.sql import functions as fn


def conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    """The top-level AND terms of a condition (parentheses unwrapped)."""
    if node is None:
        return []
    node = node.unnest()
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    return [node]


def and_all(conds: list[exp.Expression]) -> exp.Expression | None:
    """`conds` joined by AND (each parenthesised where it binds looser than AND), or None."""
    out: exp.Expression | None = None
    for cond in conds:
        cond = exp.Paren(this=cond) if isinstance(cond, (exp.Or, exp.Xor)) else cond
        out = cond if out is None else exp.And(this=out, expression=cond)
    return out


def items(sel: exp.Select) -> list[exp.Expression]:
    """The FROM item and every joined item, in order."""
    from_ = sel.args.get("from_") or sel.args.get("from")
    first = [from_.this] if from_ is not None else []
    return first + [j.this for j in sel.args.get("joins") or ()]


def sources(sel: exp.Select) -> set[str] | None:
    """The (lowercased) aliases the block's columns may name; None when an item has none."""
    out: set[str] = set()
    for item in items(sel):
        name = item.alias_or_name if isinstance(item, (exp.Table, exp.Subquery)) else item.alias
        if not name:
            return None
        out.add(name.lower())
    for lateral in sel.args.get("laterals") or ():
        if lateral.alias:
            out.add(lateral.alias.lower())
    return out


def own_columns(sel: exp.Select):
    """The columns of the block itself: its expressions, not those of queries nested in it
    (derived tables, subqueries), whose columns name their own sources."""
    def walk(node: exp.Expression):
        if isinstance(node, exp.Column):
            yield node
            return
        for child in node.iter_expressions():
            if isinstance(child, (exp.Query, exp.Subquery)) and child is not sel:
                continue
            yield from walk(child)
    for part in own_expressions(sel):
        yield from walk(part)


def own_expressions(sel: exp.Select):
    """A SELECT's own expressions (its list, WHERE, GROUP BY, HAVING, ORDER BY, joins' ON /
    USING), not its FROM or WITH."""
    for key, value in sel.args.items():
        if key in ("from", "from_", "with", "with_"):
            continue
        for v in (value if isinstance(value, list) else [value]):
            if isinstance(v, exp.Join):
                for part in (v.args.get("on"), *(v.args.get("using") or ())):
                    if isinstance(part, exp.Expression):
                        yield part
            elif isinstance(v, exp.Expression):
                yield v


def nested_queries(node: exp.Expression) -> list[exp.Expression]:
    """Queries inside an expression (subqueries left in it), not entering them."""
    out = []

    def walk(n: exp.Expression) -> None:
        for child in n.iter_expressions():
            if isinstance(child, (exp.Query, exp.Subquery)):
                out.append(child)
            else:
                walk(child)
    if isinstance(node, (exp.Query, exp.Subquery)):
        return [node]
    walk(node)
    return out


def tables_of(node: exp.Expression) -> set[str]:
    """The (lowercased) aliases the columns of an expression name ('' for an unqualified one)."""
    return {c.table.lower() for c in node.find_all(exp.Column)}


def has_aggregate(node: exp.Expression) -> bool:
    return any(fn.is_aggregate(n) and not fn.is_windowed(n) for n in _level(node))


def has_window(node: exp.Expression) -> bool:
    return any(isinstance(n, exp.Window) for n in _level(node))


def _level(node: exp.Expression):
    yield node
    for child in node.iter_expressions():
        if not isinstance(child, (exp.Query, exp.Subquery)):
            yield from _level(child)


def is_grouped(sel: exp.Select) -> bool:
    """GROUP BY, or an aggregate in its SELECT list or HAVING (one group of all rows)."""
    return sel.args.get("group") is not None or sel.args.get("having") is not None or any(
        has_aggregate(e) for e in sel.expressions)


class Fresh:
    """New names no part of the query uses: `__dt_sq1`, `__dt_sq2`..."""

    def __init__(self, query: exp.Expression):
        self.used = {i.name.lower() for i in query.find_all(exp.Identifier)}
        self.n = 0

    def name(self, prefix: str) -> str:
        while True:
            self.n += 1
            candidate = f"{prefix}{self.n}"
            if candidate.lower() not in self.used:
                self.used.add(candidate.lower())
                return candidate


def output_names(columns: list[exp.Column]) -> dict[tuple[str, str], str]:
    """A distinct output name for each (alias, column) a derived table projects: the column's
    own name where no other one has it, else `alias_column`."""
    keys = list(dict.fromkeys((c.table.lower(), c.name) for c in columns))
    counts: dict[str, int] = {}
    for _, name in keys:
        counts[name.lower()] = counts.get(name.lower(), 0) + 1
    out: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for table, name in keys:
        base = name if counts[name.lower()] == 1 else f"{table}_{name}"
        candidate, n = base, 1
        while candidate.lower() in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate.lower())
        out[(table, name)] = candidate
    return out


def remap(node: exp.Expression, aliases: set[str], alias: str,
          names: dict[tuple[str, str], str]) -> exp.Expression:
    """`node` (modified) with every column of `aliases` named through the derived table `alias`."""
    def swap(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column) and n.table.lower() in aliases:
            return exp.column(names[(n.table.lower(), n.name)], alias)
        return n
    return node.transform(swap, copy=False)


def with_children(node: exp.Expression, f) -> exp.Expression:
    """`node` (modified) with each child expression replaced by `f(child)`: a rewrite that
    decides per node whether to go further down (where sqlglot's `transform` always does)."""
    for key, value in list(node.args.items()):
        if isinstance(value, exp.Expression):
            node.set(key, f(value))
        elif isinstance(value, list):
            node.set(key, [f(v) if isinstance(v, exp.Expression) else v for v in value])
    return node


def derived(body: exp.Query, alias: str) -> exp.Subquery:
    return exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(alias)))


def query_body(query: exp.Query) -> exp.Query:
    """A copy of a subquery to use as a derived table (ORDER BY dropped unless a LIMIT needs it)."""
    body = query.copy()
    if isinstance(body, exp.Select) and not body.args.get("limit"):
        for arg in ("order", "sort", "cluster", "distribute"):
            body.set(arg, None)
    return body


def as_derived(query: exp.Query, alias: str) -> tuple[exp.Subquery, list[exp.Column]]:
    """An uncorrelated subquery as a derived table, and its output columns there."""
    body = query_body(query)
    names = [s.alias_or_name for s in body.selects]
    item = derived(body, alias)
    if any(not n or n == "*" for n in names) or len({n.lower() for n in names}) != len(names):
        names = [f"__dt_v{k}" for k in range(len(names))]
        item.args["alias"].set("columns", [exp.to_identifier(n) for n in names])
    return item, [exp.column(n, alias) for n in names]


def append_join(sel: exp.Select, item: exp.Expression, *, side: str | None = None,
                kind: str | None = None, on: exp.Expression | None = None) -> exp.Join:
    """Join `item` after the block's joins (joins associate to the left, so the new one sees
    every earlier item); returns the join node."""
    join = exp.Join(this=item)
    if side:
        join.set("side", side)
    if kind:
        join.set("kind", kind)
    if on is not None:
        join.set("on", on)
    sel.append("joins", join)
    return join


def set_where(sel: exp.Select, conds: list[exp.Expression]) -> None:
    cond = and_all(conds)
    sel.set("where", exp.Where(this=cond) if cond is not None else None)


def short(node: exp.Expression, limit: int = 60) -> str:
    """A one-line rendering of an expression, cut to `limit` characters, for explain's labels."""
    text = re.sub(r"\s+", " ", node.sql(dialect="spark"))
    return text if len(text) <= limit else text[:limit - 1] + "…"
