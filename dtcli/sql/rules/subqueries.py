"""Subqueries outside FROM become joins the change compiler refreshes.

Innermost subqueries first (a subquery's own subqueries are joins by the time it is rewritten),
each SELECT block's subqueries are replaced, exactly under SQL's NULL rules:

* `EXISTS (...)` / `NOT EXISTS (...)`, a top-level conjunct of WHERE, correlated in its WHERE:
  a LEFT SEMI / LEFT ANTI JOIN of a derived table (the subquery's rows, projecting the columns
  its correlation reads) ON the correlated conjuncts (equalities and any other comparison).
* `x IN (SELECT e ...)`, `(x, y) IN (SELECT e, f ...)`: a LEFT SEMI JOIN ON x = e (and the
  correlation); an uncorrelated subquery is joined as it is (GROUP BY, HAVING, UNION...).
  WHERE keeps a row only when IN is TRUE, which is when some e equals x: NULLs never match.
* `x NOT IN (SELECT e ...)` (one column) keeps a row when the set is empty, or when x is not
  NULL, the set holds no NULL and no e equals x: a LEFT ANTI JOIN ON x = e, and the set's
  emptiness and NULL flags joined as one row (uncorrelated) or per correlated key (LEFT JOIN of
  the set's counts grouped by its equality correlation).
* Scalar subqueries (see _scalar.py): an uncorrelated aggregate becomes a CROSS JOIN of its one
  row; a correlated one a join to it grouped by its correlated key.
* An EXISTS anywhere else (under OR, in the SELECT list): uncorrelated, a one-row flag
  `COUNT(*) > 0`; correlated by equalities, a LEFT JOIN of the subquery's distinct correlated
  keys, EXISTS being whether a key matched (NOT EXISTS whether none did).

What is left (a subquery correlated outside its WHERE, through a non-equality where the form
needs equalities, to a query two levels out, IN under OR or in SELECT, NOT IN over several
columns, a scalar subquery that is not an aggregate) stays as written with the reason in
its node's meta (`_notes.LEFT_AS_IS`): the analyzer names it and the DT refreshes FULL.

>>> import sqlglot
>>> from dtcli.sql.rules import Notes
>>> def show(sql):
...     notes = Notes()
...     out = rewrite(sqlglot.parse_one(sql, read="spark"), notes)
...     print(out.sql(dialect="spark"))
...     for n in notes.items:
...         print("--", n.construct, "->", n.rewritten_as)
>>> show("SELECT o.k FROM o AS o WHERE o.d > 1 AND EXISTS "
...      "(SELECT l.k FROM l AS l WHERE l.k = o.k AND l.c < l.r)")
SELECT o.k FROM o AS o LEFT SEMI JOIN (SELECT l.k AS k FROM l AS l WHERE l.c < l.r) AS __dt_sq1
ON __dt_sq1.k = o.k WHERE o.d > 1
-- EXISTS subquery -> LEFT SEMI JOIN ON __dt_sq1.k = o.k
>>> show("SELECT a.k FROM a AS a WHERE NOT EXISTS "
...      "(SELECT 1 FROM b AS b WHERE b.k = a.k AND b.s <> a.s)")
SELECT a.k FROM a AS a LEFT ANTI JOIN (SELECT b.k AS k, b.s AS s FROM b AS b) AS __dt_sq1 ON
__dt_sq1.k = a.k AND __dt_sq1.s <> a.s
-- NOT EXISTS subquery -> LEFT ANTI JOIN ON __dt_sq1.k = a.k AND __dt_sq1.s <> a.s
>>> show("SELECT a.k FROM a AS a WHERE a.k IN (SELECT b.k AS k FROM b AS b GROUP BY b.k HAVING SUM(b.q) > 3)")
SELECT a.k FROM a AS a LEFT SEMI JOIN (SELECT b.k AS k FROM b AS b GROUP BY b.k HAVING SUM(b.q)
> 3) AS __dt_sq1 ON a.k = __dt_sq1.k
-- IN subquery -> LEFT SEMI JOIN ON a.k = __dt_sq1.k
>>> show("SELECT a.k FROM a AS a WHERE a.k NOT IN (SELECT b.k AS k FROM b AS b)")
SELECT a.k FROM a AS a LEFT ANTI JOIN (SELECT b.k AS k FROM b AS b) AS __dt_sq1 ON a.k =
__dt_sq1.k CROSS JOIN (SELECT COUNT(*) = 0 AS __dt_empty, COUNT(*) > COUNT(__dt_s.k) AS
__dt_nulls FROM (SELECT b.k AS k FROM b AS b) AS __dt_s) AS __dt_sq2 WHERE (__dt_sq2.__dt_empty
OR (NOT a.k IS NULL AND NOT __dt_sq2.__dt_nulls))
-- NOT IN subquery -> LEFT ANTI JOIN ON a.k = __dt_sq1.k
-- NOT IN subquery (whether its set is empty or holds a NULL) -> CROSS JOIN (one row)
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql.analysis.nodes import first_start
from dtcli.sql.analysis.strategies import SEMI_ANTI, SINGLE_ROW_JOIN
from dtcli.sql.rules import _laterals, _scalar
from dtcli.sql.rules._blocks import (
    Fresh,
    and_all,
    append_join,
    as_derived,
    conjuncts,
    derived,
    nested_queries,
    set_where,
    short,
    sources,
)
from dtcli.sql.rules._correlation import Correlation, grouped_by, not_plain, project, split
from dtcli.sql.rules._notes import Notes, Rewrite, left_as_is

RULE = "subqueries"


def rewrite(query: exp.Query, notes: Notes) -> exp.Query:
    """`query` (modified) with its subqueries outside FROM turned into joins where exact."""
    fresh = Fresh(query)
    # deepest blocks first: a subquery is rewritten before the block it is written in
    for sel in reversed(list(query.find_all(exp.Select))):
        _Block(sel, fresh, notes).run()
    return query


def leave(node: exp.Expression, reason: str) -> None:
    """Keep a subquery as written, with the reason the analyzer gives for its FULL refresh."""
    left_as_is(node, reason)


class _Block:
    """One SELECT block whose subqueries are being replaced."""

    def __init__(self, sel: exp.Select, fresh: Fresh, notes: Notes):
        self.sel, self.fresh, self.notes = sel, fresh, notes
        self.outer = sources(sel)
        self.added: list[exp.Expression] = []     # WHERE conditions the rewrites add

    def run(self) -> None:
        sel = self.sel
        if not any(nested_queries(e) for e in _clauses(sel)):
            return
        if self.outer is None or not (sel.args.get("from_") or sel.args.get("from")):
            for e in _clauses(sel):
                for q in nested_queries(e):
                    leave(q, "the SELECT it is in reads a FROM item without a name")
            return
        if sel.args.get("laterals") and _laterals.wrap(sel, self.fresh):
            self.outer = sources(sel)
        if sel.args.get("laterals"):
            for e in _clauses(sel):
                for q in nested_queries(e):
                    leave(q, "the SELECT it is in has a LATERAL VIEW, after which no join can "
                             "be added")
            return
        where = sel.args.get("where")
        if where is not None:
            kept = []
            for cond in conjuncts(where.this):
                if not self.conjunct(cond):
                    kept.append(cond)
            set_where(sel, kept + self.added)
        _scalar.values(self)

    # -- WHERE conjuncts ------------------------------------------------------------------------

    def conjunct(self, cond: exp.Expression) -> bool:
        """Rewrite a top-level WHERE conjunct that is an EXISTS / IN test; True when it is
        replaced by a join (it leaves WHERE)."""
        negated = isinstance(cond, exp.Not)
        inner = cond.this.unnest() if negated else cond
        if isinstance(inner, exp.Exists) and isinstance(inner.this, exp.Query):
            return self.exists(cond, inner, negated)
        if isinstance(inner, exp.In) and inner.args.get("query") is not None:
            return self.in_(cond, inner.this, inner.args["query"], negated)
        # `x = ANY (...)` is IN, `x <> ALL (...)` NOT IN (Snowflake's parse of NOT IN)
        if not negated and isinstance(cond, exp.EQ) and isinstance(cond.expression, exp.Any):
            return self.in_(cond, cond.this, cond.expression.this, False)
        if not negated and isinstance(cond, exp.NEQ) and isinstance(cond.expression, exp.All):
            return self.in_(cond, cond.this, cond.expression.this, True)
        return False

    def exists(self, cond: exp.Expression, node: exp.Exists, negated: bool) -> bool:
        sub = node.this
        corr = self.correlation(sub)
        if isinstance(corr, str):
            leave(sub, corr)
            return False
        if not corr.is_correlated:
            return False        # a one-row flag, anywhere (_scalar.values)
        why = not_plain(corr.body, exists=True)
        if why:
            leave(sub, why)
            return False
        alias = self.fresh.name("__dt_sq")
        body, ons, _ = project(corr, alias)
        if not body.expressions:
            body.set("expressions", [exp.alias_(exp.Literal.number(1), "__dt_one")])
        kind = "ANTI" if negated else "SEMI"
        on = and_all(ons)
        join = append_join(self.sel, derived(body, alias), side="LEFT", kind=kind, on=on)
        self.note(f"{'NOT ' if negated else ''}EXISTS subquery", cond, SEMI_ANTI,
                  f"LEFT {kind} JOIN ON {short(on)}", join)
        return True

    def in_(self, cond: exp.Expression, lhs: exp.Expression, sub: exp.Expression,
            negated: bool) -> bool:
        query = sub.this if isinstance(sub, exp.Subquery) else sub
        if not isinstance(query, exp.Query):
            return False
        left = list(lhs.expressions) if isinstance(lhs, exp.Tuple) else [lhs]
        if nested_queries(lhs):
            leave(query, "the value it is compared with holds a subquery")
            return False
        if len(query.selects) != len(left):
            leave(query, "its number of columns differs from the values compared with it")
            return False
        corr = self.correlation(query)
        if isinstance(corr, str):
            leave(query, corr)
            return False
        if negated and len(left) > 1:
            leave(query, "NOT IN over several columns (its NULL rules compare column by "
                         "column) is not rewritten; write NOT EXISTS if NULLs cannot occur")
            return False
        alias = self.fresh.name("__dt_sq")
        if corr.is_correlated:
            why = not_plain(corr.body, exists=False)
            if why:
                leave(query, why)
                return False
            names = [f"__dt_v{k}" for k in range(len(left))]
            body, ons, values = project(corr, alias, [s.unalias() for s in corr.body.selects], names)
            item = derived(body, alias)
        else:
            item, values = as_derived(query, alias)
            ons = []
        equal = [exp.EQ(this=x.copy(), expression=v) for x, v in zip(left, values)]
        on = and_all(equal + ons)
        label = f"{'NOT ' if negated else ''}IN subquery"
        if not negated:
            join = append_join(self.sel, item, side="LEFT", kind="SEMI", on=on)
            self.note(label, cond, SEMI_ANTI, f"LEFT SEMI JOIN ON {short(on)}", join)
            return True
        flags = self.not_in_flags(corr, query, left[0])
        if flags is None:
            return False
        join = append_join(self.sel, item, side="LEFT", kind="ANTI", on=on)
        index = self.note(label, cond, SEMI_ANTI, f"LEFT ANTI JOIN ON {short(on)}", join)
        flag_join, keep = flags
        self.sel.append("joins", flag_join)
        self.added.append(keep)
        self.notes.add(Rewrite(RULE, f"{label} (whether its set is empty or holds a NULL)",
                               self.notes.items[index].start, SINGLE_ROW_JOIN if flag_join.kind
                               == "CROSS" else SEMI_ANTI, (
                                   "a change that empties the set, fills it or adds or removes "
                                   "its only NULL changes the verdict of every row it is tested "
                                   "with: those refreshes recompute them all",),
                               "CROSS JOIN (one row)" if flag_join.kind == "CROSS"
                               else "LEFT JOIN of the set's counts per correlated key"),
                       flag_join)
        return True

    def not_in_flags(self, corr: Correlation, query: exp.Query, x: exp.Expression
                     ) -> tuple[exp.Join, exp.Expression] | None:
        """The join of NOT IN's set flags and the condition on them that keeps a row: the set
        is empty, or x is not NULL and the set holds no NULL."""
        flags = self.set_flags(corr, query)
        if flags is None:
            return None
        join, empty, nulls = flags
        keep = exp.Paren(this=exp.Or(
            this=empty,
            expression=exp.Paren(this=exp.And(
                this=exp.Not(this=exp.Is(this=x.copy(), expression=exp.Null())),
                expression=exp.Not(this=nulls if isinstance(nulls, exp.Column)
                                   else exp.Paren(this=nulls))))))
        return join, keep

    def set_flags(self, corr: Correlation, query: exp.Query
                  ) -> tuple[exp.Join, exp.Expression, exp.Expression] | None:
        """The join of an IN subquery's set flags (one row, or per correlated key), and the
        conditions on it that the set is empty and that it holds a NULL; None (left as
        written, with the reason) when the correlation is not made of equalities."""
        alias = self.fresh.name("__dt_sq")
        if not corr.is_correlated:
            item, values = as_derived(query, "__dt_s")
            body = exp.select(
                exp.alias_(exp.EQ(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0)),
                           "__dt_empty"),
                exp.alias_(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Count(this=values[0])),
                           "__dt_nulls"),
            ).from_(item)
            join = exp.Join(this=derived(body, alias), kind="CROSS")
            return join, exp.column("__dt_empty", alias), exp.column("__dt_nulls", alias)
        pairs = corr.equalities()
        if pairs is None:
            leave(query, "a correlated NOT IN (or IN where its NULLs matter) is rewritten only "
                         "when its correlation is made of equalities")
            return None
        body, on = grouped_by(corr, pairs, alias, [
            exp.alias_(exp.Count(this=exp.Star()), "__dt_n"),
            exp.alias_(exp.Count(this=corr.body.selects[0].unalias().copy()), "__dt_nv")])
        join = exp.Join(this=derived(body, alias), side="LEFT", on=on)
        n, nv = exp.column("__dt_n", alias), exp.column("__dt_nv", alias)
        return (join, exp.Is(this=n, expression=exp.Null()),
                exp.GT(this=n.copy(), expression=nv))

    # -- shared -------------------------------------------------------------------------------

    def correlation(self, query: exp.Query) -> Correlation | str:
        if isinstance(query, exp.Subquery):
            query = query.this
        if not isinstance(query, exp.Select):
            named = {c.table.lower() for c in query.find_all(exp.Column)}
            defined = {t.alias_or_name.lower() for t in query.find_all(exp.Table, exp.Subquery)}
            if named & self.outer:
                return ("a set operation that may refer to the query around it is not "
                        "rewritten" if named & self.outer - defined else
                        "a set operation reusing the names of the query around it is not "
                        "rewritten")
            return Correlation(query, [], set())
        return split(query, self.outer)

    def note(self, construct: str, original: exp.Expression, strategy: str, rewritten_as: str,
             *created: exp.Expression, considerations: tuple[str, ...] = ()) -> int:
        return self.notes.add(Rewrite(RULE, construct, first_start(original), strategy,
                                      considerations, rewritten_as), *created)


def _clauses(sel: exp.Select):
    for key in ("expressions", "where", "having", "qualify", "group", "order"):
        value = sel.args.get(key)
        for v in (value if isinstance(value, list) else [value]):
            if isinstance(v, exp.Expression):
                yield v
    for join in sel.args.get("joins") or ():
        if join.args.get("on") is not None:
            yield join.args["on"]
