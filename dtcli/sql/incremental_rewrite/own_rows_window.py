"""Windows a DT maintains from its own rows (see own_rows.py, which keeps aggregates so): with
`PARTITION BY` keys selected as they are and every column a window function reads also an output
column, the DT's rows of an affected partition, without their window columns, are that
partition's input rows; the change of those rows is added to them and the window functions are
evaluated again over the result. Without PARTITION BY, the rows sorting before the first change
keep their values where every window allows it (`prefix_order`)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dtcli.sql import functions as fn
from dtcli.sql.incremental_rewrite.own_rows import _outermost, _positions, _weighted, keyed_shape, output_column
from dtcli.sql.incremental_rewrite.relations import scope_nodes


@dataclass
class WindowUpkeep:
    keys: list[int]                          # output positions of the partition keys ([]: one partition)
    plain: list[int]                         # output positions computed row by row
    change: exp.Query                        # __dt_o<plain> + WEIGHT: the change of those rows
    windowed: dict[int, exp.Expression]      # output position -> expression over __dt_o<plain>
    # without PARTITION BY: the ORDER BY every window shares, as (output position, descending,
    # nulls first), when each window's value at a row depends only on the rows sorting at or
    # before it: rows sorting before the first change keep their values (None: all re-evaluated)
    order: list[tuple[int, bool, bool]] | None = None


def window_upkeep(compiler, query: exp.Expression) -> WindowUpkeep | None:
    sel = _outermost(query)
    if sel is None or not compiler.changed(sel):
        return None
    if any(sel.args.get(a) for a in ("group", "having", "qualify", "distinct", "windows")):
        return None
    outputs = [e.unalias() for e in sel.expressions]
    if any(isinstance(o, exp.Star) or (isinstance(o, exp.Column) and o.is_star) for o in outputs):
        return None
    windows = [n for n in scope_nodes(sel, ("expressions",)) if isinstance(n, exp.Window)]
    if not windows or any(fn.is_aggregate(n) and not fn.is_windowed(n)
                          for n in scope_nodes(sel, ("expressions",))):
        return None
    shape = keyed_shape(sel)
    if shape is None:
        return None
    with_window = {k for k, o in enumerate(outputs) if any(isinstance(n, exp.Window) for n in o.walk())}
    plain = [k for k in range(len(outputs)) if k not in with_window]
    keys = _positions([outputs[k] if k in plain else exp.Null() for k in range(len(outputs))], shape.keys)
    if keys is None:
        return None
    columns = {k: outputs[k] for k in plain if isinstance(outputs[k], exp.Column)}

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column):
            found = [k for k, c in columns.items() if c == node]
            if not found:
                raise LookupError(node.sql())
            return exp.column(output_column(found[0]))
        return node
    windowed = {}
    for k in sorted(with_window):
        if any(isinstance(n, (exp.Query, exp.Subquery)) or fn.is_nondeterministic(n)
               or fn.is_user_defined(n) for n in outputs[k].walk()):
            return None
        try:
            windowed[k] = outputs[k].copy().transform(rewrite)
        except LookupError:
            return None
    block = sel.copy()
    for arg in ("order", "sort", "cluster", "distribute"):
        block.set(arg, None)
    block.set("expressions", [exp.alias_(outputs[k].copy(), output_column(k)) for k in plain])
    change = _weighted(compiler, block)
    if change is None:
        return None
    order = prefix_order(windows, {k: outputs[k] for k in plain}) if not keys else None
    return WindowUpkeep(keys, plain, change, windowed, order)


# Window functions whose value at a row depends only on the rows sorting at or before it, and is
# the same in every evaluation when the ORDER BY has ties: ROW_NUMBER numbers tied rows in any
# order, but a tie group lies wholly on one side of the first change, so the numbers of the rows
# kept and of the rows rewritten still make one evaluation's. LAG, FIRST_VALUE / LAST_VALUE /
# NTH_VALUE and ROWS frames read a neighbour chosen by the order among tied rows: the rows kept
# from an earlier evaluation and the rows rewritten could mix two orders of one tie, which no
# evaluation gives, so with them every row is evaluated again.
_PREFIX = (exp.RowNumber, exp.Rank, exp.DenseRank)
# ... and whose value depends on rows after it, on how many rows there are, or on the order among
# ties (sqlglot counts some of them as aggregates)
_NOT_PREFIX = (exp.Lead, exp.Ntile, exp.PercentRank, exp.CumeDist, exp.Lag, exp.FirstValue,
               exp.LastValue, exp.NthValue)


def prefix_order(windows: list[exp.Window], plain: dict[int, exp.Expression]
                 ) -> list[tuple[int, bool, bool]] | None:
    """The ORDER BY shared by windows without PARTITION BY, as (output position among `plain`,
    descending, nulls first), when every one of them is a rank, a row number, or an aggregate
    over a RANGE frame that ends at the current row or before it (the default with ORDER BY);
    None otherwise (ntile, lead, lag, percent_rank, cume_dist, first/last/nth value, a ROWS
    frame or one reaching FOLLOWING, no ORDER BY, different orders, a key that is no plain
    output)."""
    shared: list[tuple[int, bool, bool]] | None = None
    for win in windows:
        func = win.this
        while isinstance(func, (exp.IgnoreNulls, exp.RespectNulls)):
            func = func.this
        order = win.args.get("order")
        if order is None or not order.expressions or not _ends_at_current_row(func, win.args.get("spec")):
            return None
        keys = []
        for ordered in order.expressions:
            found = [k for k, e in plain.items() if isinstance(e, exp.Column) and e == ordered.this]
            if not found:
                return None
            keys.append((found[0], bool(ordered.args.get("desc")), bool(ordered.args.get("nulls_first"))))
        if shared is not None and keys != shared:
            return None
        shared = keys
    return shared


def _ends_at_current_row(func: exp.Expression, frame: exp.Expression | None) -> bool:
    if isinstance(func, _NOT_PREFIX):
        return False
    if isinstance(func, _PREFIX):
        return True
    if not fn.is_aggregate(func) or isinstance(func, exp.Window):
        return False
    if frame is None:          # with ORDER BY: RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
        return True
    if str(frame.args.get("kind") or "").upper() != "RANGE":
        return False
    end, side = frame.args.get("end"), str(frame.args.get("end_side") or "").lower()
    end = end.name if isinstance(end, exp.Expression) else str(end or "")
    return end.upper() == "CURRENT ROW" or side == "preceding"
