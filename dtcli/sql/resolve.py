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
from dtcli.lazy import LazyFields
from dtcli.model import Column
from dtcli.sql.rules import normalize
from dtcli.sql.spark_names import output_name
from dtcli.sql.types import from_sqlglot, to_sqlglot

Inputs = dict[str, tuple[Column, ...]]     # logical input name -> its columns
_SQLGLOT_LIMITS = (SqlglotError, KeyError, ValueError, TypeError, AttributeError)
_GAVE_UP = re.compile(r"Column '([^']+)' could not be resolved|Unknown column: (\S+)")


@dataclass
class Resolved(LazyFields):
    LAZY = ("query",)                # kept pickled in the check cache until read (dtcli.lazy)

    query: exp.Query                 # a qualified copy: every column bound to its source
    columns: tuple[Column, ...]      # output columns, types where sqlglot can infer them
    # False when an output is an unaliased expression: Spark names it (`count(1)`) in ways
    # sqlglot does not, so a query reading this one cannot be checked against these names
    names_certain: bool = True
    # what the rules (dtcli.sql.rules) rewrote in `query`, once `normalized()` ran
    rewrites: tuple = ()

    def normalized(self) -> Resolved:
        """This resolution with its query put into the forms the change compiler refreshes
        (dtcli.sql.rules): the query every later step reads, explain and the compiler alike."""
        out = normalize(self.query)
        return Resolved(out.query, self.columns, self.names_certain, out.rewrites)


def resolve(query: exp.Query, inputs: Inputs, dialect: str, file: str | None = None,
            text: str | None = None) -> Resolved | None:
    """Qualify `query` (not modified) against `inputs`; raise ValidationError for a column the
    query gets wrong; None when sqlglot cannot bind it but the query may well be right. `text`:
    the SQL `query` was parsed from (unaliased outputs are named as Spark names them from it)."""
    return _Binder(query, inputs, dialect, file, text).resolve()


class _Binder:
    def __init__(self, query: exp.Query, inputs: Inputs, dialect: str, file: str | None,
                 text: str | None = None):
        self.query, self.inputs, self.dialect, self.file, self.text = query, inputs, dialect, file, text
        mapping = {name: {c.name: to_sqlglot(c.type or "unknown") for c in cols}
                   for name, cols in inputs.items()}
        self.schema = MappingSchema(mapping, dialect=dialect)
        # qualify normalizes the case of names; messages use them as the user wrote them,
        # found by position in the unqualified query
        self.spelling = {i.meta["start"]: i.name for i in query.find_all(exp.Identifier)
                         if "start" in i.meta}

    def resolve(self) -> Resolved | None:
        try:
            qualified = qualify(self.query.copy(), dialect=self.dialect, schema=self.schema,
                                validate_qualify_columns=False, identify=False)
        except OptimizeError as err:
            self.gave_up(str(err))
            return None
        except _SQLGLOT_LIMITS:
            return None
        if not self.all_bound(qualified):
            return None
        try:
            typed = annotate_types(qualified.copy(), schema=self.schema, dialect=self.dialect)
            # sqlglot types a LATERAL VIEW's generated column as the whole array: leave it unknown
            generated = {a.alias_or_name.lower() for a in typed.find_all(exp.Lateral)}
            types = [None if _reads(s, generated) else from_sqlglot(s.type) for s in typed.selects]
        except _SQLGLOT_LIMITS:
            types = [None] * len(qualified.selects)
        names, certain = self.spark_names(qualified)
        return Resolved(qualified, tuple(Column(n, t) for n, t in zip(names, types)), certain)

    def spark_names(self, qualified: exp.Query) -> tuple[list[str], bool]:
        """Output names as Spark will spell them: as written in the query, as the input spells
        them where a star chose them, as Spark names an unaliased expression (sql/spark_names);
        and whether each of them is sure."""
        spelt = {c.name.lower(): c.name for cols in self.inputs.values() for c in cols}
        names = [spelt.get(s.alias_or_name.lower(), s.alias_or_name) for s in qualified.selects]
        written = self.query.selects
        certain = True
        if len(written) == len(names) and not any(_is_star(s) for s in written):
            for k, select in enumerate(written):
                if isinstance(select, (exp.Alias, exp.Column)) and select.alias_or_name:
                    names[k] = select.alias_or_name
                    continue
                computed = output_name(select, self.text)
                if computed is None:
                    certain = False
                else:
                    names[k] = computed
        else:
            certain = all(isinstance(s, (exp.Alias, exp.Column)) and s.alias_or_name for s in written)
        return names, certain

    # -- what is wrong, when it is the query's fault ------------------------------------------

    def all_bound(self, qualified: exp.Expression) -> bool:
        """Raise for a column the user got wrong; False when sqlglot merely could not bind one
        (the query is then left to Spark); True when every column is bound."""
        for scope in traverse_scope(qualified):
            if not isinstance(scope.expression, exp.Select):
                continue
            if scope.external_columns and not scope.is_correlated_subquery and not scope.pivots:
                column = scope.external_columns[0]
                if column.table:
                    self.unknown_qualifier(column, scope)
                else:
                    self.unknown_or_ambiguous(column, scope)
                return False
            for column in scope.unqualified_columns:
                self.unknown_or_ambiguous(column, scope)
                return False
        return True

    def written(self, column: exp.Column) -> tuple[str, str]:
        """(qualifier, name) of a column as the user wrote them."""
        def spelt(ident: exp.Expression | None) -> str:
            if not isinstance(ident, exp.Identifier):
                return ""
            return self.spelling.get(ident.meta.get("start"), ident.name)
        return spelt(column.args.get("table")), spelt(column.this)

    def sources(self, scope: Scope) -> dict[str, list[str]] | None:
        """Each source of a scope with its column names; None when one of them is not a plain
        input or a derived table with known columns (then nothing can be proved of a column)."""
        if scope.expression.args.get("laterals") or scope.expression.find(
                exp.Lambda, exp.Lateral, exp.Unnest, exp.Pivot):
            return None
        out: dict[str, list[str]] = {}
        for alias, (_, inner) in scope.selected_sources.items():
            if isinstance(inner, exp.Table):
                cols = next((c for n, c in self.inputs.items() if n.lower() == inner.name.lower()), None)
                if cols is None:
                    return None
                out[alias] = [c.name for c in cols]
            elif isinstance(inner, Scope) and isinstance(inner.expression, (exp.Select, exp.SetOperation)):
                if any(_is_star(s) for s in inner.expression.selects):
                    return None
                out[alias] = [s.alias_or_name for s in inner.expression.selects]
            else:
                return None
        return out

    def unknown_or_ambiguous(self, column: exp.Column, scope: Scope) -> None:
        sources = self.sources(scope)
        if sources is None:
            return
        name = self.written(column)[1]
        having = [a for a, cols in sources.items() if any(c.lower() == name.lower() for c in cols)]
        if len(having) > 1:
            raise ValidationError(f"column '{name}' is ambiguous: {', '.join(having)} both have it",
                                  file=self.file, line=_line(column),
                                  hint=f"qualify it, e.g. {having[0]}.{name}")
        if not having:
            every = sorted({c for cols in sources.values() for c in cols})
            raise ValidationError(f"unknown column '{name}'", file=self.file, line=_line(column),
                                  hint=suggest(name, every) or _listing(every))

    def unknown_qualifier(self, column: exp.Column, scope: Scope) -> None:
        sources = self.sources(scope)
        if sources is None:
            return
        owner, name = self.written(column)
        cols = next((c for a, c in sources.items() if a.lower() == owner.lower()), None)
        if cols is None:
            if any(owner.lower() == c.lower() for cs in sources.values() for c in cs):
                return        # a struct column's field: Spark reads it, sqlglot could not
            raise ValidationError(f"unknown table or alias '{owner}' in {owner}.{name}", file=self.file,
                                  line=_line(column), hint=suggest(owner, sources)
                                  or _listing(sorted(sources), "names in scope"))
        raise ValidationError(f"unknown column '{name}' of '{owner}'", file=self.file,
                              line=_line(column), hint=suggest(name, cols) or _listing(cols))

    def gave_up(self, message: str) -> None:
        """qualify itself gave up on a column: report it only when no input has that column and
        nothing in the query could define it."""
        match = _GAVE_UP.search(message)
        if not match:
            return
        name = match.group(1) or match.group(2)
        every = sorted({c.name for cols in self.inputs.values() for c in cols})
        query = self.query
        defined = {n.alias.lower() for n in query.find_all(exp.Alias)} | \
                  {i.name.lower() for n in query.find_all(exp.TableAlias) for i in n.columns}
        if name.lower() in {c.lower() for c in every} | defined or query.find(exp.Lambda, exp.Lateral):
            return
        column = next((c for c in query.find_all(exp.Column) if c.name.lower() == name.lower()), None)
        line, what = None, f"'{name}'"
        if column is not None:      # the user's own query: names as written
            name, line, what = column.name, _line(column), f"'{column.name}'"
            tables = {t.alias_or_name.lower(): t.name.lower() for t in query.find_all(exp.Table)}
            if column.table and tables.get(column.table.lower()) in self.inputs:
                every = [c.name for c in self.inputs[tables[column.table.lower()]]]
                what += f" of '{column.table}'"
        raise ValidationError(f"unknown column {what}", file=self.file, line=line,
                              hint=suggest(name, every) or _listing(every))


def _line(column: exp.Column) -> int | None:
    return column.this.meta.get("line") if isinstance(column.this, exp.Identifier) else None


def _reads(select: exp.Expression, aliases: set[str]) -> bool:
    return any(c.table.lower() in aliases for c in select.find_all(exp.Column))


def _is_star(select: exp.Expression) -> bool:
    return isinstance(select, exp.Star) or (isinstance(select, exp.Column) and select.is_star)


def _listing(names: list[str], what: str = "columns") -> str:
    shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    return f"{what}: {shown}" if names else "the inputs have no columns"
