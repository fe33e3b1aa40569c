"""A DT's output columns must have names a Delta table can hold, once each.

Spark names an unaliased expression after its text (`sum(amount)`, `(a + b)`), and Delta
refuses such names (` ,;{}()=` are not allowed without column mapping); two outputs with the
same name (Spark compares names case-insensitively) cannot both be written. Both would fail
seconds into `dt run` with Spark's message about SQL the user never wrote; here they fail at
`dt validate`, at the line of the user's file, with the fix.
"""

from __future__ import annotations

from sqlglot import exp

from dtcli.errors import ValidationError
from dtcli.model import Column
from dtcli.sql.parse import line_of

# outputs Spark names by a plain identifier: a column, a struct field, an element, a number
_NAMED_BY_SPARK = (exp.Alias, exp.Column, exp.Star, exp.Dot, exp.Bracket)


def check_output_names(query: exp.Query, columns: tuple[Column, ...], *, renamed: bool,
                       file: str | None) -> None:
    """Raise ValidationError for an unnamed output expression (unless `columns:` renames the
    outputs) or a name given twice. `columns` are the output columns as derived (empty when
    unknown)."""
    selects = _outermost(query).expressions
    if not renamed:
        for select in selects:
            if not _named(select):
                text = select.sql(dialect="spark")
                text = text if len(text) <= 60 else text[:57] + "..."
                raise ValidationError(f"the output expression {text} has no column name",
                                      file=file, line=line_of(select),
                                      hint=f"name it: {text} AS <name>, or list the names under columns:")
    names = [c.name for c in columns] if columns else [s.alias_or_name for s in selects
                                                       if not _star(s)]
    seen: dict[str, int] = {}
    for k, name in enumerate(names):
        if name.lower() in seen:
            select = selects[k] if len(selects) == len(names) else _written(selects, name)
            raise ValidationError(f"the output column '{name}' appears twice (outputs {seen[name.lower()] + 1} "
                                  f"and {k + 1}; Spark compares names case-insensitively)",
                                  file=file, line=line_of(select),
                                  hint="rename one with AS" + (", or list the columns instead of a *"
                                                               if any(map(_star, selects)) else ""))
        seen[name.lower()] = k


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
