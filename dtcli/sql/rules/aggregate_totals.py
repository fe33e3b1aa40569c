"""An aggregate kept as running totals: split into an internal table of totals and the DT over it.

Recomputing the groups a change touches reads every input row of those groups: for an aggregate
of a handful of groups (TPC-H Q1, Q5, Q9) or of one row (Q6, Q14), every input row, whatever
the change. When every aggregate of the outermost block is `COUNT(*)`, `COUNT(x)`, `SUM(x)` or
`AVG(x)`, each group's value follows from a few running totals per group, which a change
adjusts by its own rows. So the query is split (planning/internal.py keeps the split as the
DT's internal table `aggregate_totals`, engine/runtime/strategies/aggregate_totals.py refreshes
it):

* the *totals* query: the block's FROM / WHERE grouped by its keys, selecting each key
  (`__dt_k<i>`), `COUNT(*)` (`__dt_n`), and per distinct argument `x_j` of the aggregates
  `COUNT(x_j)` (`__dt_c<j>`) and, when a SUM or AVG reads it, `SUM(x_j)` (`__dt_s<j>`). Its
  outputs are keys, `COUNT(*)`, and SUMs each paired with the COUNT of its argument, which the
  change compiler maintains from the table's own rows (incremental_rewrite/own_rows.py), NULLs
  included;
* the DT *over the totals*: the DT's outputs with each key replaced by its totals column and
  each aggregate by the value Spark's own aggregate has for those totals (`over`), the HAVING
  as a WHERE. Each row of the totals makes at most one row of the DT, so the DT's change is its
  outputs over the totals' changed rows, before and after.

Exact only for integers and decimals (a float sum depends on the order it is added in): the
engine checks the arguments' types when it binds the query and otherwise refreshes the DT as
if it kept no totals. A block whose outputs are its keys, `COUNT(*)`, `COUNT(x)` and `SUM(x)`
with no HAVING is not split: the DT's own rows are its totals.

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT t.g AS g, SUM(t.v) AS s, AVG(t.v) AS a, COUNT(*) AS n FROM t AS t "
...                       "WHERE t.k > 0 GROUP BY t.g HAVING COUNT(t.v) > 1 ORDER BY g", read="spark")
>>> for e in split(q).totals.expressions: print(e.sql(dialect="spark"))
t.g AS __dt_k0
COUNT(*) AS __dt_n
COUNT(t.v) AS __dt_c0
SUM(t.v) AS __dt_s0
>>> over = split(q).over({0: INTEGRAL})
>>> for e in over.expressions: print(e.sql(dialect="spark"))
__dt_k0 AS g
CASE WHEN __dt_c0 > 0 THEN __dt_s0 END AS s
CASE WHEN __dt_c0 > 0 THEN CAST(__dt_s0 AS DOUBLE) / CAST(__dt_c0 AS DOUBLE) END AS a
__dt_n AS n
>>> over.args["where"].sql(dialect="spark")
'WHERE __dt_c0 > 1'

A decimal average is Spark's: the sum divided by the count as DECIMAL(20, 0), cast to the
argument's precision and scale plus 4 (at most 38); a global aggregate's totals have one row
(COUNT(*) 0 and NULL sums over no input), so the DT always has its one row:

>>> q = sqlglot.parse_one("SELECT 100.00 * SUM(CASE WHEN t.p LIKE 'P%' THEN t.v ELSE 0 END) / SUM(t.v) AS r, "
...                       "AVG(t.v) AS a FROM t AS t", read="spark")
>>> spec = split(q)
>>> for e in spec.totals.expressions: print(e.sql(dialect="spark"))
COUNT(*) AS __dt_n
COUNT(CASE WHEN t.p LIKE 'P%' THEN t.v ELSE 0 END) AS __dt_c0
SUM(CASE WHEN t.p LIKE 'P%' THEN t.v ELSE 0 END) AS __dt_s0
COUNT(t.v) AS __dt_c1
SUM(t.v) AS __dt_s1
>>> for e in spec.over({0: (15, 2), 1: (12, 2)}).expressions: print(e.sql(dialect="spark"))
100.00 * CASE WHEN __dt_c0 > 0 THEN __dt_s0 END / CASE WHEN __dt_c1 > 0 THEN __dt_s1 END AS r
CASE WHEN __dt_c1 > 0 THEN CAST(__dt_s1 / CAST(__dt_c1 AS DECIMAL(20, 0)) AS DECIMAL(16, 6)) END AS a

What is not split, with the reason (`why_not`):

>>> why_not(sqlglot.parse_one("SELECT t.g AS g, MAX(t.v) AS m FROM t AS t GROUP BY t.g"))
'MAX(t.v) is not COUNT, SUM or AVG'
>>> why_not(sqlglot.parse_one("SELECT t.g AS g, COUNT(*) AS n, SUM(t.v) AS s FROM t AS t GROUP BY t.g"))
"its outputs are its keys, COUNT(*), COUNT and SUM: the table's own rows are its totals"
>>> why_not(sqlglot.parse_one("SELECT t.g AS g, SUM(t.v) AS s FROM t AS t GROUP BY t.g ORDER BY s LIMIT 2"))
'a top-N (ORDER BY … LIMIT) is split by the top_n rule'
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dtcli.sql import functions as fn
from dtcli.sql.rules._notes import REWRITE

KEY, COUNT_ALL, COUNT, SUM = "__dt_k", "__dt_n", "__dt_c", "__dt_s"
RELATION = "__dt_totals"       # the totals' rows, as the DT over them reads them
INTEGRAL = "integral"          # an argument's type in `over`: an integer (else its (precision, scale))
LONG_DECIMAL = 20              # a COUNT as a decimal, as Spark's Average divides by it
MAX_PRECISION = 38


class _Refused(Exception):
    pass


@dataclass(frozen=True)
class Totals:
    """The split of an aggregate (see the module docstring)."""

    query: exp.Select                # the DT's block (outermost SELECT), as qualified
    keys: tuple[exp.Expression, ...]  # its GROUP BY keys (): one row
    args: tuple[exp.Expression, ...]  # the distinct arguments of its COUNT(x) / SUM / AVG
    summed: frozenset[int]           # the arguments a SUM or AVG reads (their types are checked)
    totals: exp.Select               # the totals query

    def probe(self) -> exp.Select:
        """The block's FROM / WHERE selecting the summed arguments (`__dt_a<j>`): what the
        engine analyses (not runs) for their types."""
        out = _source(self.query)
        out.set("expressions", [exp.alias_(self.args[j].copy(), f"__dt_a{j}") for j in sorted(self.summed)]
                or [exp.alias_(exp.Literal.number(1), "__dt_a")])
        return out

    def over(self, types: dict[int, object], relation: str = RELATION,
             carry: tuple[str, ...] = ()) -> exp.Select:
        """The DT over the totals in `relation`: its outputs (named as the DT names them), its
        HAVING as a WHERE, and the `carry` columns of the relation passed through. `types`: each
        summed argument's type, INTEGRAL or (precision, scale) of a decimal."""
        sel = self.query
        outputs = [_over_totals(e.unalias(), self, types) for e in sel.expressions]
        out = exp.select(*[exp.alias_(o, _name(e, k)) for k, (o, e) in enumerate(zip(outputs, sel.expressions))],
                         *[exp.column(c) for c in carry]).from_(relation)
        having = sel.args.get("having")
        if having is not None:
            out.where(_over_totals(having.this, self, types), copy=False)
        return out


def split(query: exp.Expression, own_rows: bool = False) -> Totals | None:
    """The running-totals split of a qualified query's outermost aggregate, or None. `own_rows`:
    also of an aggregate a table's own rows could hold (kept_aggregates.py keeps a derived
    table's totals, which are no table's rows)."""
    try:
        return _split(query, own_rows)
    except _Refused:
        return None


def why_not(query: exp.Expression) -> str | None:
    try:
        _split(query)
    except _Refused as err:
        return str(err)
    return None


def _name(e: exp.Expression, k: int) -> exp.Identifier:
    """An output's name as the DT's query gives it (the engine names the columns by position)."""
    alias = e.args.get("alias") if isinstance(e, exp.Alias) else None
    return alias.copy() if alias is not None else exp.to_identifier(f"__dt_o{k}")


def _outermost(query: exp.Expression) -> exp.Select:
    sel = query
    while isinstance(sel, exp.Subquery):
        sel = sel.this
    if not isinstance(sel, exp.Select):
        raise _Refused("the query is no SELECT")
    return sel


def _source(sel: exp.Select) -> exp.Select:
    """The block without its outputs, grouping, HAVING and order: FROM, joins, WHERE (and WITH)."""
    out = sel.copy()
    for arg in ("group", "having", "order", "sort", "cluster", "distribute", "qualify"):
        out.set(arg, None)
    return out


_MEASURES = (exp.Count, exp.Sum, exp.Avg)


def _split(query: exp.Expression, own_rows: bool = False) -> Totals:
    from dtcli.sql.incremental_rewrite import shapes
    from dtcli.sql.incremental_rewrite.relations import Unsupported

    sel = _outermost(query)
    if sel.args.get("limit") or sel.args.get("offset"):
        raise _Refused("a top-N (ORDER BY … LIMIT) is split by the top_n rule")
    if REWRITE in (sel.meta or {}):
        raise _Refused("the aggregate is a rule's rewrite of a set operation")
    for arg in ("distinct", "qualify", "windows"):
        if sel.args.get(arg):
            raise _Refused(f"{arg.upper()} in the outermost SELECT")
    nodes = [n for e in sel.expressions for n in e.walk(bfs=False)] + \
        list(sel.args["having"].walk(bfs=False) if sel.args.get("having") else ())
    if any(isinstance(n, (exp.Window, exp.Query, exp.Subquery, exp.Filter, exp.IgnoreNulls,
                          exp.RespectNulls)) or fn.is_nondeterministic(n) or fn.is_user_defined(n)
           for n in nodes):
        raise _Refused("a window, subquery, FILTER or nondeterministic function among the outputs")
    try:
        found = shapes.shape(sel)
    except Unsupported as err:
        raise _Refused(str(err)) from None
    group = sel.args.get("group")
    aggregates = [n for n in nodes if fn.is_aggregate(n) and not fn.is_windowed(n)]
    if found is None or found.join is not None or (group is None and not aggregates):
        raise _Refused("no aggregate (or an outer join) in the outermost SELECT")
    keys = tuple(shapes.group_keys(sel, group)) if group is not None else ()
    args: list[exp.Expression] = []
    summed: set[int] = set()
    for agg in aggregates:
        if not isinstance(agg, _MEASURES):
            raise _Refused(f"{agg.sql(dialect='spark')} is not COUNT, SUM or AVG")
        arg = agg.this
        if isinstance(arg, exp.Distinct) or (isinstance(agg, exp.Count) and agg.args.get("big_int") is False):
            raise _Refused(f"{agg.sql(dialect='spark')} is not COUNT, SUM or AVG")
        if _count_all(agg):
            continue
        if arg is None or any(fn.is_aggregate(n) or isinstance(n, exp.Star) for n in arg.walk()):
            raise _Refused(f"{agg.sql(dialect='spark')} reads no plain argument")
        j = next((k for k, a in enumerate(args) if a == arg), None)
        if j is None:
            args.append(arg)
            j = len(args) - 1
        if not isinstance(agg, exp.Count):
            summed.add(j)
    if not own_rows and _own_rows(sel, keys):
        raise _Refused("its outputs are its keys, COUNT(*), COUNT and SUM: the table's own rows are "
                       "its totals")
    spec = Totals(sel, keys, tuple(args), frozenset(summed), _totals(sel, keys, args, summed))
    for e in [*sel.expressions, *([sel.args["having"]] if sel.args.get("having") else [])]:
        _over_totals(e.unalias() if isinstance(e, exp.Alias) else e, spec,
                     {j: INTEGRAL for j in summed})     # raises when an output is not over them
    return spec


def _count_all(agg: exp.Expression) -> bool:
    arg = agg.this
    return isinstance(agg, exp.Count) and (arg is None or isinstance(arg, exp.Star) or (
        isinstance(arg, exp.Literal) and not arg.is_string and arg.name not in ("", "null")))


def _own_rows(sel: exp.Select, keys: tuple[exp.Expression, ...]) -> bool:
    """The shape own_rows.py maintains from the DT's own rows: GROUP BY keys all selected as they
    are, COUNT(*), each other output COUNT(x) or SUM(x), no HAVING."""
    if not keys or sel.args.get("having"):
        return False
    outputs = [e.unalias() for e in sel.expressions]
    if not all(any(o == k for o in outputs) for k in keys):
        return False
    measures = [o for o in outputs if not any(o == k for k in keys)]
    return any(_count_all(o) for o in measures) and all(isinstance(o, (exp.Count, exp.Sum)) for o in measures)


def _totals(sel: exp.Select, keys, args, summed) -> exp.Select:
    out = _source(sel)
    columns = [exp.alias_(k.copy(), f"{KEY}{i}") for i, k in enumerate(keys)]
    columns.append(exp.alias_(exp.Count(this=exp.Star(), big_int=True), COUNT_ALL))
    for j, arg in enumerate(args):
        columns.append(exp.alias_(exp.Count(this=arg.copy(), big_int=True), f"{COUNT}{j}"))
        if j in summed:
            columns.append(exp.alias_(exp.Sum(this=arg.copy()), f"{SUM}{j}"))
    out.set("expressions", columns)
    if keys:
        out.group_by(*[k.copy() for k in keys], copy=False)
    return out


def _over_totals(expr: exp.Expression, spec: Totals, types: dict[int, object]) -> exp.Expression:
    """`expr` (an output or the HAVING of the block) over the totals' columns; raises _Refused
    when it reads a column that is no key outside an aggregate."""
    def swap(node: exp.Expression) -> exp.Expression:
        for i, key in enumerate(spec.keys):
            if node == key:
                return exp.column(f"{KEY}{i}")
        if isinstance(node, _MEASURES) and fn.is_aggregate(node):
            return _measure(node, spec, types)
        if isinstance(node, exp.Column):
            raise _Refused(f"{node.sql(dialect='spark')} is neither a GROUP BY key nor aggregated")
        return node
    return expr.copy().transform(swap)


def _measure(agg: exp.Expression, spec: Totals, types: dict[int, object]) -> exp.Expression:
    if _count_all(agg):
        return exp.column(COUNT_ALL)
    j = next(k for k, a in enumerate(spec.args) if a == agg.this)
    count = exp.column(f"{COUNT}{j}")
    if isinstance(agg, exp.Count):
        return count
    total = exp.column(f"{SUM}{j}")
    if isinstance(agg, exp.Avg):
        total = _average(total, count, types[j])
    # a SUM over no value (or only NULLs) is NULL: the running total is kept, the count says
    return exp.Case(ifs=[exp.If(this=exp.GT(this=count.copy(), expression=exp.Literal.number(0)),
                                true=total)])


def _average(total: exp.Expression, count: exp.Expression, data_type: object) -> exp.Expression:
    """Spark's Average from its sum and count: for an integer, the sum as DOUBLE over the count as
    DOUBLE; for DECIMAL(p, s), the sum (DECIMAL(p + 10, s), as SUM's) over the count as
    DECIMAL(20, 0), cast to DECIMAL(p + 4, s + 4), each bounded by 38."""
    if data_type == INTEGRAL:
        return exp.Div(this=exp.cast(total, "DOUBLE"), expression=exp.cast(count, "DOUBLE"))
    precision, scale = data_type
    quotient = exp.Div(this=total, expression=exp.cast(count, f"DECIMAL({LONG_DECIMAL}, 0)"))
    return exp.cast(quotient, f"DECIMAL({min(precision + 4, MAX_PRECISION)}, {min(scale + 4, MAX_PRECISION)})")
