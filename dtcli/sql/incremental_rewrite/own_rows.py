"""Outermost blocks a DT maintains from its own rows, without recomputing from its inputs.

Recomputing the affected keys of a GROUP BY or a window reads every input row of those keys,
wherever they lie: the lines of every order of the customers a change touched. When the DT's
own rows hold what the recompute needs, the change is applied to them instead:

* **Aggregates** (`GROUP BY` keys selected as they are, each other output `COUNT(*)`,
  `COUNT(x)` or `SUM(x)`): each affected group's new value is its current value plus the sum of
  the change's rows (+1 for rows the block's input gains, -1 for rows it loses). `COUNT(*)`
  says when a group is emptied. Exact for integers and decimals; the engine checks the types,
  and that every summed value is never NULL (a SUM over only NULLs is NULL, which a running
  total cannot tell) unless the block also counts that value: a SUM beside the COUNT of its
  own argument is NULL exactly when that count is 0. Without GROUP BY (one row) only for an
  aggregate_totals internal table (sql/rules/aggregate_totals.py): its one row is kept when
  COUNT(*) falls to 0; other one-row DTs are recomputed (engine/runtime/query_shape.py).
* **Windows** (`PARTITION BY` keys selected as they are, every column a window function reads
  also an output column): the DT's rows of an affected partition, without their window
  columns, are that partition's input rows; the change of those rows is added to them and the
  window functions are evaluated again over the result (own_rows_window.py).

Anything else (HAVING, expressions over aggregates, MIN/MAX, DISTINCT aggregates, QUALIFY,
named windows, ...) returns None: the caller recomputes the affected keys instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from dtcli.sql import functions as fn
from dtcli.sql.incremental_rewrite import shapes
from dtcli.sql.incremental_rewrite.flatten import flattened
from dtcli.sql.incremental_rewrite.pushdown import pushed_keys
from dtcli.sql.incremental_rewrite.relations import (
    MINUS,
    NEW,
    PLUS,
    PRIOR,
    WEIGHTED,
    Unsupported,
    alias_of,
    block_items,
    is_table_ref,
    scope_nodes,
    set_block_item,
    union_all,
)

WEIGHT = "__dt_w"
COUNT_ALL, COUNT, SUM = "count_all", "count", "sum"


def output_column(position: int) -> str:
    return f"__dt_o{position}"


def delta_column(position: int) -> str:
    return f"__dt_d{position}"


@dataclass
class Measure:
    position: int          # its output column
    kind: str              # COUNT_ALL | COUNT | SUM
    count: int | None = None   # a SUM's: the output position of the COUNT of the same argument


@dataclass
class AggregateUpkeep:
    keys: list[int]             # output positions of the GROUP BY keys ([]: one row)
    measures: list[Measure]
    # the block's input at its new version, selecting __dt_o<key>, __dt_o<measure>: the types
    # of the sums, known without compiling (or reading) the change
    columns: exp.Query
    # the columns every SUM without a COUNT of its argument is made of, read from the block's
    # input (their nullability says whether a sum can be NULL); None when such a SUM is more
    # than + - * over columns and numbers
    probe: exp.Query | None
    # compiles (rows, deltas), or None when the change cannot be written: the compiler may read
    # changes and scans to do so, so the engine first checks the types (engine/runtime/own_rows.py)
    build: Callable[[], tuple[exp.Query, exp.Query] | None] = field(repr=False)
    _built: tuple | None = field(default=None, repr=False)

    def change(self) -> tuple[exp.Query, exp.Query] | None:
        """(rows: the change of the block's input, __dt_o<key>, __dt_o<measure>, WEIGHT; deltas:
        per affected group, __dt_o<key>, __dt_d<measure>, the summed change), compiled once."""
        if self._built is None:
            self._built = (self.build(),)
        return self._built[0]

    @property
    def rows(self) -> exp.Query:
        return self.change()[0]

    @property
    def deltas(self) -> exp.Query:
        return self.change()[1]


def _outermost(query: exp.Expression) -> exp.Select | None:
    sel = query
    while isinstance(sel, exp.Subquery):
        sel = sel.this
    if not isinstance(sel, exp.Select) or sel.args.get("limit") or sel.args.get("offset"):
        return None
    return sel


# Changed inputs up to which a block's change is expanded over the new versions only.
NEW_ONLY_INPUTS = 3


def _weighted(compiler, block: exp.Select) -> exp.Query | None:
    """The block's change as rows with a weight column (+n gained, -n lost).

    A block linear in plain input tables is expanded over the inputs' new versions and their
    changes only. Up to NEW_ONLY_INPUTS changed inputs: for every non-empty set S of them, the
    block with S read as their weighted changes and the others at their new version, weighted
    by the product of the changes' weights and by -1 when S has an even number of inputs
    (inclusion-exclusion: ΔA⋈B_new + A_new⋈ΔB − ΔA⋈ΔB = ΔA⋈B_old + A_new⋈ΔB); terms of several
    changes join small sets only. More (2^n - 1 terms would be too many): the delta rule's n
    terms, ΔA⋈B_old⋈C_old + A_new⋈ΔB⋈C_old + A_new⋈B_new⋈ΔC, each old version read as its new
    rows and its change negated (PRIOR). Either way no input is read at its old version, which
    Delta would rebuild from its log, and every term scans the same versions. A join's hub is
    read through its kept rows, the terms in its order (hub.py). A block that only projects a
    derived table is first merged with it (flatten.py). Other blocks take the compiler's plus
    and minus queries, weighted +1 and -1."""
    from itertools import combinations

    items = block_items(block)
    changed = [k for k, item in enumerate(items) if compiler.changed(item)]
    linear = shapes.shape(block) is None and all(
        isinstance(items[k], exp.Table) and is_table_ref(items[k]) for k in changed)
    if linear and len(changed) <= NEW_ONLY_INPUTS:
        terms = []
        for size in range(1, len(changed) + 1):
            for subset in combinations(changed, size):
                terms.append(_new_only_term(compiler, block, set(subset), negative=size % 2 == 0))
        return union_all(terms)
    if linear:
        # in the hub's order when it has one (hub.py): the changed items after k are old
        hub = compiler.hub(block)
        rank = hub.rank if hub is not None else {k: k for k in range(len(items))}
        return union_all([_prior_term(compiler, block, k, [j for j in changed if rank[j] > rank[k]])
                          for k in changed])
    parts = []
    for sign, weight in ((PLUS, 1), (MINUS, -1)):
        body = compiler.delta(block, sign)
        if body is None:
            continue
        parts.append(exp.select("*", exp.alias_(exp.Literal.number(weight), WEIGHT))
                     .from_(exp.Subquery(this=body, alias=exp.TableAlias(
                         this=exp.to_identifier(f"__dt_{sign}")))))
    return union_all(parts)


def _prior_term(compiler, block: exp.Select, index: int, later: list[int]) -> exp.Select:
    """The delta rule's term of changed item `index`: the items before it new, it weighted, the
    changed items after it (`later`) old as PRIOR rows; weighted by the product of their weights."""
    items = block_items(block)
    out = block.copy()
    hub = compiler.hub(block)
    for k, item in enumerate(items):
        how = WEIGHTED if k == index else PRIOR if k in later else NEW
        set_block_item(out, k, compiler.new_or_kept(hub, item, k, {index}) if how == NEW
                       else compiler.item_relation(item, how))
    weight: exp.Expression | None = None
    for k in [index, *later]:
        w = exp.column(WEIGHT, alias_of(items[k]))
        weight = w if weight is None else exp.Mul(this=weight, expression=w)
    if compiler.narrow is not None:
        for cond in pushed_keys(block, index, compiler.narrow):
            out.where(cond, copy=False)
    compiler.narrow_to_kept(out, block, hub, {index})
    return out.select(exp.alias_(weight, WEIGHT), copy=False)


def _new_only_term(compiler, block: exp.Select, changes: set[int], negative: bool) -> exp.Select:
    items = block_items(block)
    out = block.copy()
    hub = compiler.hub(block)
    for k, item in enumerate(items):
        rel = compiler.item_relation(item, WEIGHTED) if k in changes else \
            compiler.new_or_kept(hub, item, k, changes)
        set_block_item(out, k, rel)
    weight: exp.Expression | None = None
    for k in sorted(changes):
        w = exp.column(WEIGHT, alias_of(items[k]))
        weight = w if weight is None else exp.Mul(this=weight, expression=w)
    if negative:
        weight = exp.Neg(this=exp.Paren(this=weight))
    if compiler.narrow is not None:
        for k in sorted(changes):
            for cond in pushed_keys(block, k, compiler.narrow):
                out.where(cond, copy=False)
    compiler.narrow_to_kept(out, block, hub, changes)
    return out.select(exp.alias_(weight, WEIGHT), copy=False)


def keyed_shape(sel: exp.Select):
    """The block's shape (shapes.py) when the compiler takes it, it joins nothing and its rows
    have keys; else None (the compiler refusing it is its own reason: no fast path)."""
    try:
        shape = shapes.shape(sel)
    except Unsupported:
        return None
    return None if shape is None or shape.join is not None or shape.keys is None else shape


def _positions(outputs: list[exp.Expression], exprs: list[exp.Expression]) -> list[int] | None:
    found = []
    for e in exprs:
        match = [j for j, o in enumerate(outputs) if o == e]
        if not match:
            return None
        found.append(match[0])
    return found


def aggregate_upkeep(compiler, query: exp.Expression) -> AggregateUpkeep | None:
    sel = _outermost(query)
    if sel is None or not compiler.changed(sel):
        return None
    if any(sel.args.get(a) for a in ("having", "qualify", "distinct", "windows")):
        return None
    if any(isinstance(n, exp.Window) for n in scope_nodes(sel, ("expressions",))):
        return None
    shape = keyed_shape(sel)
    if shape is None:
        return None
    if sel.args.get("group") is None and shape.keys:
        return None
    outputs = [e.unalias() for e in sel.expressions]
    keys = _positions(outputs, shape.keys)
    if keys is None or len(set(keys)) != len(keys):
        return None
    measures: list[Measure] = []
    args: dict[int, exp.Expression] = {}
    for k, out in enumerate(outputs):
        if k in keys:
            continue
        kind, arg = _measure(out)
        if kind is None:
            return None
        measures.append(Measure(k, kind))
        if arg is not None:
            args[k] = arg
    if not any(m.kind == COUNT_ALL for m in measures):
        return None
    for m in measures:
        if m.kind == SUM:
            m.count = next((c.position for c in measures if c.kind == COUNT and args[c.position] == args[m.position]),
                           None)
    block = sel.copy()
    for arg in ("group", "order", "sort", "cluster", "distribute"):
        block.set(arg, None)
    block.set("expressions", [exp.alias_(outputs[k].copy(), output_column(k)) for k in keys] +
              [exp.alias_(args[m.position].copy(), output_column(m.position))
               for m in measures if m.position in args]
              or [exp.alias_(exp.Literal.number(1), "__dt_one")])    # COUNT(*) alone, one row
    probe = _probe(compiler, block, [args[m.position] for m in measures if m.kind == SUM and m.count is None])
    return AggregateUpkeep(keys, measures, compiler.version(block, NEW), probe,
                           lambda: _change(compiler, block, keys, measures))


def _change(compiler, block: exp.Select, keys: list[int],
            measures: list[Measure]) -> tuple[exp.Query, exp.Query] | None:
    # a derived table the block only projects is read as the block's own joins (flatten.py)
    rows = _weighted(compiler, flattened(block))
    if rows is None:
        return None
    w = exp.column(WEIGHT)
    summed = []
    for m in measures:
        col = exp.column(output_column(m.position))
        if m.kind == COUNT_ALL:
            term: exp.Expression = w.copy()
        elif m.kind == COUNT:
            term = exp.If(this=exp.Is(this=col, expression=exp.Null()), true=exp.Literal.number(0),
                          false=w.copy())
        else:
            term = exp.Mul(this=w.copy(), expression=col)
        summed.append(exp.alias_(exp.Sum(this=term), delta_column(m.position)))
    key_cols = [exp.column(output_column(k)) for k in keys]
    deltas = (exp.select(*key_cols, *summed)
              .from_(exp.Subquery(this=rows.copy(), alias=exp.TableAlias(this=exp.to_identifier("__dt_rows")))))
    if key_cols:
        deltas = deltas.group_by(*[c.copy() for c in key_cols])
    return rows, deltas


_ARITHMETIC = (exp.Column, exp.Add, exp.Sub, exp.Mul, exp.Paren, exp.Neg, exp.Identifier)


def _probe(compiler, block: exp.Select, sums: list[exp.Expression]) -> exp.Query | None:
    """The block's input (at the new version) selecting the columns the sums are made of."""
    leaves: list[exp.Column] = []
    for arg in sums:
        for node in arg.walk():
            if isinstance(node, exp.Literal) and not node.is_string:
                continue
            if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):
                continue
            if isinstance(node, exp.DataType) or (node.parent is not None and isinstance(node.parent, exp.DataType)):
                continue
            if not isinstance(node, _ARITHMETIC):
                return None
            if isinstance(node, exp.Column):
                leaves.append(node)
    probe = compiler.version(block, NEW)
    probe.set("expressions", [exp.alias_(c.copy(), f"__dt_p{k}") for k, c in enumerate(leaves)]
              or [exp.alias_(exp.Literal.number(1), "__dt_p0")])
    return probe


def _measure(out: exp.Expression) -> tuple[str | None, exp.Expression | None]:
    if isinstance(out, exp.Count):
        arg = out.this
        if isinstance(arg, exp.Distinct) or out.args.get("big_int") is False:
            return None, None
        if arg is None or isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and not arg.is_string
                                                        and arg.name not in ("", "null")):
            return COUNT_ALL, None
        if _plain(arg):
            return COUNT, arg
        return None, None
    if isinstance(out, exp.Sum) and not isinstance(out.this, exp.Distinct) and _plain(out.this):
        return SUM, out.this
    return None, None


def _plain(arg: exp.Expression | None) -> bool:
    """An argument evaluated row by row: no aggregate, window, subquery or generator inside."""
    return arg is not None and not any(
        fn.is_aggregate(n) or isinstance(n, (exp.Window, exp.Query, exp.Subquery, exp.Star))
        for n in arg.walk())
