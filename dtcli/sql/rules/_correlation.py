"""Splitting a subquery into the rows it reads and the conditions that tie it to the query
around it (its correlation), so that it can become a derived table joined ON those conditions.

`SELECT ... FROM b WHERE b.k = a.k AND b.x > 0` inside a block reading `a`: the conjunct
`b.k = a.k` names a column of the outer block (it is correlated), `b.x > 0` does not. The
derived table is `SELECT b.k FROM b WHERE b.x > 0` (the columns the correlation needs), and the
correlation, with `b.k` read from the derived table, becomes the join's ON condition. Exact for
EXISTS-like uses (does some row satisfy every conjunct?) because a row of `b` satisfies the
subquery's WHERE exactly when it passes the derived table's WHERE and the ON condition is TRUE.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dtcli.sql import functions as fn
from dtcli.sql.rules._blocks import (
    and_all,
    conjuncts,
    is_grouped,
    nested_queries,
    output_names,
    own_columns,
    own_expressions,
    remap,
    sources,
    tables_of,
)
from dtcli.sql.rules._notes import why_left


@dataclass
class Correlation:
    body: exp.Select                    # the subquery with only its uncorrelated WHERE conjuncts
    correlated: list[exp.Expression]    # its WHERE conjuncts that name outer columns
    inner: set[str]                     # the subquery's own sources (lowercased aliases)

    @property
    def is_correlated(self) -> bool:
        return bool(self.correlated)

    def equalities(self) -> list[tuple[exp.Expression, exp.Expression]] | None:
        """(inner expression, outer expression) of each correlated conjunct when every one is
        an equality between an expression of the subquery's columns and one of outer columns;
        None otherwise."""
        pairs = []
        for cond in self.correlated:
            if not isinstance(cond, exp.EQ):
                return None
            sides = [self.side(cond.this), self.side(cond.expression)]
            if sides == ["inner", "outer"]:
                pairs.append((cond.this, cond.expression))
            elif sides == ["outer", "inner"]:
                pairs.append((cond.expression, cond.this))
            else:
                return None
        return pairs

    def side(self, node: exp.Expression) -> str | None:
        tables = tables_of(node)
        if not tables or any(fn.is_nondeterministic(n) for n in node.walk()):
            return None
        if tables <= self.inner:
            return "inner"
        if not tables & self.inner:
            return "outer"
        return None


def split(sub: exp.Select, outer: set[str]) -> Correlation | str:
    """The subquery `sub` (not modified) split by correlation, or why it cannot be: its outer
    columns must name sources of the block around it (`outer`) and appear only in top-level
    conjuncts of its WHERE, and no subquery may be left inside it."""
    inner = sources(sub)
    if inner is None:
        return "the subquery reads a FROM item without a name"
    left = [q for e in own_expressions(sub) for q in nested_queries(e)]
    if left:
        why = why_left(left[0])
        return ("the subquery holds a subquery of its own that dt could not rewrite"
                + (f" ({why})" if why else ""))
    where = sub.args.get("where")
    in_where = {id(c) for c in where.find_all(exp.Column)} if where is not None else set()
    for col in own_columns(sub):
        table = col.table.lower()
        if not table:
            return f"column {col.sql(dialect='spark')} names no source"
        if table in inner:
            continue
        if table not in outer:
            return (f"it refers to {col.sql(dialect='spark')}, a column of a query further out "
                    "than the one it is written in")
        if id(col) not in in_where:
            return (f"its correlated column {col.sql(dialect='spark')} is used outside its WHERE "
                    "clause")
    conds = [f for c in (conjuncts(where.this) if where is not None else []) for f in factored(c)]
    correlated = [c for c in conds if not tables_of(c) <= inner]
    body = sub.copy()
    kept = [c.copy() for c in conds if tables_of(c) <= inner]
    cond = and_all(kept)
    body.set("where", exp.Where(this=cond) if cond is not None else None)
    corr = Correlation(body, [c.copy() for c in correlated], inner)
    return ungrouped(corr) or corr


GROUPED = "__dt_gs"


def ungrouped(corr: Correlation) -> Correlation | None:
    """A correlated subquery with a GROUP BY, correlated by equalities `inner column = outer`
    alone, as one without: its groups are found per correlated key by adding the inner columns
    to its GROUP BY (the rows `inner = outer` selects share those columns' values, so each of
    their groups is one group of the wider GROUP BY: HAVING and the aggregates see the same
    rows), in a derived table whose rows the correlation then selects. None when it does not
    apply (no GROUP BY, another correlation, LIMIT / windows / QUALIFY: not_plain says why).

    >>> import sqlglot
    >>> c = split(sqlglot.parse_one("SELECT b.k FROM b AS b WHERE b.g = a.g AND b.w > 0 "
    ...                             "GROUP BY b.k HAVING COUNT(*) > 1"), {"a"})
    >>> print(c.body.sql(), "|", c.correlated[0].sql())
    SELECT __dt_gs.k AS k FROM (SELECT b.k AS k, b.g AS __dt_c0 FROM b AS b WHERE b.w > 0
    GROUP BY b.k, b.g HAVING COUNT(*) > 1) AS __dt_gs | __dt_gs.__dt_c0 = a.g
    """
    body = corr.body
    group = body.args.get("group")
    if not corr.is_correlated or group is None or any(
            isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets)) for g in group.expressions) \
            or group.args.get("rollup") or group.args.get("cube") or group.args.get("grouping_sets") \
            or body.args.get("limit") or body.args.get("offset") or body.args.get("qualify") \
            or any(isinstance(n, exp.Window) for e in body.expressions for n in e.walk()):
        return None
    pairs = corr.equalities()
    if pairs is None or not all(isinstance(inner, exp.Column) for inner, _ in pairs):
        return None
    keys: list[exp.Column] = []
    for inner, _ in pairs:
        if not any(inner == k for k in keys):
            keys.append(inner)
    names = [s.alias_or_name for s in body.expressions]
    if any(not n or n == "*" for n in names) or len({n.lower() for n in names}) != len(names):
        names = [f"__dt_o{k}" for k in range(len(names))]
    key_names = [f"__dt_c{k}" for k in range(len(keys))]
    grouped = body.copy()
    for arg in ("order", "sort", "cluster", "distribute"):
        grouped.set(arg, None)
    grouped.set("expressions", [exp.alias_(e.unalias().copy(), n) for e, n in zip(body.expressions, names)]
                + [exp.alias_(k.copy(), n) for k, n in zip(keys, key_names)])
    extra = [k.copy() for k in keys if not any(k == g for g in group.expressions)]
    grouped.set("group", exp.Group(expressions=[g.copy() for g in group.expressions] + extra))
    outer = exp.select(*[exp.alias_(exp.column(n, GROUPED), s.alias_or_name or n)
                         for s, n in zip(body.expressions, names)]).from_(
        exp.Subquery(this=grouped, alias=exp.TableAlias(this=exp.to_identifier(GROUPED))))

    def swap(node: exp.Expression) -> exp.Expression:
        for k, n in zip(keys, key_names):
            if node == k:
                return exp.column(n, GROUPED)
        return node
    correlated = [c.copy().transform(swap) for c in corr.correlated]
    return Correlation(outer, correlated, {GROUPED})


def disjuncts(node: exp.Expression) -> list[exp.Expression]:
    node = node.unnest()
    if isinstance(node, exp.Or):
        return disjuncts(node.this) + disjuncts(node.expression)
    return [node]


def factored(cond: exp.Expression) -> list[exp.Expression]:
    """`cond` as conjuncts, with the conjuncts common to every branch of an OR taken out of it:
    `(a.k = b.k AND x) OR (a.k = b.k AND y)` is `a.k = b.k` and `x OR y` (AND distributes over
    OR in SQL's three-valued logic too), so a correlation written in each branch of an OR (TPC-DS
    q41) is a conjunct of its own. Unchanged when no conjunct is common to every branch.

    >>> import sqlglot
    >>> [c.sql() for c in factored(sqlglot.parse_one("(b.k = a.k AND b.x = 1) OR (b.k = a.k AND b.y = 2)"))]
    ['b.k = a.k', 'b.x = 1 OR b.y = 2']
    >>> [c.sql() for c in factored(sqlglot.parse_one("(b.k = a.k AND b.x = 1) OR b.k = a.k"))]
    ['b.k = a.k']
    >>> [c.sql() for c in factored(sqlglot.parse_one("b.k = a.k OR b.x = 1"))]
    ['b.k = a.k OR b.x = 1']
    """
    branches = [conjuncts(d) for d in disjuncts(cond)]
    if len(branches) < 2:
        return [cond]
    common = [c for c in branches[0] if all(any(c == o for o in b) for b in branches[1:])]
    if not common:
        return [cond]
    rests = [[c for c in b if not any(c == m for m in common)] for b in branches]
    if any(not r for r in rests):       # a branch that is only the common part: TRUE OR ... is TRUE
        return [c.copy() for c in common]
    rest = exp.or_(*[exp.paren(and_all([c.copy() for c in r]), copy=False) if len(r) > 1
                     else r[0].copy() for r in rests], copy=False)
    return [c.copy() for c in common] + [rest]


def not_plain(sub: exp.Query, exists: bool) -> str | None:
    """Why a correlated subquery cannot be a derived table joined on its correlation."""
    if not isinstance(sub, exp.Select):
        return "a correlated set operation is not rewritten"
    limit = sub.args.get("limit")
    if sub.args.get("offset") or (limit is not None and not (
            exists and isinstance(limit.expression, exp.Literal) and limit.expression.is_int
            and int(limit.expression.name) >= 1)):
        return "a correlated subquery with LIMIT / OFFSET is not rewritten"
    if is_grouped(sub) or sub.args.get("qualify") or any(
            isinstance(n, exp.Window) for e in sub.expressions for n in e.walk()):
        return ("a correlated subquery that aggregates, groups or uses windows is not rewritten "
                "into a join (its groups would have to include the correlated columns)")
    return None



def project(corr: Correlation, alias: str, values: list[exp.Expression] = (),
            value_names: list[str] = ()) -> tuple[exp.Select, list[exp.Expression], list[exp.Column]]:
    """The derived table of a correlated subquery: its body projecting `values` (as
    `value_names`) and the inner columns the correlation reads; the correlated conjuncts with
    those columns read from the derived table `alias`; and the columns of `values` there."""
    needed = [c for cond in corr.correlated for c in cond.find_all(exp.Column)
              if c.table.lower() in corr.inner]
    names = output_names(needed)
    taken = {n.lower() for n in value_names}
    for key, name in list(names.items()):
        candidate, n = name, 1
        while candidate.lower() in taken:
            n += 1
            candidate = f"{name}_{n}"
        names[key] = candidate
        taken.add(candidate.lower())
    body = corr.body.copy()
    body.set("expressions", [exp.alias_(v.copy(), name) for v, name in zip(values, value_names)] +
             [exp.alias_(exp.column(col, table), name) for (table, col), name in names.items()])
    # an EXISTS subquery's LIMIT n >= 1 does not change whether a row exists (not_plain)
    for arg in ("distinct", "order", "sort", "cluster", "distribute", "limit"):
        body.set(arg, None)
    ons = [remap(c.copy(), corr.inner, alias, names) for c in corr.correlated]
    return body, ons, [exp.column(name, alias) for name in value_names]


def grouped_by(corr: Correlation, pairs: list[tuple[exp.Expression, exp.Expression]],
               alias: str, measures: list[exp.Expression]) -> tuple[exp.Select, exp.Expression]:
    """The correlated subquery's rows grouped by the inner sides of its equalities, selecting
    them and `measures`; and the ON condition equating them with the outer sides."""
    columns = [inner for inner, _ in pairs if isinstance(inner, exp.Column)]
    names = output_names(columns)
    taken = {m.alias_or_name.lower() for m in measures}
    keys: list[str] = []
    for k, (inner, _) in enumerate(pairs):
        name = names[(inner.table.lower(), inner.name)] if isinstance(inner, exp.Column) \
            else f"__dt_k{k}"
        while name.lower() in taken:
            name = f"{name}_{k}"
        taken.add(name.lower())
        keys.append(name)
    body = corr.body.copy()
    body.set("expressions", [exp.alias_(inner.copy(), name) for (inner, _), name in zip(pairs, keys)]
             + measures)
    for arg in ("distinct", "order", "sort", "cluster", "distribute", "limit"):
        body.set(arg, None)
    body.set("group", exp.Group(expressions=[inner.copy() for inner, _ in pairs]))
    on = and_all([exp.EQ(this=exp.column(name, alias), expression=outer.copy())
                  for name, (_, outer) in zip(keys, pairs)])
    return body, on


def on_condition(conds: list[exp.Expression]) -> exp.Expression | None:
    return and_all(conds)
