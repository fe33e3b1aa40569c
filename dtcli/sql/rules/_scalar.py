"""Scalar subqueries (and EXISTS / IN used as a value) as joins: the part of subqueries.py
that replaces a subquery by a column of a joined derived table. This module finds them and
rewrites the scalar ones; EXISTS and IN read as a value are _predicate_values.py.

* An uncorrelated aggregate without GROUP BY or HAVING has exactly one row: CROSS JOIN it and
  read its column. An uncorrelated EXISTS is the one-row flag `COUNT(*) > 0` joined the same way.
* A correlated aggregate whose correlation is made of equalities `inner = outer` is the
  subquery grouped by its inner sides, joined ON `group key = outer`: at most one row per outer
  row. On no rows the subquery's value is its aggregates' value over nothing (COUNT 0, SUM /
  MIN / AVG... NULL): a LEFT JOIN reads that value where no group matches (the "count bug"), and
  an INNER JOIN is used where that value is NULL and the subquery is compared in a WHERE
  conjunct, which a NULL drops anyway.
* In a grouped block, a value read outside the aggregates (HAVING, the SELECT list) cannot come
  from a join under the GROUP BY: the grouped block becomes a derived table (its outputs, plus
  the parts of those expressions that do not hold the subquery) and the expressions are
  evaluated outside it, over the join (_lift.py).

>>> import sqlglot
>>> from dtcli.sql.rules import Notes
>>> from dtcli.sql.rules.subqueries import rewrite
>>> def show(sql):
...     print(rewrite(sqlglot.parse_one(sql, read="spark"), Notes()).sql(dialect="spark"))
>>> show("SELECT l.q FROM l AS l JOIN p AS p ON p.k = l.k WHERE l.q < "
...      "(SELECT 0.2 * AVG(l2.q) AS _col_0 FROM l AS l2 WHERE l2.k = p.k)")
SELECT l.q FROM l AS l JOIN p AS p ON p.k = l.k JOIN (SELECT l2.k AS k, 0.2 * AVG(l2.q) AS
__dt_v FROM l AS l2 GROUP BY l2.k) AS __dt_sq1 ON __dt_sq1.k = p.k WHERE l.q < __dt_sq1.__dt_v
>>> show("SELECT a.k, (SELECT COUNT(*) AS n FROM b AS b WHERE b.k = a.k) AS n FROM a AS a")
SELECT a.k, CASE WHEN __dt_sq1.k IS NULL THEN 0 ELSE __dt_sq1.__dt_v END AS n FROM a AS a LEFT
JOIN (SELECT b.k AS k, COUNT(*) AS __dt_v FROM b AS b GROUP BY b.k) AS __dt_sq1 ON __dt_sq1.k =
a.k
>>> show("SELECT a.g AS g, SUM(a.v) AS s FROM a AS a GROUP BY a.g "
...      "HAVING SUM(a.v) > (SELECT SUM(b.v) * 0.1 AS t FROM b AS b)")
SELECT __dt_g1.g AS g, __dt_g1.s AS s FROM (SELECT a.g AS g, SUM(a.v) AS s FROM a AS a GROUP BY
a.g) AS __dt_g1 CROSS JOIN (SELECT SUM(b.v) * 0.1 AS t FROM b AS b) AS __dt_sq2 WHERE __dt_g1.s
> __dt_sq2.t
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql import functions as fn
from dtcli.sql.analysis.nodes import first_start
from dtcli.sql.analysis.strategies import INNER, OUTER, SINGLE_ROW_JOIN
from dtcli.sql.rules._blocks import (
    as_derived,
    conjuncts,
    derived,
    has_aggregate,
    has_window,
    is_grouped,
    short,
)
from dtcli.sql.rules._correlation import Correlation, grouped_by, not_plain
from dtcli.sql.rules._lift import candidates, leave_value, lift
from dtcli.sql.rules._notes import Rewrite
from dtcli.sql.rules._predicate_values import exists_flag, exists_mark, in_value

RULE = "subqueries"
# aggregates whose value over no rows is 0, and those whose value over no rows is NULL
ZERO_ON_EMPTY = (exp.Count, exp.CountIf, exp.ApproxDistinct)
NULL_ON_EMPTY = (exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Stddev, exp.StddevPop, exp.StddevSamp,
                 exp.Variance, exp.VariancePop, exp.First, exp.Last, exp.AnyValue, exp.ArgMax,
                 exp.ArgMin, exp.LogicalAnd, exp.LogicalOr, exp.Corr, exp.CovarPop, exp.CovarSamp,
                 exp.Median, exp.Mode, exp.Quantile, exp.PercentileCont, exp.PercentileDisc,
                 exp.ApproxQuantile, exp.Kurtosis, exp.Skewness, exp.BitwiseAndAgg,
                 exp.BitwiseOrAgg, exp.BitwiseXorAgg)
# operators whose result is NULL when an operand is NULL
STRICT = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Neg, exp.Paren, exp.Cast)
COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def values(block) -> None:
    """Replace the value subqueries of a block (`subqueries._Block`): scalar subqueries and
    uncorrelated EXISTS, in WHERE, in the SELECT list and, for a grouped block, inside its
    aggregates; then, if some are read outside the aggregates of a grouped block, lift it."""
    sel = block.sel
    where = sel.args.get("where")
    for cond in conjuncts(where.this) if where is not None else ():
        for q in candidates(cond):
            value(block, q, cond)
    grouped = is_grouped(sel)
    for e in sel.expressions + ([sel.args["having"].this] if sel.args.get("having") else []):
        for q in candidates(e):
            if not grouped or _inside_aggregate(q, e):
                value(block, q, None)
    if not grouped:
        return
    outside = [q for e in _grouped_clauses(sel) for q in candidates(e) if not _inside_aggregate(q, e)]
    if not outside:
        return
    if any(isinstance(block.correlation(_query(q)), str) or block.correlation(_query(q)).is_correlated
           for q in outside):
        for q in outside:
            leave_value(q, "a correlated subquery in the SELECT list or HAVING of an aggregation is "
                      "not rewritten; move it into WHERE or join its grouped value yourself")
        return
    lifted = lift(block)
    if lifted is None:
        return
    type(block)(sel, block.fresh, block.notes).run()


def _query(node: exp.Expression) -> exp.Query:
    """The query of a scalar subquery, EXISTS or IN node."""
    if isinstance(node, exp.In):
        node = node.args["query"]
    return node.this if isinstance(node, (exp.Subquery, exp.Exists)) else node


def _inside_aggregate(node: exp.Expression, root: exp.Expression) -> bool:
    n = node.parent
    while n is not None and n is not root.parent:
        if fn.is_aggregate(n) and not fn.is_windowed(n):
            return True
        n = n.parent
    return False


def _grouped_clauses(sel: exp.Select):
    yield from sel.expressions
    if sel.args.get("having"):
        yield sel.args["having"].this


# -- one value -------------------------------------------------------------------------------

def value(block, node: exp.Expression, conjunct: exp.Expression | None) -> bool:
    """Replace the scalar subquery or EXISTS `node` by a column of a joined derived table."""
    query = _query(node)
    corr = block.correlation(query)
    if isinstance(corr, str):
        leave_value(node, corr)
        return False
    if isinstance(node, exp.Exists):
        return exists_mark(block, node, corr) if corr.is_correlated else exists_flag(block, node)
    if isinstance(node, exp.In):
        return in_value(block, node, query, corr)
    if _not_scalar_aggregate(query):
        return _at_most_one_row(block, node, query, corr, conjunct)
    if not corr.is_correlated:
        return _single_row(block, node, query)
    return _grouped_value(block, node, corr, conjunct)


def _not_scalar_aggregate(query: exp.Query) -> str | None:
    if not isinstance(query, exp.Select) or len(query.expressions) != 1:
        return ("a scalar subquery is rewritten when it is one aggregate without GROUP BY "
                "(exactly one row); this one may return none or several")
    e = query.expressions[0]
    limit = query.args.get("limit")
    if (query.args.get("group") or query.args.get("having") or query.args.get("qualify")
            or query.args.get("offset") or not has_aggregate(e) or has_window(e)
            or (limit is not None and not (isinstance(limit.expression, exp.Literal)
                                          and limit.expression.is_int
                                          and int(limit.expression.name) >= 1))):
        return ("a scalar subquery is rewritten when it is one aggregate without GROUP BY, "
                "HAVING or windows (exactly one row); this one may return none or several")
    return None


def _single_row(block, node: exp.Expression, query: exp.Select) -> bool:
    alias = block.fresh.name("__dt_sq")
    body = query.copy()
    body.set("limit", None)         # LIMIT n >= 1 of one row (_not_scalar_aggregate)
    name = body.expressions[0].alias_or_name or "__dt_v"
    if not isinstance(body.expressions[0], exp.Alias):
        body.set("expressions", [exp.alias_(body.expressions[0].unalias(), name)])
    join = exp.Join(this=derived(body, alias), kind="CROSS")
    block.sel.append("joins", join)
    original = node.copy()
    node.replace(exp.column(name, alias))
    block.notes.add(Rewrite(RULE, "scalar subquery", first_start(original), SINGLE_ROW_JOIN, (
        "every row reads the subquery's one value: a change of that value recomputes the rows "
        "it meets, a change that leaves it as it was recomputes nothing",),
        f"CROSS JOIN (one row) {alias}.{name}"), join)
    return True


TOO_MANY = "more than one row returned by a subquery used as an expression"


def _at_most_one_row(block, node: exp.Subquery, query: exp.Query, corr: Correlation,
                     conjunct: exp.Expression | None) -> bool:
    """A scalar subquery that is not one aggregate: NULL on no row, its value on one row, an
    error on several (Spark's own). Its rows are counted, and their value kept, by a one-row
    aggregate (per correlated key when correlated by equalities); several rows raise the error
    where the value is read."""
    if len(query.selects) != 1:
        leave_value(node, "a scalar subquery must return one column")
        return False
    alias = block.fresh.name("__dt_sq")
    count = exp.alias_(exp.Count(this=exp.Star()), "__dt_n")
    if not corr.is_correlated:
        item, values = as_derived(query, "__dt_s")
        body = exp.select(exp.alias_(exp.Max(this=values[0]), "__dt_v"), count).from_(item)
        join = exp.Join(this=derived(body, alias), kind="CROSS")
        how, strategy = "CROSS JOIN (its value and row count, one row)", SINGLE_ROW_JOIN
    else:
        why = not_plain(corr.body, exists=False)
        pairs = corr.equalities()
        if why or pairs is None or query.args.get("distinct"):
            leave_value(node, why or "a correlated scalar subquery that is not one aggregate is "
                                     "rewritten when its correlation is made of equalities and it "
                                     "has no DISTINCT")
            return False
        value = exp.alias_(exp.Max(this=corr.body.selects[0].unalias().copy()), "__dt_v")
        body, on = grouped_by(corr, pairs, alias, [value, count])
        inner = conjunct is not None and _null_rejecting(node, conjunct)
        join = exp.Join(this=derived(body, alias), on=on, side=None if inner else "LEFT")
        how = (f"{'INNER' if inner else 'LEFT'} JOIN (its value and row count per correlated "
               f"key) ON {short(on)}")
        strategy = INNER if inner else OUTER
    block.sel.append("joins", join)
    too_many = exp.GT(this=exp.column("__dt_n", alias), expression=exp.Literal.number(1))
    found = exp.Case(ifs=[exp.If(this=too_many, true=exp.Anonymous(
        this="raise_error", expressions=[exp.Literal.string(TOO_MANY)]))],
        default=exp.column("__dt_v", alias))
    original = node.copy()
    node.replace(found)
    block.notes.add(Rewrite(RULE, "scalar subquery", first_start(original), strategy, (
        "it is not one aggregate: a refresh that finds it returning several rows fails, as "
        "the query does",), how), join)
    return True


def _grouped_value(block, node: exp.Subquery, corr: Correlation,
                   conjunct: exp.Expression | None) -> bool:
    pairs = corr.equalities()
    if pairs is None:
        leave_value(node, "a correlated scalar subquery is rewritten when its correlation is made of "
                     "equalities between its columns and the outer query's")
        return False
    expr = node.this.expressions[0].unalias()
    empty = _on_empty(expr)
    if empty is None:
        leave_value(node, f"the value of {short(expr)} over no rows is not known to dt")
        return False
    alias = block.fresh.name("__dt_sq")
    body, on = grouped_by(corr, pairs, alias, [exp.alias_(expr.copy(), "__dt_v")])
    inner = (conjunct is not None and _null_rejecting(node, conjunct)
             and isinstance(empty, exp.Null))
    join = exp.Join(this=derived(body, alias), on=on)
    if not inner:
        join.set("side", "LEFT")
    block.sel.append("joins", join)
    found = exp.column("__dt_v", alias)
    if not inner and not isinstance(empty, exp.Null):
        marker = exp.column(body.expressions[0].alias_or_name, alias)
        found = exp.Case(ifs=[exp.If(this=exp.Is(this=marker, expression=exp.Null()), true=empty)],
                         default=found)
    original = node.copy()
    node.replace(found)
    block.notes.add(Rewrite(
        RULE, "scalar subquery", first_start(original), INNER if inner else OUTER, (),
        f"{'INNER' if inner else 'LEFT'} JOIN ({short(expr, 30)} grouped by the correlated "
        f"key) ON {short(on)}"), join)
    return True


def _on_empty(expr: exp.Expression) -> exp.Expression | None:
    """`expr` (an aggregate expression) evaluated over no rows, None when not known."""
    unknown = []

    def swap(n: exp.Expression) -> exp.Expression:
        if isinstance(n, ZERO_ON_EMPTY):
            return exp.Literal.number(0)
        if isinstance(n, NULL_ON_EMPTY):
            return exp.Null()
        if fn.is_aggregate(n):
            unknown.append(n)
        return n
    out = expr.copy().transform(swap)
    if unknown or any(isinstance(n, exp.Column) for n in out.walk()):
        return None
    return exp.Null() if _is_null(out) else out


def _is_null(node: exp.Expression) -> bool:
    """Whether an expression without columns is certainly NULL (NULL into strict operators)."""
    if isinstance(node, exp.Null):
        return True
    if isinstance(node, STRICT + COMPARISONS):
        return any(_is_null(c) for c in node.iter_expressions() if not isinstance(c, exp.DataType))
    return False


def _null_rejecting(node: exp.Expression, conjunct: exp.Expression) -> bool:
    """Whether a NULL in place of `node` makes the WHERE conjunct `conjunct` NULL (its row dropped)."""
    n = node
    while n is not conjunct:
        parent = n.parent
        if parent is None:
            return False
        if isinstance(parent, (*STRICT, *COMPARISONS, exp.Between)):
            n = parent
            continue
        return False
    return isinstance(conjunct, COMPARISONS + (exp.Between,))
