"""UNION (distinct), INTERSECT and EXCEPT (DISTINCT and ALL) as DISTINCT, GROUP BY and UNION ALL.

The change compiler refreshes UNION ALL branch by branch and recomputes the affected keys of a
GROUP BY or a DISTINCT; a set operation is one of those over the UNION ALL of its sides:

* `L UNION R` is the distinct rows of `L UNION ALL R`: a SELECT DISTINCT over the named columns
  (a chain `A UNION ALL B UNION C` is one DISTINCT over the three);
* `L INTERSECT R` / `L EXCEPT R` (Spark also spells it MINUS): the rows of both sides, each
  tagged with the side it came from, grouped by every column, keeping the groups with rows on
  both sides / on the left only. Set operations compare rows with NULLs equal, as GROUP BY
  does, so a NULL matches a NULL here too;
* the ALL forms keep each such row min(l, r) / l − r times (l, r: its count on each side): the
  grouped block yields the count, a LATERAL VIEW explode(sequence(1, n)) repeats the row,
  which the compiler applies row by row.

A change of either side then recomputes only the rows (groups) it touches. Output names are the
first branch's; INTERSECT binds tighter than UNION and EXCEPT (sqlglot's parse already nests
it so), and a nested set operation is rewritten before the one that reads it. A set operation
whose columns are not all known (a `*` that could not be expanded), or one `BY NAME`, is left as
written: the analyzer then refreshes it FULL.

>>> import sqlglot
>>> from dtcli.sql.rules import Notes
>>> def show(sql):
...     notes = Notes()
...     out = rewrite(sqlglot.parse_one(sql, read="spark"), notes)
...     print(out.sql(dialect="spark", pretty=True))
...     print([n.construct for n in notes.items])
>>> show("SELECT a.k AS k FROM a AS a UNION ALL SELECT b.k AS k FROM b AS b UNION SELECT c.k AS k FROM c AS c")
SELECT DISTINCT
  __dt_set1.__dt_c0 AS k
FROM (
  SELECT
    a.k AS k
  FROM a AS a
  UNION ALL
  SELECT
    b.k AS k
  FROM b AS b
  UNION ALL
  SELECT
    c.k AS k
  FROM c AS c
) AS __dt_set1(__dt_c0)
['UNION']
>>> show("SELECT a.k AS k, a.g AS g FROM a AS a EXCEPT SELECT b.k AS k, b.g AS g FROM b AS b")
SELECT
  __dt_set1.__dt_c0 AS k,
  __dt_set1.__dt_c1 AS g
FROM (
  SELECT
    __dt_l1.__dt_c0 AS __dt_c0,
    __dt_l1.__dt_c1 AS __dt_c1,
    1 AS __dt_l,
    0 AS __dt_r
  FROM (
    SELECT
      a.k AS k,
      a.g AS g
    FROM a AS a
  ) AS __dt_l1(__dt_c0, __dt_c1)
  UNION ALL
  SELECT
    __dt_r1.__dt_c0 AS __dt_c0,
    __dt_r1.__dt_c1 AS __dt_c1,
    0 AS __dt_l,
    1 AS __dt_r
  FROM (
    SELECT
      b.k AS k,
      b.g AS g
    FROM b AS b
  ) AS __dt_r1(__dt_c0, __dt_c1)
) AS __dt_set1
GROUP BY
  __dt_set1.__dt_c0,
  __dt_set1.__dt_c1
HAVING
  SUM(__dt_set1.__dt_l) > 0 AND SUM(__dt_set1.__dt_r) = 0
['EXCEPT']

The ALL forms repeat each kept row:

>>> show("SELECT a.k AS k FROM a AS a INTERSECT ALL SELECT b.k AS k FROM b AS b")  # doctest: +ELLIPSIS
SELECT
  __dt_n1.__dt_c0 AS k
FROM (
  SELECT
    __dt_set1.__dt_c0 AS __dt_c0,
    CAST(LEAST(SUM(__dt_set1.__dt_l), SUM(__dt_set1.__dt_r)) AS BIGINT) AS __dt_n
  FROM (
    ...
  ) AS __dt_set1
  GROUP BY
    __dt_set1.__dt_c0
  HAVING
    SUM(__dt_set1.__dt_l) > 0 AND SUM(__dt_set1.__dt_r) > 0
) AS __dt_n1
LATERAL VIEW EXPLODE(SEQUENCE(1, __dt_n1.__dt_n)) __dt_e1 AS __dt_x
['INTERSECT ALL']
"""

from __future__ import annotations

import itertools

from sqlglot import exp

from dtcli.sql.analysis.nodes import first_start
from dtcli.sql.rules._notes import Notes, Rewrite

RULE = "set_operations"
# arguments of a query that apply to its result as a whole: they move to the block replacing it
_MODIFIERS = ("with_", "with", "order", "limit", "offset", "sort", "cluster", "distribute")
LEFT, RIGHT = "__dt_l", "__dt_r"     # per-side row counts of the tagged union
COUNT = "__dt_n"                     # how many times an ALL form keeps a row

_STRATEGY = {
    "UNION": "recompute the distinct rows whose values changed",
    "INTERSECT": "recompute the rows whose values changed on either side",
    "EXCEPT": "recompute the rows whose values changed on either side",
}
_AS = {
    "UNION": "SELECT DISTINCT over UNION ALL",
    "INTERSECT": "GROUP BY every column over both sides, kept where both have the row",
    "EXCEPT": "GROUP BY every column over both sides, kept where only the left has the row",
    "INTERSECT ALL": "GROUP BY every column over both sides, each row repeated min(left, right) times",
    "EXCEPT ALL": "GROUP BY every column over both sides, each row repeated left − right times",
}


def rewrite(query: exp.Query, notes: Notes) -> exp.Query:
    """`query` with every UNION (distinct), INTERSECT and EXCEPT [ALL] it can rewrite exactly
    replaced (see the module docstring)."""
    rewriter = _Rewriter(notes)
    return rewriter.visit(query)


class _Rewriter:
    def __init__(self, notes: Notes):
        self.notes = notes
        self.n = itertools.count(1)      # numbers the aliases the rule introduces

    def visit(self, node: exp.Expression) -> exp.Expression:
        """Rewrite under `node`, innermost first; returns what now stands in its place."""
        if _distinct_union(node):
            for leaf in _union_leaves(node):
                self.visit(leaf)
            return self.union(node)
        for child in list(node.iter_expressions()):
            self.visit(child)
        if isinstance(node, (exp.Intersect, exp.Except)) and _plain(node):
            return self.intersect_except(node)
        return node

    # -- UNION ------------------------------------------------------------------------------

    def union(self, node: exp.Union) -> exp.Expression:
        leaves = _union_leaves(node)
        names = _names(leaves[0])
        if names is None or any(len(_names(leaf) or ()) != len(names) for leaf in leaves[1:]):
            return node
        body = _parenthesized(leaves[0].copy())
        for leaf in leaves[1:]:
            body = exp.Union(this=body, expression=_parenthesized(leaf.copy()), distinct=False)
        unions = list(body.find_all(exp.Union))
        alias = f"__dt_set{next(self.n)}"
        out = exp.Select(expressions=_renamed(alias, names)).from_(_derived(body, alias, len(names)), copy=False)
        out.set("distinct", exp.Distinct())
        _move_modifiers(node, out)
        self.notes.add(Rewrite(RULE, "UNION", first_start(leaves[1]), _STRATEGY["UNION"],
                               rewritten_as=_AS["UNION"]), out, *unions)
        node.replace(out)
        return out

    # -- INTERSECT / EXCEPT -----------------------------------------------------------------

    def intersect_except(self, node: exp.Intersect | exp.Except) -> exp.Expression:
        names, right = _names(node.this), _names(node.expression)
        if names is None or right is None or len(names) != len(right):
            return node
        width = len(names)
        n = next(self.n)
        kind = "INTERSECT" if isinstance(node, exp.Intersect) else "EXCEPT"
        every = node.args.get("distinct") is False
        label = kind + (" ALL" if every else "")
        tagged = exp.Union(this=_tagged(node.this.copy(), f"__dt_l{n}", width, 1, 0),
                           expression=_tagged(node.expression.copy(), f"__dt_r{n}", width, 0, 1),
                           distinct=False)
        alias = f"__dt_set{n}"
        left = exp.Sum(this=exp.column(LEFT, alias))
        right_ = exp.Sum(this=exp.column(RIGHT, alias))
        both = exp.GT(this=right_.copy(), expression=exp.Literal.number(0)) if kind == "INTERSECT" \
            else exp.EQ(this=right_.copy(), expression=exp.Literal.number(0))
        having = exp.And(this=exp.GT(this=left.copy(), expression=exp.Literal.number(0)), expression=both)
        columns = [exp.column(_c(k), alias) for k in range(width)]
        grouped = exp.Select().from_(_derived(tagged, alias, None), copy=False) \
            .group_by(*[c.copy() for c in columns], copy=False)
        grouped.set("having", exp.Having(this=having))
        created: list[exp.Expression] = [tagged, tagged.this, tagged.expression, grouped]
        if not every:
            grouped.set("expressions", _renamed(alias, names))
            out = grouped
        else:
            if kind == "INTERSECT":
                count: exp.Expression = exp.func("LEAST", left.copy(), right_.copy())
            else:
                count = exp.Sub(this=left.copy(), expression=right_.copy())
                having = exp.GT(this=left.copy(), expression=right_.copy())
                grouped.set("having", exp.Having(this=having))
            # BIGINT as Spark's SUM is (an engine summing into a wider type casts it back)
            grouped.set("expressions", [exp.alias_(c, _c(k)) for k, c in enumerate(columns)]
                        + [exp.alias_(exp.cast(count, "BIGINT"), COUNT)])
            outer = f"__dt_n{n}"
            out = exp.Select(expressions=_renamed(outer, names)).from_(
                exp.Subquery(this=grouped, alias=exp.TableAlias(this=exp.to_identifier(outer))), copy=False)
            out.append("laterals", exp.Lateral(
                this=exp.Explode(this=exp.GenerateSeries(start=exp.Literal.number(1),
                                                         end=exp.column(COUNT, outer))),
                view=True, alias=exp.TableAlias(this=exp.to_identifier(f"__dt_e{n}"),
                                                columns=[exp.to_identifier("__dt_x")])))
            created.append(out)
        _move_modifiers(node, out)
        self.notes.add(Rewrite(RULE, label, first_start(node.expression), _STRATEGY[kind],
                               rewritten_as=_AS[label]), *created)
        node.replace(out)
        return out


# -- helpers ------------------------------------------------------------------------------------

def _c(k: int) -> str:
    return f"__dt_c{k}"


def _plain(node: exp.SetOperation) -> bool:
    """A set operation matching columns by position (not BY NAME / CORRESPONDING)."""
    return not any(node.args.get(a) for a in ("by_name", "side", "kind", "on"))


def _distinct_union(node: exp.Expression) -> bool:
    return isinstance(node, exp.Union) and node.args.get("distinct") is not False and _plain(node)


def _modified(node: exp.Expression) -> bool:
    return any(node.args.get(a) for a in _MODIFIERS)


def _union_leaves(node: exp.Union) -> list[exp.Expression]:
    """The branches of a chain of UNIONs (distinct or ALL) under a distinct UNION: one DISTINCT
    over all of them equals the chain (DISTINCT absorbs the inner ones)."""
    out: list[exp.Expression] = []
    for side in (node.this, node.expression):
        if isinstance(side, exp.Union) and _plain(side) and not _modified(side):
            out += _union_leaves(side)
        else:
            out.append(side)
    return out


def _names(query: exp.Expression) -> list[str] | None:
    """The output names of a query (a set operation's: its first branch's); None when one of
    its outputs is a `*` (the width is then unknown)."""
    while not isinstance(query, exp.Select):
        if isinstance(query, (exp.Subquery, exp.SetOperation)):
            query = query.this
        else:
            return None
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star) for e in query.expressions):
        return None
    return [e.alias_or_name for e in query.expressions]


def _parenthesized(query: exp.Expression) -> exp.Expression:
    """A branch as a UNION ALL operand: set operations in parentheses keep their grouping."""
    return exp.Subquery(this=query) if isinstance(query, (exp.Intersect, exp.Except)) else query


def _derived(body: exp.Expression, alias: str, width: int | None) -> exp.Subquery:
    """`(body) AS alias(__dt_c0, ...)`: the columns named by position, whatever the branches
    call them (duplicates included)."""
    columns = [exp.to_identifier(_c(k)) for k in range(width)] if width is not None else None
    return exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(alias), columns=columns))


def _renamed(alias: str, names: list[str]) -> list[exp.Expression]:
    return [exp.alias_(exp.column(_c(k), alias), name or _c(k)) for k, name in enumerate(names)]


def _tagged(side: exp.Expression, alias: str, width: int, left: int, right: int) -> exp.Select:
    """One side's rows by position, with the counts they add to each side."""
    if isinstance(side, exp.Subquery) and set(k for k, v in side.args.items() if v) == {"this"}:
        side = side.this
    columns = [exp.alias_(exp.column(_c(k), alias), _c(k)) for k in range(width)]
    return exp.Select(expressions=columns + [exp.alias_(exp.Literal.number(left), LEFT),
                                             exp.alias_(exp.Literal.number(right), RIGHT)]
                      ).from_(_derived(side, alias, width), copy=False)


def _move_modifiers(source: exp.Expression, target: exp.Select) -> None:
    for arg in _MODIFIERS:
        value = source.args.get(arg)
        if value:
            source.set(arg, None)
            target.set(arg, value)
