"""GROUP BY ROLLUP / CUBE / GROUPING SETS as a UNION ALL of one GROUP BY per grouping set.

Spark evaluates a grouping-sets aggregate as one aggregate per set over the same input: in a
set's rows, the grouping expressions the set leaves out are NULL and `grouping(e)` /
`grouping_id(...)` are constants (1 for a left-out expression; grouping_id's bits with the first
argument highest). Each of those aggregates is a GROUP BY the change compiler refreshes by
recomputing the groups a change touches, so the block becomes the UNION ALL of them:

* the sets are expanded as Spark does (_grouping_expand.py): `ROLLUP(a, b)` = (a, b), (a), (); `CUBE(a, b)` = every
  subset; `GROUPING SETS (...)` as listed (a set listed twice yields its rows twice); several
  items in one GROUP BY multiply (`GROUP BY a, ROLLUP(b)` = (a, b), (a)); a parenthesised
  list inside ROLLUP / CUBE is one element;
* a left-out key becomes NULL wherever the SELECT list or HAVING reads it outside an aggregate
  (inside one the aggregate reads the input rows, as in Spark);
* the empty set is a scalar aggregate, with one difference Spark makes: on an empty input it
  yields no row (Spark groups by the set's id, so there is no group; `HAVING count(*) > 0` on
  that branch), unless it is the only set (`GROUPING SETS (())` is a plain scalar aggregate:
  one row);
* ORDER BY without LIMIT / OFFSET is left out (it has no effect on the rows); with one, ORDER BY
  and LIMIT move to the UNION ALL, naming outputs by position; a sort key that is not an output
  (an expression over the outputs, an aggregate, a key not selected) is computed in every branch
  as a hidden column (`__dt_o0`, ... : a left-out key NULL in it, as in Spark's sort over the
  groups), and a SELECT over the UNION ALL sorts by them and does not select them.

The branches are listed with the set of most keys first (explain labels that block's GROUP BY
with this rewrite; the others are marked as copies, which explain does not list again). Window
functions over the groups see every set's rows at once: they are evaluated by a SELECT over the
UNION ALL (_grouped_windows.py). Left as written, and refreshed FULL: QUALIFY or DISTINCT over
the groups, a `*` in the SELECT list, a top-N over outputs without one name each, and Hive's
`grouping__id` column.

>>> import sqlglot
>>> from dtcli.sql.rules import Notes
>>> def show(sql):
...     notes = Notes()
...     out = rewrite(sqlglot.parse_one(sql, read="spark"), notes)
...     print(out.sql(dialect="spark", pretty=True))
...     print([(n.construct, n.rewritten_as) for n in notes.items])
>>> show("SELECT a.k AS k, a.g AS g, GROUPING(a.g) AS gg, SUM(a.v) AS s FROM a AS a "
...      "GROUP BY ROLLUP (a.k, a.g) HAVING SUM(a.v) > 1")
SELECT
  a.k AS k,
  a.g AS g,
  CAST(0 AS TINYINT) AS gg,
  SUM(a.v) AS s
FROM a AS a
GROUP BY
  a.k,
  a.g
HAVING
  SUM(a.v) > 1
UNION ALL
SELECT
  a.k AS k,
  NULL AS g,
  CAST(1 AS TINYINT) AS gg,
  SUM(a.v) AS s
FROM a AS a
GROUP BY
  a.k
HAVING
  SUM(a.v) > 1
UNION ALL
SELECT
  NULL AS k,
  NULL AS g,
  CAST(1 AS TINYINT) AS gg,
  SUM(a.v) AS s
FROM a AS a
HAVING
  (
    SUM(a.v) > 1
  ) AND COUNT(*) > 0
[('GROUP BY ROLLUP (a.k, a.g)', 'UNION ALL of one GROUP BY per grouping set (3)')]
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql import functions as fn
from dtcli.sql.analysis.nodes import first_start, text_of
from dtcli.sql.rules import _grouped_windows
from dtcli.sql.rules._blocks import Fresh, with_children
from dtcli.sql.rules._grouping_expand import Refused as _Refused
from dtcli.sql.rules._grouping_expand import expand
from dtcli.sql.rules._notes import COPY, Notes, Rewrite

RULE = "grouping_sets"
_MODIFIERS = ("with_", "with", "order", "limit", "offset", "sort", "cluster", "distribute")
STRATEGY = "recompute the groups whose keys changed, in each grouping set"
WRAPPED = "__dt_gs"      # the SELECT over the UNION ALL that sorts by hidden keys (then drops them)
WINDOWED = "__dt_gw"     # the SELECT over the UNION ALL that evaluates the block's windows
GRAND_TOTAL = ("the grand total (the empty grouping set) is an aggregate over the whole input: "
               "every change recomputes it from all the input's rows")


def rewrite(query: exp.Query, notes: Notes) -> exp.Query:
    """`query` with every grouping-sets block it can rewrite exactly replaced by a UNION ALL."""
    blocks = [s for s in query.find_all(exp.Select) if _grouping_sets(s)]
    blocks.sort(key=_depth, reverse=True)       # inner blocks first: their copies are rewritten
    fresh = Fresh(query)
    for sel in blocks:
        try:
            out = _rewrite(sel, notes, fresh)
        except _Refused:
            continue
        if sel is query:
            query = out
        else:
            sel.replace(out)
    return query


def _depth(node: exp.Expression) -> int:
    depth = 0
    while node.parent is not None:
        node, depth = node.parent, depth + 1
    return depth


def _grouping_sets(sel: exp.Select) -> bool:
    group = sel.args.get("group")
    return group is not None and bool(
        group.args.get("rollup") or group.args.get("cube") or group.args.get("grouping_sets")
        or any(isinstance(e, (exp.Rollup, exp.Cube, exp.GroupingSets)) for e in group.expressions))


def _rewrite(sel: exp.Select, notes: Notes, fresh: Fresh) -> exp.Query:
    group = sel.args["group"]
    outputs = [e.unalias() for e in sel.expressions]
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star) for e in outputs):
        raise _Refused
    if any(_grouped_windows.has_window(e) for e in sel.expressions):
        return _windowed(sel, notes, fresh)
    if sel.args.get("distinct") or sel.args.get("qualify") or sel.args.get("windows"):
        raise _Refused
    if any(isinstance(c, exp.Column) and c.name.lower() == "grouping__id" for c in sel.find_all(exp.Column)):
        raise _Refused
    sets = expand(group, outputs)
    keys: list[exp.Expression] = []
    for s in sets:
        for e in s:
            if e not in keys:
                keys.append(e)
    names = [e.alias_or_name for e in sel.expressions]
    limited = bool(sel.args.get("limit") or sel.args.get("offset"))
    # ORDER BY without LIMIT / OFFSET has no effect on the rows: left out. With one, keys that
    # are outputs are sorted by position over the UNION ALL; any other key (an expression over
    # the outputs, an aggregate, a key not selected) is computed in every branch as a hidden
    # column, and a SELECT over the UNION ALL sorts by it and drops it
    order = _order_by_position(sel) if limited else None
    hidden = _sort_keys(sel, names) if limited and order is None and sel.args.get("order") else []
    block = sel
    if hidden:
        block = sel.copy()
        for k, e in enumerate(hidden):
            block.append("expressions", exp.alias_(e, _hidden(k)))
    # `GROUPING SETS (())` alone is a plain scalar aggregate in Spark: one row even on an empty
    # input; any other list of sets groups by the set's id, so the empty set yields no row there
    lone = len(sets) == 1 and not sets[0]
    ranked = sorted(range(len(sets)), key=lambda k: -len(sets[k]))
    branch_names = names + [_hidden(k) for k in range(len(hidden))]
    branches = [_branch(block, sets[k], keys, branch_names, grand_total_row=not lone) for k in ranked]
    out: exp.Query = branches[0]
    for b in branches[1:]:
        out = exp.Union(this=out, expression=b, distinct=False)
    unions = [out] + [u for u in out.find_all(exp.Union) if u is not out] if isinstance(out, exp.Union) else []
    if hidden:
        out = _sorted_over(out, sel, names, fresh.name(WRAPPED))
    for arg in _MODIFIERS:
        value = sel.args.get(arg)
        if value and not (hidden and arg == "order"):
            out.set(arg, value.copy() if arg != "order" else order)
    empty = any(not s for s in sets) and not lone
    index = notes.add(Rewrite(RULE, text_of(group).strip(),
                              first_start(group), STRATEGY, (GRAND_TOTAL,) if empty else (),
                              f"UNION ALL of one GROUP BY per grouping set ({len(sets)})"),
                      *unions, *(b.args["group"] for b in branches[:1] if b.args.get("group")))
    for b in branches[1:]:
        b.meta[COPY] = index
    return out


def _windowed(sel: exp.Select, notes: Notes, fresh: Fresh) -> exp.Query:
    """Windows over the groups: evaluated by a SELECT over the UNION ALL (_grouped_windows.py)."""
    alias = fresh.name(WINDOWED)
    limited = bool(sel.args.get("limit") or sel.args.get("offset"))
    names = [e.alias_or_name for e in sel.expressions]
    try:
        block, outputs, order = _grouped_windows.split(sel, alias, sorted_=limited)
    except _grouped_windows.Refused:
        raise _Refused from None
    out = exp.select(*outputs).from_(_rewrite(block, notes, fresh).subquery(alias))
    if len(outputs) > len(names):       # hidden sort keys: sorted over, then not selected
        wrapper = fresh.name(WRAPPED)
        out = exp.select(*[exp.alias_(exp.column(n, table=wrapper), n) for n in names]) \
            .from_(out.subquery(wrapper))
        for term in order.expressions if order is not None else ():
            if isinstance(term.this, exp.Column) and term.this.name.startswith(_grouped_windows.SORT):
                term.set("this", exp.column(term.this.name, table=wrapper))
    for arg in ("order", "limit", "offset"):
        value = order if arg == "order" else sel.args.get(arg)
        if value is not None:
            out.set(arg, value.copy())
    return out


# -- one branch per set -------------------------------------------------------------------------

def _branch(sel: exp.Select, kept: list[exp.Expression], keys: list[exp.Expression],
            names: list[str], *, grand_total_row: bool) -> exp.Select:
    """The block grouped by `kept` alone, the other keys NULL, GROUPING() constants."""
    out = sel.copy()
    for arg in _MODIFIERS:
        out.set(arg, None)
    left_out = [k for k in keys if k not in kept]
    exprs = [_substitute(e.unalias().copy(), kept, left_out, keys) for e in out.expressions]
    out.set("expressions", [exp.alias_(e, name) if name else e for e, name in zip(exprs, names)])
    having = out.args.get("having")
    if having is not None:
        having.set("this", _substitute(having.this, kept, left_out, keys))
    if kept:
        out.set("group", exp.Group(expressions=[k.copy() for k in kept]))
    else:
        out.set("group", None)
        if grand_total_row:           # no group on an empty input, as Spark's grouping-set id makes
            nonempty = exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0))
            cond = nonempty if having is None else exp.And(this=exp.Paren(this=having.this),
                                                           expression=nonempty)
            out.set("having", exp.Having(this=cond))
    return out


def _substitute(node: exp.Expression, kept, left_out, keys) -> exp.Expression:
    """`node` with left-out keys NULL and GROUPING() / GROUPING_ID() constant (aggregates'
    arguments untouched: they read the input rows)."""
    if isinstance(node, exp.Grouping):
        return _constant(node.expressions, kept, keys, "TINYINT")
    if isinstance(node, exp.GroupingId):
        return _constant(node.expressions or keys, kept, keys, "BIGINT")
    if any(node == k for k in kept):
        return node
    if any(node == k for k in left_out):
        return exp.Null()
    if fn.is_aggregate(node) and not fn.is_windowed(node):
        return node
    return with_children(node, lambda child: _substitute(child, kept, left_out, keys))


def _constant(args: list[exp.Expression], kept, keys, type_: str) -> exp.Expression:
    value = 0
    for arg in args:
        if not any(arg == k for k in keys):
            raise _Refused            # Spark refuses grouping() of a non-key: leave it to say so
        value = value * 2 + (0 if any(arg == k for k in kept) else 1)
    return exp.cast(exp.Literal.number(value), type_)


def _order_by_position(sel: exp.Select) -> exp.Order | None:
    """The block's ORDER BY over the UNION ALL, each term an output's position; None when there
    is none or a term is not an output (`_sort_keys` then computes them)."""
    order = sel.args.get("order")
    if order is None:
        return None
    terms = []
    for ordered in order.expressions:
        position = _position(ordered.this, sel)
        if position is None:
            return None
        term = ordered.copy()
        term.set("this", exp.Literal.number(position))
        terms.append(term)
    return exp.Order(expressions=terms)


def _position(e: exp.Expression, sel: exp.Select) -> int | None:
    """The output (1-based) an ORDER BY term names: an ordinal, an alias, its very expression."""
    outputs = [o.unalias() for o in sel.expressions]
    names = [o.alias_or_name.lower() for o in sel.expressions]
    if isinstance(e, exp.Literal) and e.is_int:
        if not 0 < int(e.name) <= len(outputs):
            raise _Refused
        return int(e.name)
    if isinstance(e, exp.Column) and not e.table and e.name.lower() in names:
        return names.index(e.name.lower()) + 1
    return next((k + 1 for k, o in enumerate(outputs) if e == o), None)


def _hidden(k: int) -> str:
    return f"__dt_o{k}"


def _sort_keys(sel: exp.Select, names: list[str]) -> list[exp.Expression]:
    """Every ORDER BY term as an expression over the block's input (an alias of an output
    replaced by the output's expression), to compute in each branch as a hidden column: a
    left-out key is NULL there and GROUPING() a constant, as in Spark's sort over the groups."""
    if any(not n for n in names) or len({n.lower() for n in names}) != len(names):
        raise _Refused                # the SELECT over the UNION ALL names every output
    aliases = {e.alias_or_name.lower(): e.unalias() for e in sel.expressions}

    def unalias(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not node.table and node.name.lower() in aliases:
            return aliases[node.name.lower()].copy()
        return node
    keys = []
    for ordered in sel.args["order"].expressions:
        position = _position(ordered.this, sel)
        e = sel.expressions[position - 1].unalias() if position else ordered.this
        keys.append(e.copy().transform(unalias))
    return keys


def _sorted_over(union: exp.Query, sel: exp.Select, names: list[str], alias: str) -> exp.Select:
    """`SELECT u.c0 AS c0, ... FROM (union) AS u ORDER BY u.__dt_o0 ... LIMIT n`: the block's
    top-N over the UNION ALL by its hidden sort columns, which it does not select."""
    out = exp.select(*[exp.alias_(exp.column(n, table=alias), n) for n in names]).from_(union.subquery(alias))
    terms = []
    for k, ordered in enumerate(sel.args["order"].expressions):
        term = ordered.copy()
        term.set("this", exp.column(_hidden(k), table=alias))
        terms.append(term)
    out.set("order", exp.Order(expressions=terms))
    return out

