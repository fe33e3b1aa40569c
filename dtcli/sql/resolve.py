"""Binding a query's columns to its inputs' schemas, before Spark runs (sqlglot's `qualify`).

Every column of the result names the input it comes from, so the refresh analysis and the
change-query compiler treat `c_custkey` exactly like `customer.c_custkey`; and a column that no
input has, or that two inputs have, is reported at the line of the user's file with a
"did you mean" from the columns that are there.

sqlglot's resolver does not know every construct Spark accepts. When it cannot bind a column
and dt cannot show that the query itself is wrong, the query is left unqualified and its output
types unknown (`resolve` returns None): Spark will judge it, and a FULL refresh stays right.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import OptimizeError, SqlglotError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import MappingSchema

from dtcli.errors import ValidationError, suggest
from dtcli.model import Column
from dtcli.sql.types import from_sqlglot, to_sqlglot


@dataclass
class Resolved:
    query: exp.Query                 # a qualified copy: every column bound to its source
    columns: tuple[Column, ...]      # output columns, types where sqlglot can infer them


def schema_of(inputs: dict[str, tuple[Column, ...]], dialect: str) -> MappingSchema:
    mapping = {name: {c.name: to_sqlglot(c.type or "unknown") for c in cols}
               for name, cols in inputs.items()}
    return MappingSchema(mapping, dialect=dialect)


def resolve(query: exp.Query, inputs: dict[str, tuple[Column, ...]], dialect: str,
            file: str | None = None) -> Resolved | None:
    """Qualify `query` (not modified) against `inputs` (logical name -> columns)."""
    schema = schema_of(inputs, dialect)
    try:
        qualified = qualify(query.copy(), dialect=dialect, schema=schema,
                            validate_qualify_columns=False, identify=False)
    except OptimizeError as err:
        _explain_failure(str(err), query, inputs, file)
        return None
    except (SqlglotError, KeyError, ValueError, TypeError, AttributeError):
        return None
    problem = _unbound(qualified, inputs, file)
    if problem is not None:
        return None
    try:
        typed = annotate_types(qualified.copy(), schema=schema, dialect=dialect)
        # sqlglot types a LATERAL VIEW's generated column as the whole array: leave it unknown.
        generated = {a.alias_or_name.lower() for a in typed.find_all(exp.Lateral)}
        columns = tuple(Column(s.alias_or_name, None if _from(s, generated) else from_sqlglot(s.type))
                        for s in typed.selects)
    except (SqlglotError, KeyError, ValueError, TypeError, AttributeError):
        columns = tuple(Column(s.alias_or_name, None) for s in qualified.selects)
    return Resolved(qualified, columns)


def _from(select: exp.Expression, aliases: set[str]) -> bool:
    return any(c.table.lower() in aliases for c in select.find_all(exp.Column))


def _unbound(qualified: exp.Expression, inputs: dict[str, tuple[Column, ...]],
             file: str | None) -> str | None:
    """Raise for a column the user got wrong; a reason string when sqlglot merely could not
    bind one (the query is then left to Spark); None when every column is bound."""
    for scope in traverse_scope(qualified):
        if not isinstance(scope.expression, exp.Select):
            continue
        if scope.external_columns and not scope.is_correlated_subquery and not scope.pivots:
            column = scope.external_columns[0]
            if column.table:
                _unknown_qualifier(column, scope, inputs, file)
            else:
                _unknown_or_ambiguous(column, scope, inputs, file)
            return f"column {column.sql()} not bound"
        for column in scope.unqualified_columns:
            _unknown_or_ambiguous(column, scope, inputs, file)
            return f"column {column.sql()} not bound"
    return None


def _source_columns(scope: Scope, inputs: dict[str, tuple[Column, ...]]) -> dict[str, list[str]] | None:
    """Each source of a scope with its column names; None when one of them is not a plain input
    or derived table whose columns are known (then nothing can be proved about a column)."""
    out: dict[str, list[str]] = {}
    for alias, source in scope.selected_sources.items():
        node, inner = source
        if isinstance(inner, exp.Table):
            cols = inputs.get(inner.name.lower())
            if cols is None:
                cols = next((c for n, c in inputs.items() if n.lower() == inner.name.lower()), None)
            if cols is None:
                return None
            out[alias] = [c.name for c in cols]
        elif isinstance(inner, Scope) and isinstance(inner.expression, (exp.Select, exp.SetOperation)):
            selects = inner.expression.selects
            if any(isinstance(s, exp.Star) or (isinstance(s, exp.Column) and s.is_star) for s in selects):
                return None
            out[alias] = [s.alias_or_name for s in selects]
        else:
            return None
    if scope.expression.args.get("laterals") or any(
            isinstance(n, (exp.Lambda, exp.Lateral, exp.Unnest, exp.Pivot))
            for n in scope.expression.walk()):
        return None
    return out


def _where(column: exp.Column) -> int | None:
    return column.this.meta.get("line") if isinstance(column.this, exp.Identifier) else None


def _unknown_or_ambiguous(column: exp.Column, scope: Scope, inputs, file) -> None:
    sources = _source_columns(scope, inputs)
    if sources is None:
        return
    name = column.name
    having = [alias for alias, cols in sources.items() if any(c.lower() == name.lower() for c in cols)]
    if len(having) > 1:
        raise ValidationError(
            f"column '{name}' is ambiguous: {', '.join(having)} both have it", file=file,
            line=_where(column), hint=f"qualify it, e.g. {having[0]}.{name}")
    if not having:
        every = sorted({c for cols in sources.values() for c in cols})
        raise ValidationError(
            f"unknown column '{name}'", file=file, line=_where(column),
            hint=suggest(name, every) or _listing(every))


def _unknown_qualifier(column: exp.Column, scope: Scope, inputs, file) -> None:
    sources = _source_columns(scope, inputs)
    if sources is None:
        return
    owner = column.table
    cols = next((c for a, c in sources.items() if a.lower() == owner.lower()), None)
    if cols is None:
        if any(owner.lower() == c.lower() for cs in sources.values() for c in cs):
            return        # a struct column's field: Spark reads it, sqlglot could not
        raise ValidationError(f"unknown table or alias '{owner}' in {column.sql()}", file=file,
                              line=_where(column),
                              hint=suggest(owner, sources) or _listing(sorted(sources), "names in scope"))
    raise ValidationError(f"unknown column '{column.name}' of {owner}", file=file, line=_where(column),
                          hint=suggest(column.name, cols) or _listing(cols))


_FAILED = re.compile(r"Column '([^']+)' could not be resolved|Unknown column: (\S+)")


def _explain_failure(message: str, query: exp.Query, inputs, file) -> None:
    """qualify itself gave up: report it only when the query is demonstrably at fault."""
    match = _FAILED.search(message)
    if not match:
        return
    name = match.group(1) or match.group(2)
    every = sorted({c.name for cols in inputs.values() for c in cols})
    known = {c.lower() for c in every}
    outputs = {n.alias.lower() for n in query.find_all(exp.Alias)} | \
              {i.name.lower() for n in query.find_all(exp.TableAlias) for i in n.columns}
    if name.lower() in known or name.lower() in outputs or query.find(exp.Lambda, exp.Lateral):
        return
    column = next((c for c in query.find_all(exp.Column) if c.name.lower() == name.lower()), None)
    owner = column.table.lower() if column is not None else ""
    tables = {t.alias_or_name.lower(): t.name.lower() for t in query.find_all(exp.Table)}
    if owner and tables.get(owner) in inputs:
        every = [c.name for c in inputs[tables[owner]]]
        name = f"{name}' of '{column.table}"
    raise ValidationError(f"unknown column '{name}'", file=file,
                          line=_where(column) if column is not None else None,
                          hint=suggest(column.name if column is not None else name, every)
                          or _listing(every))


def _listing(names: list[str], what: str = "columns") -> str:
    shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    return f"{what}: {shown}" if names else "the inputs have no columns"
