"""Parsing table SQL with sqlglot, in the project's dialect, with errors that name the line."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from dtcli.errors import ValidationError

_CUSTOM = re.compile(r"^\s*(REFRESH\s+USING\b|INSERT\s+INTO\s+SELF\b|MERGE\s+INTO\s+SELF\b)", re.I)
_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)


def statement_kind(sql: str) -> str:
    """'custom' for REFRESH USING / INSERT INTO SELF tables, else 'query'."""
    body = _COMMENTS.sub(lambda m: "\n" * m.group(0).count("\n"), sql)
    return "custom" if _CUSTOM.match(body) else "query"


def parse_query(sql: str, dialect: str, file: str) -> exp.Query:
    """Parse one SELECT/WITH query; anything else is a validation error."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except ParseError as err:
        first = err.errors[0] if err.errors else {}
        msg = first.get("description") or str(err).splitlines()[0]
        near = (first.get("highlight") or "").strip()
        raise ValidationError(f"SQL syntax error: {msg}" + (f" near '{near}'" if near else ""),
                              file=file, line=first.get("line"),
                              hint="fix the SQL at that line") from None
    except TokenError as err:
        raise ValidationError(f"SQL syntax error: {err}", file=file) from None
    except (IndexError, ValueError, TypeError) as err:  # sqlglot can crash on some malformed calls
        raise ValidationError(f"SQL syntax error: {err}", file=file, hint="check function calls and their arguments") from None
    if not statements:
        raise ValidationError("the file holds no query", file=file,
                              hint="write one SELECT ... or WITH ... query")
    if len(statements) > 1:
        raise ValidationError("the file holds more than one statement", file=file,
                              line=_line(statements[1]), hint="one query per table file")
    query = statements[0]
    if not isinstance(query, exp.Query):
        raise ValidationError(f"expected a SELECT or WITH query, found {query.key.upper()}",
                              file=file, line=_line(query),
                              hint="a dynamic table is defined by one query")
    return query


def to_spark(query: exp.Expression) -> str:
    return query.sql(dialect="spark", pretty=True)


def _line(node: exp.Expression) -> int | None:
    for ident in node.find_all(exp.Identifier):
        if "line" in ident.meta:
            return ident.meta["line"]
    return None


def table_refs(query: exp.Expression) -> list[tuple[str, int | None]]:
    """Names of the tables a query reads, with their lines, skipping CTE names."""
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    refs: list[tuple[str, int | None]] = []
    for table in query.find_all(exp.Table):
        if not table.name or isinstance(table.this, exp.Func):
            continue  # table-valued functions, VALUES and the like
        name = table.name.lower()
        if not table.db and name in ctes:
            continue
        full = ".".join(p for p in (table.catalog, table.db, table.name) if p).lower()
        refs.append((full, table.this.meta.get("line")))
    return refs


def rename_tables(query: exp.Expression, mapping: dict[str, str]) -> exp.Expression:
    """Point qualified/aliased references at the logical input names the engine binds as views."""
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    query = query.copy()
    for table in list(query.find_all(exp.Table)):
        if not table.name or isinstance(table.this, exp.Func):
            continue
        full = ".".join(p for p in (table.catalog, table.db, table.name) if p).lower()
        if not table.db and full in ctes:
            continue
        target = mapping.get(full)
        if target is None:
            continue
        alias = table.alias or (table.name if (table.db or table.name.lower() != target) else None)
        new = exp.to_table(f"`{target}`", dialect="spark")
        if alias:
            new.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
        table.replace(new)
    return query
