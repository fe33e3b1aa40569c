"""Which output columns a query already makes unique: its GROUP BY keys, when all are output.

A `unique` test on those columns cannot fail on a table that holds the query's result, so a
refresh need not spend a scan of the DT on it (`dt test` still checks it over the whole table).
"""

from __future__ import annotations

from sqlglot import exp


def grouped_output_columns(query: exp.Expression | None, names: list[str]) -> list[str] | None:
    """The output column names (`names`, in output order) that hold the outermost SELECT's GROUP
    BY keys, when every key is an output column and the grouping is plain (no GROUPING SETS,
    ROLLUP or CUBE); None otherwise (no GROUP BY, a set operation, a key not output)."""
    if query is None:
        return None
    select = query
    while isinstance(select, exp.Subquery):
        select = select.this
    if not isinstance(select, exp.Select):
        return None
    group = select.args.get("group")
    if group is None or not group.expressions or any(group.args.get(k) for k in ("grouping_sets", "rollup", "cube")):
        return None
    outputs = [e.unalias() for e in select.expressions]
    if len(outputs) != len(names) or any(isinstance(o, exp.Star) for o in outputs):
        return None
    found = []
    for key in group.expressions:
        if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.this) <= len(names):
            found.append(names[int(key.this) - 1])
            continue
        positions = [k for k, o in enumerate(outputs) if o == key]
        if not positions:
            return None
        found.append(names[positions[0]])
    return found
