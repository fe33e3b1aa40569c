"""What an incremental refresh needs to know of a DT's query's outermost block, pure sqlglot.

**One row.** A scalar aggregate (`SELECT SUM(...) FROM ...` without GROUP BY) holds one row
computed over all of its inputs; its incremental refresh recomputes that row.

The change query of such a block is the aggregate at the new versions minus the aggregate at the
old versions: two scans of every input, the old one after Delta rebuilt the input's state at its
old version, plus reading the change, netting it and a commit (TPC-H Q6 at SF0.01: 24 Spark jobs
against FULL's 9, benchmarks/refresh_profile.py). The DT's one row is what the old aggregate
computes, so the refresh recomputes the new row from the inputs as the run binds them and writes
it over the old one: no old version is read, the cost is the recompute's. The change is read
first, only to see whether any of its rows passes the query's conditions: when none does, the
row cannot move and the refresh commits the frontier alone (`no_row_changed`).
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql.incremental_rewrite import shapes
from dtcli.sql.incremental_rewrite.ctes import inline_ctes
from dtcli.sql.incremental_rewrite.relations import Unsupported, parse, scope_nodes

SINGLE_ROW_RECOMPUTED = "single_row_recomputed"     # the history's refresh_strategy


def holds_one_row(sql: str) -> bool:
    """The query's outermost block aggregates without GROUP BY or a window (a HAVING may leave
    no row)."""
    try:
        sel = inline_ctes(parse(sql))
        while isinstance(sel, exp.Subquery):
            sel = sel.this
        if not isinstance(sel, exp.Select) or any(sel.args.get(k) for k in ("group", "limit", "offset")):
            return False
        if any(isinstance(n, exp.Window) for n in scope_nodes(sel, ("expressions", "qualify", "order"))):
            return False        # a window without PARTITION BY is one partition, not one row
        found = shapes.shape(sel)
    except Unsupported:     # not for this module to refuse: the compiler says why, if it must
        return False
    return found is not None and found.join is None and found.keys == []
