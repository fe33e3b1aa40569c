"""Which columns of each input a qualified query reads.

An incremental refresh reads only these from an input's change data feed, so a column added to
the input (or a change to a column the query never reads) neither reinitializes the DT nor
costs a read; a change to a column it does read still does.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import traverse_scope


def columns_read(query: exp.Expression, inputs: list[str]) -> dict[str, list[str]] | None:
    """{input: its columns the query reads, in first-use order}, or None when that cannot be
    told for sure (a `*` anywhere, a column whose source is not named): then every column."""
    wanted = {name.lower(): name for name in inputs}
    found: dict[str, dict[str, None]] = {name: {} for name in inputs}
    try:
        scopes = traverse_scope(query)
    except (SqlglotError, RecursionError):     # scopes sqlglot cannot resolve: read every column
        return None
    for scope in scopes:
        if any(not isinstance(star.parent, exp.Count) for star in scope.expression.find_all(exp.Star)):
            return None
        for column in scope.columns:
            if column.is_star:
                return None
            if not column.table:
                if column.name and column.name.lower() in _aliases(scope):
                    continue        # an output alias referenced in ORDER BY / QUALIFY
                return None
            source = scope.sources.get(column.table)
            if isinstance(source, exp.Table):
                name = wanted.get(source.name.lower())
                if name is None:
                    return None
                found[name][column.name] = None
    return {name: list(cols) for name, cols in found.items()}


def _aliases(scope) -> set[str]:
    select = scope.expression
    if not isinstance(select, exp.Select):
        return set()
    return {e.alias.lower() for e in select.expressions if isinstance(e, exp.Alias)}
