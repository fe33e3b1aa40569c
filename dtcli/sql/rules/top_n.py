"""`ORDER BY … LIMIT n` at the outermost level (a top-N): split, not rewritten.

A top-N's rows depend on the whole result of the query under it, so no rewrite of the query
makes it incremental; what does is a split: the query without its outermost ORDER BY, LIMIT and
OFFSET (the *inner* query, which the change compiler refreshes like any other), and the top-N
itself (sort keys, n, offset), which the engine applies over the inner query's change
(dtcli/engine/runtime/strategies/top_n.py):

* when no row the change removes is among the DT's rows, the new DT is the top n of the DT's
  rows and the rows the change adds, sorted by Spark with the query's own ORDER BY (so NULL
  ordering and ties are Spark's);
* otherwise the top n is recomputed: from the inner query's rows kept as an internal table of
  the DT (`state`), or, when the inner query is a filter of one input (a copy of it would cost as
  much to read as the input itself), from the input.

An ORDER BY expression that is not an output column becomes a hidden column of the inner query
(`__dt_s0`, ...), after its outputs: the DT holds only the outputs (DESIGN.md section 4), the
internal table holds the hidden columns too. A key over the outputs of a set operation or a
SELECT DISTINCT cannot join their SELECT list: the inner query is then a SELECT over them
(`__dt_q`) that computes it. ORDER BY without LIMIT or OFFSET is no top-N: the stored rows have
no order, explain says it is ignored.

`rewrite` records the split as a note and marks the LIMIT (or OFFSET) node with it, so that the
analyzer labels the row of the construct the user wrote, and changes nothing in the query:

>>> import sqlglot
>>> from dtcli.sql.rules import Notes
>>> q = sqlglot.parse_one("SELECT t.k AS k, SUM(t.v) AS s FROM t AS t GROUP BY t.k "
...                       "ORDER BY s DESC, t.k LIMIT 3", read="spark")
>>> notes = Notes()
>>> rewrite(q, notes).sql(dialect="spark") == q.sql(dialect="spark")
True
>>> notes.items[0].construct
'ORDER BY … LIMIT 3'
>>> spec = split(q)
>>> spec.inner.sql(dialect="spark")
'SELECT t.k AS k, SUM(t.v) AS s FROM t AS t GROUP BY t.k'
>>> [(k.position, k.desc, k.nulls_first) for k in spec.order], spec.limit, spec.state
([(1, True, False), (0, False, True)], 3, True)

A sort key that is not an output is computed by the inner query as a hidden column; a filter of
one input keeps no state:

>>> spec = split(sqlglot.parse_one("SELECT t.a AS a FROM t AS t WHERE t.a > 0 ORDER BY t.b LIMIT 2",
...                                read="spark"))
>>> spec.inner.sql(dialect="spark"), spec.outputs, spec.state
('SELECT t.a AS a, t.b AS __dt_s0 FROM t AS t WHERE t.a > 0', 1, False)

What cannot be split exactly is left as it is, with the reason (explain shows it, FULL):

>>> why_not(sqlglot.parse_one("SELECT DISTINCT t.a AS a FROM t AS t ORDER BY t.b LIMIT 2"))
'SELECT DISTINCT ... ORDER BY an expression that is not selected (t.b) ... is refreshed FULL'
>>> split(sqlglot.parse_one("SELECT DISTINCT t.a AS a FROM t AS t ORDER BY a + 1 LIMIT 2")).inner.sql()
'SELECT "__dt_q"."a" AS "a", "__dt_q"."a" + 1 AS __dt_s0 FROM (SELECT DISTINCT t.a AS a FROM t AS t) AS __dt_q'
>>> split(sqlglot.parse_one("SELECT t.a AS a FROM t AS t ORDER BY t.a")) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dtcli.model import InternalTable, TopNSpec
from dtcli.model.strategy_specs import SortKey
from dtcli.sql.rules._notes import Notes, Rewrite

HIDDEN = "__dt_s"          # prefix of the inner query's hidden sort columns


def hidden_column(k: int) -> str:
    return f"{HIDDEN}{k}"


@dataclass(frozen=True)
class TopN:
    inner: exp.Query                 # the query without its outermost ORDER BY / LIMIT / OFFSET
    outputs: int                     # the DT's columns: the inner query's first `outputs`
    order: tuple[SortKey, ...]       # () for a LIMIT without ORDER BY: any n rows
    limit: int | None                # None: OFFSET without LIMIT
    offset: int
    state: bool                      # recompute from the inner's rows kept as internal state

    @property
    def hidden(self) -> int:
        """Hidden sort columns after the outputs (ORDER BY expressions that are not selected)."""
        return max([k.position + 1 for k in self.order] + [self.outputs]) - self.outputs

    def label(self) -> str:
        parts = ["ORDER BY …"] if self.order else []
        if self.limit is not None:
            parts.append(f"LIMIT {self.limit}")
        if self.offset:
            parts.append(f"OFFSET {self.offset}")
        return " ".join(parts)

    def to_spec(self, state: InternalTable | None) -> TopNSpec:
        """What the engine runs (model.StepOptions.top_n); `state`: where the inner query's rows
        are kept, when `self.state`."""
        return TopNSpec(self.inner.sql(dialect="spark"), self.outputs, list(self.order), self.limit,
                        self.offset, state if self.state else None)


class _Refused(Exception):
    pass


def split(query: exp.Query) -> TopN | None:
    """The top-N at the outermost level of a qualified query, or None when there is none or it
    cannot be split exactly (`why_not` says why)."""
    try:
        return _split(query)
    except _Refused:
        return None


def why_not(query: exp.Query) -> str | None:
    """Why the outermost LIMIT / OFFSET of `query` stays FULL (None: there is none, or it splits)."""
    try:
        _split(query)
    except _Refused as err:
        return str(err)
    return None


def compiled(query: exp.Query) -> exp.Query:
    """What the change compiler compiles for `query`: the query under its top-N, or the query
    itself (the planner's verdict on a DT, and an oracle's, ask the compiler about this one)."""
    spec = split(query)
    return spec.inner if spec is not None else query


def rewrite(query: exp.Query, notes: Notes) -> exp.Query:
    """Record the split of a top-N (the query is returned unchanged; see the module docstring)."""
    spec = split(query)
    if spec is None:
        return query
    node = query.args.get("limit") or query.args.get("offset")
    notes.add(Rewrite(rule="top_n", construct=spec.label(), start=_start(query),
                      strategy=strategy(spec), considerations=considerations(spec)), node)
    return query


def strategy(spec: TopN) -> str:
    where = ("the query's rows kept in an internal table (their change applied to it)"
             if spec.state else "its input")
    if spec.offset or spec.hidden or spec.limit is None:
        return f"top-N: recomputed from {where} when a change reaches its rows"
    return (f"top-N: rows the change adds merged into the top {spec.limit}; recomputed from "
            f"{where} when a change removes one of its rows")


def considerations(spec: TopN) -> tuple[str, ...]:
    out = []
    if spec.order and spec.limit is not None:
        out.append(f"with ties at row {spec.limit}, the table holds tied rows a full recompute could "
                   "return, not always the same ones")
    elif not spec.order:
        out.append("LIMIT without ORDER BY keeps any rows of the result: a refresh keeps the ones it "
                   "holds while they remain")
    if spec.hidden:
        out.append("a sort key is not an output column: the table cannot tell where a new row "
                   "falls, so a change recomputes the top rows")
    if spec.offset:
        out.append(f"OFFSET {spec.offset}: rows before the window move it, so a change recomputes it")
    if not spec.state:
        out.append("the query under the top-N filters one input: recomputing reads that input "
                   "(an internal copy of it would cost as much to read)")
    return tuple(out)


def _start(query: exp.Query) -> int | None:
    from dtcli.sql.analysis.nodes import first_start

    for arg in ("order", "limit", "offset"):
        node = query.args.get(arg)
        if node is not None and first_start(node) is not None:
            return first_start(node)
    return None


def _split(query: exp.Query) -> TopN | None:
    limit_node, offset_node = query.args.get("limit"), query.args.get("offset")
    if limit_node is None and offset_node is None:
        return None
    limit = _count(limit_node, "LIMIT") if limit_node is not None else None
    offset = _count(offset_node, "OFFSET") if offset_node is not None else 0
    if isinstance(limit_node, exp.Fetch) or any(query.args.get(a) for a in ("sort", "cluster", "distribute")):
        raise _Refused("LIMIT with SORT BY / CLUSTER BY / DISTRIBUTE BY or FETCH is refreshed FULL")
    inner = query.copy()
    for arg in ("order", "limit", "offset"):
        inner.set(arg, None)
    outputs = _outputs(inner)
    if outputs is None:
        raise _Refused("ORDER BY … LIMIT over SELECT * that dt could not expand is refreshed FULL")
    order: list[SortKey] = []
    hidden: list[exp.Expression] = []
    for ordered in (query.args.get("order").expressions if query.args.get("order") else []):
        expr = ordered.this
        position = _output_position(expr, outputs)
        if position is None and _needs_wrap(inner, expr, outputs):
            inner = _wrapped(inner, outputs)
            outputs = _outputs(inner)
        if position is None:
            position = _hide(inner, expr, outputs, hidden)
        order.append(SortKey(position, bool(ordered.args.get("desc")), bool(ordered.args.get("nulls_first"))))
    return TopN(inner, len(outputs), tuple(order), limit, offset, state=not _one_input_filter(inner))


def _count(node: exp.Expression, what: str) -> int:
    value = node.args.get("expression")
    if isinstance(value, exp.Literal) and value.is_int and int(value.name) >= 0:
        return int(value.name)
    raise _Refused(f"{what} {value.sql(dialect='spark') if value else ''} is not a number; "
                   "a top-N with it is refreshed FULL")


def _outputs(query: exp.Query) -> list[tuple[str, exp.Expression]] | None:
    """(name, expression) of each output column; None when a star is left."""
    sel = query
    while isinstance(sel, exp.Subquery):
        sel = sel.this
    if isinstance(sel, exp.SetOperation):
        left = _outputs(sel.this)
        return None if left is None else [(name, exp.column(name)) for name, _ in left]
    if not isinstance(sel, exp.Select):
        return None
    out = []
    for e in sel.expressions:
        inner = e.unalias()
        if isinstance(inner, exp.Star) or (isinstance(inner, exp.Column) and inner.is_star):
            return None
        out.append((e.alias_or_name, inner))
    return out


def _output_position(expr: exp.Expression, outputs: list[tuple[str, exp.Expression]]) -> int | None:
    """The output an ORDER BY expression names: an ordinal, an output's alias (an unqualified
    column, as qualify leaves alias references), or an output's very expression."""
    if isinstance(expr, exp.Literal) and expr.is_int:
        n = int(expr.name)
        if 0 < n <= len(outputs):
            return n - 1
        raise _Refused(f"ORDER BY {n} does not name an output column")
    if isinstance(expr, exp.Column) and not expr.table:
        for k, (name, _) in enumerate(outputs):
            if name.lower() == expr.name.lower():
                return k
    for k, (_, e) in enumerate(outputs):
        if e.unnest() == expr.unnest():     # `SELECT DISTINCT (x) ... ORDER BY x` (TPC-DS q41)
            return k
    return None


WRAPPED = "__dt_q"        # the alias of the query under a top-N wrapped to compute its sort keys


def _over_outputs(expr: exp.Expression, outputs) -> bool:
    """Whether every column of `expr` names an output (qualify leaves alias references
    unqualified), so it can be computed over the query's rows."""
    names = {name.lower() for name, _ in outputs}
    columns = list(expr.find_all(exp.Column))
    return bool(columns) and all(not c.table and c.name.lower() in names for c in columns)


def _needs_wrap(inner: exp.Query, expr: exp.Expression, outputs) -> bool:
    """A sort key over the outputs of a set operation or a SELECT DISTINCT: it cannot be added
    to their SELECT list (it would change the rows they keep), so the query is wrapped first."""
    plain = isinstance(inner, exp.Select) and not inner.args.get("distinct")
    return not plain and _over_outputs(expr, outputs) and \
        len({name.lower() for name, _ in outputs}) == len(outputs)


def _wrapped(inner: exp.Query, outputs) -> exp.Select:
    """`SELECT q.c0 AS c0, ... FROM (inner) AS q`: a SELECT over the query's rows, to which
    sort keys over its outputs are added as hidden columns."""
    return exp.select(*[exp.alias_(exp.column(name, table=WRAPPED, quoted=True), name, quoted=True)
                        for name, _ in outputs]).from_(inner.subquery(WRAPPED))


def _hide(inner: exp.Query, expr: exp.Expression, outputs, hidden: list[exp.Expression]) -> int:
    """Add a sort expression that is not an output to the inner query, after its outputs."""
    if not isinstance(inner, exp.Select):
        raise _Refused(f"ORDER BY an expression that is not an output column ({expr.sql(dialect='spark')}) "
                       "of a set operation is refreshed FULL")
    if inner.args.get("distinct"):
        raise _Refused(f"SELECT DISTINCT ... ORDER BY an expression that is not selected "
                       f"({expr.sql(dialect='spark')}) ... is refreshed FULL")
    for k, e in enumerate(hidden):
        if e == expr:
            return len(outputs) + k
    aliases = {name.lower(): e for name, e in outputs}

    def unalias(node: exp.Expression) -> exp.Expression:     # an alias inside an expression
        if isinstance(node, exp.Column) and not node.table and node.name.lower() in aliases:
            return aliases[node.name.lower()].copy()
        return node
    hidden.append(expr)
    inner.select(exp.alias_(expr.copy().transform(unalias), hidden_column(len(hidden) - 1)), copy=False)
    return len(outputs) + len(hidden) - 1


def _one_input_filter(inner: exp.Query) -> bool:
    """A filter (and projection) of one input: its rows cost as much to read again from the
    input as from a copy, so keeping them as internal state would not pay."""
    from dtcli.sql import functions as fn

    if not isinstance(inner, exp.Select) or inner.args.get("with_") or inner.args.get("with"):
        return False
    from_ = inner.args.get("from_") or inner.args.get("from")
    if from_ is None or not isinstance(from_.this, exp.Table) or isinstance(from_.this.this, exp.Func):
        return False
    if any(inner.args.get(a) for a in ("joins", "laterals", "group", "having", "qualify", "distinct",
                                        "windows")):
        return False
    return not any(isinstance(n, (exp.Window, exp.Query, exp.Subquery)) or
                   (fn.is_aggregate(n) and not fn.is_windowed(n))
                   for e in inner.expressions for n in e.walk()) and not any(
        isinstance(n, (exp.Query, exp.Subquery)) for n in (inner.args.get("where") or exp.Null()).walk())
