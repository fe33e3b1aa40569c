"""A DT's output columns must have names, once each.

Spark names an unaliased expression after its text (`sum(amount)`, `(a + b)`): a DT takes that
name (sql/spark_names.py; Delta then needs column mapping to hold it, see planning/plan.py), for
the forms whose Spark name dt knows; any other unaliased expression is refused here, at the
line of the user's file, with the fix (an alias, or `columns:`). Two outputs with the same name
(Spark compares names case-insensitively) cannot both be written: refused too, rather than
seconds into `dt run` with Spark's message about SQL the user never wrote.
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.errors import ValidationError
from dtcli.model import Column
from dtcli.sql.parse import line_of
from dtcli.sql.spark_names import output_name

# characters Delta refuses in a column name unless the table maps its columns by name
# (`delta.columnMapping.mode = 'name'`)
_MAPPED_ONLY = frozenset(" ,;{}()\n\t=")

# outputs Spark names by a plain identifier: a column, a struct field, an element, a number
_NAMED_BY_SPARK = (exp.Alias, exp.Column, exp.Star, exp.Dot, exp.Bracket)


def check_output_names(query: exp.Query, columns: tuple[Column, ...], *, renamed: bool,
                       file: str | None, text: str | None = None) -> None:
    """Raise ValidationError for an unnamed output expression whose Spark name dt does not know
    (unless `columns:` renames the outputs) or a name given twice. `columns` are the output
    columns as derived (empty when unknown); `text` is the SQL `query` was parsed from."""
    selects = _outermost(query).expressions
    # beside a `*`, an unaliased expression is not named: which column it is once the star is
    # expanded is known to the binder only, which names it `_col_N`, not as Spark does
    starred = any(map(_star, selects))
    if not renamed:
        for select in selects:
            if not _named(select) and (starred or output_name(select, text) is None):
                shown = select.sql(dialect="spark")
                shown = shown if len(shown) <= 60 else shown[:57] + "..."
                raise ValidationError(f"the output expression {shown} has no column name",
                                      file=file, line=line_of(select),
                                      hint=f"name it: {shown} AS <name>, or list the names under columns:")
    names = [c.name for c in columns] if columns else [
        s.alias_or_name if _named(s) else (output_name(s, text) or s.alias_or_name)
        for s in selects if not _star(s)]
    seen: dict[str, int] = {}
    for k, name in enumerate(names):
        if name.lower() in seen:
            select = selects[k] if len(selects) == len(names) else _written(selects, name)
            raise ValidationError(f"the output column '{name}' appears twice (outputs {seen[name.lower()] + 1} "
                                  f"and {k + 1}; Spark compares names case-insensitively)",
                                  file=file, line=line_of(select),
                                  hint="rename one with AS" + (", or list the columns instead of a *"
                                                               if starred else ""))
        seen[name.lower()] = k


def needs_column_mapping(names) -> bool:
    """Whether Delta can hold these column names only with column mapping."""
    return any(ch in _MAPPED_ONLY for name in names for ch in name)


def given_names(query: exp.Query, text: str | None) -> list[str] | None:
    """The query's output names as Spark names them, when an output is an unaliased expression
    whose name dt knows and no output is a `*` (else None: nothing to rename)."""
    selects = _outermost(query).expressions
    if all(_named(s) for s in selects) or any(_star(s) for s in selects):
        return None
    names = [s.alias_or_name if _named(s) else output_name(s, text) for s in selects]
    return None if any(n is None for n in names) else names


def unnamed(query: exp.Query) -> bool:
    """Whether the query has an output Spark names itself (an unaliased expression)."""
    return not all(_named(s) for s in _outermost(query).expressions)


def _outermost(query: exp.Expression) -> exp.Select:
    """The SELECT that names a query's columns: a set operation's first branch."""
    while not isinstance(query, exp.Select):
        query = query.this if isinstance(query, exp.Subquery) else query.left
    return query


def _written(selects: list[exp.Expression], name: str) -> exp.Expression:
    """The output a star-expanded name is written at: the last one naming it, else a star."""
    named = [s for s in selects if not _star(s) and s.alias_or_name.lower() == name.lower()]
    return named[-1] if named else next(s for s in selects if _star(s))


def _named(select: exp.Expression) -> bool:
    return isinstance(select, _NAMED_BY_SPARK) or (isinstance(select, exp.Literal) and select.is_number)


def _star(select: exp.Expression) -> bool:
    return isinstance(select, exp.Star) or (isinstance(select, exp.Column) and select.is_star)
