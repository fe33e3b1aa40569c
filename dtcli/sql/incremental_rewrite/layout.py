"""The key a DT's rows are written in order of: what its incremental refreshes name rows by.

A keyed outermost block (GROUP BY keys, window partitions, DISTINCT rows, an outer join's key)
replaces the rows of the keys a change touches; a linear one rewrites the slice of rows sharing
a value of its leading column with the change. Written in that key's order, the DT's files each
hold a narrow range of it, and Delta skips the files a change does not touch.
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql.incremental_rewrite import shapes
from dtcli.sql.incremental_rewrite.ctes import inline_ctes
from dtcli.sql.incremental_rewrite.relations import Unsupported, parse


def key_positions(sql: str | exp.Query) -> list[int]:
    """Output positions of the DT's refresh key: the keyed block's key columns, else the first
    column; [] when the query is not a plain SELECT (a set operation) or its key is not output."""
    try:
        query = inline_ctes(parse(sql))
    except Unsupported:
        return []
    sel = query
    while isinstance(sel, exp.Subquery):
        sel = sel.this
    if not isinstance(sel, exp.Select):
        return []
    try:
        shape = shapes.shape(sel)
    except Unsupported:
        shape = None
    if shape is None:
        return [0]
    exprs = shape.keys if shape.keys is not None else shape.join.key
    outputs = [e.unalias() for e in sel.expressions]
    positions = []
    for e in exprs or []:
        found = [k for k, o in enumerate(outputs) if o == e]
        if not found:
            return []
        positions.append(found[0])
    return positions
