"""Parsing table SQL with sqlglot, once, in the project's dialect, with errors that name the line.

A table file is tokenized and parsed exactly once per command (`parse_sql`); the tokens are kept
beside the tree because the refresh analysis maps constructs back to the keywords that spell
them, and both stay in the dialect the user wrote so every line number is a line of the file.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from sqlglot import Dialect, exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token

from dtcli.errors import ValidationError

_CUSTOM = re.compile(r"^\s*(REFRESH\s+USING\b|INSERT\s+(INTO|OVERWRITE)\b|MERGE\s+INTO\b)", re.I)
_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)
_SAFE_NAME = re.compile(r"[a-z_][a-z0-9_]*")

# sqlglot reports what it cannot parse natively (and falls back to a Command) on its logger;
# dt turns that into its own error, so the warning must not reach the terminal as well.
logging.getLogger("sqlglot").setLevel(logging.ERROR)


_MISSING_PART = re.compile(r"Required keyword: '\w+' missing for <class")


@dataclass
class ParsedSQL:
    """One file's SQL: its text, tokens and statements, all in the file's own dialect."""

    text: str
    dialect: str
    tokens: list[Token]
    statements: list[exp.Expression]


def is_custom_statement(sql: str) -> bool:
    """Whether a table file holds a custom incremental statement (REFRESH USING, INSERT INTO
    SELF, MERGE INTO SELF) rather than a query."""
    body = _COMMENTS.sub(lambda m: "\n" * m.group(0).count("\n"), sql)
    return bool(_CUSTOM.match(body))


def parse_sql(text: str, dialect: str, file: str | None = None) -> ParsedSQL:
    """Tokenize and parse `text`; a syntax error names the file and line."""
    grammar = Dialect.get_or_raise(dialect)
    try:
        tokens = grammar.tokenize(text)
        statements = [s for s in grammar.parser().parse(tokens, text) if s is not None]
    except ParseError as err:
        first = err.errors[0] if err.errors else {}
        msg = first.get("description") or str(err).splitlines()[0]
        if _MISSING_PART.match(msg):
            # sqlglot's "Required keyword: 'expression' missing for <class ...GT>" names its classes
            msg = "the expression is incomplete"
        near = (first.get("highlight") or "").strip()
        raise ValidationError(f"SQL syntax error: {msg}" + (f" near '{near}'" if near else ""),
                              file=file, line=first.get("line"),
                              hint="fix the SQL at that line") from None
    except TokenError as err:
        raise ValidationError(f"SQL syntax error: {err}", file=file) from None
    except (IndexError, KeyError, TypeError, ValueError) as err:
        # sqlglot's function builders can trip over wrong argument counts (map(a)).
        raise ValidationError(f"SQL cannot be parsed: {err}", file=file,
                              hint="check function calls and their arguments") from None
    return ParsedSQL(text, dialect, tokens, statements)


def the_query(parsed: ParsedSQL, file: str | None = None) -> exp.Query:
    """The one SELECT/WITH query of a parsed table file; anything else is a validation error."""
    statements = parsed.statements
    if not statements:
        raise ValidationError("the file holds no query", file=file,
                              hint="write one SELECT ... or WITH ... query")
    if len(statements) > 1:
        raise ValidationError("the file holds more than one statement", file=file,
                              line=line_of(statements[1]), hint="one query per table file")
    query = statements[0]
    if not isinstance(query, exp.Query):
        raise ValidationError(f"expected a SELECT or WITH query, found {query.key.upper()}",
                              file=file, line=line_of(query),
                              hint="a dynamic table is defined by one query")
    return query


def to_spark(query: exp.Expression) -> str:
    return query.sql(dialect="spark", pretty=True)


def line_of(node: exp.Expression) -> int | None:
    """The first line a node's text is on, when sqlglot recorded one."""
    for ident in node.walk():
        if ident._meta and "line" in ident._meta:
            return ident._meta["line"]
    return None


def is_cte_ref(table: exp.Table) -> bool:
    """Whether an unqualified table name means a CTE in scope. A CTE's body sees only the CTEs
    before it (all of them, itself included, under WITH RECURSIVE), so in
    `WITH orders AS (SELECT ... FROM orders) SELECT ... FROM orders` the inner `orders` is the
    table and the outer one the CTE."""
    if table.args.get("db") or table.args.get("catalog"):
        return False
    name = table.name.lower()
    prev, node = table, table.parent
    while node is not None:
        if isinstance(node, exp.With):
            names = [c.alias_or_name.lower() for c in node.expressions]
            index = next((i for i, c in enumerate(node.expressions) if c is prev), len(names))
            if name in (names if node.args.get("recursive") else names[:index]):
                return True
        else:
            with_ = node.args.get("with_") or node.args.get("with")
            if isinstance(with_, exp.With) and prev is not with_ and \
                    name in {c.alias_or_name.lower() for c in with_.expressions}:
                return True
        prev, node = node, node.parent
    return False


def table_refs(query: exp.Expression) -> list[tuple[str, int | None]]:
    """Names of the tables a query reads, with their lines, skipping CTE names."""
    refs: list[tuple[str, int | None]] = []
    for table in query.find_all(exp.Table):
        if not table.name or isinstance(table.this, exp.Func):
            continue  # table-valued functions, VALUES and the like
        if is_cte_ref(table):
            continue
        full = ".".join(p for p in (table.catalog, table.db, table.name) if p).lower()
        refs.append((full, table.this.meta.get("line")))
    return refs


def rename_tables(query: exp.Expression, mapping: dict[str, str], *, quote: bool = True
                  ) -> exp.Expression:
    """Point qualified/aliased references at the logical input names the engine binds as views.

    The new name keeps the old one's position, so later analysis still finds its line. Dialects
    whose quoted names are case-sensitive (Snowflake) get them unquoted (`quote=False`), so that
    they resolve the way the user's own unquoted spelling did."""
    query = query.copy()
    for table in list(query.find_all(exp.Table)):
        if not table.name or isinstance(table.this, exp.Func) or is_cte_ref(table):
            continue
        full = ".".join(p for p in (table.catalog, table.db, table.name) if p).lower()
        target = mapping.get(full)
        if target is None:
            continue
        alias = table.alias or (table.name if (table.db or table.name.lower() != target) else None)
        point_table_at(table, exp.to_identifier(target, quoted=quote or not _SAFE_NAME.fullmatch(target)), alias)
    return query


def point_table_at(table: exp.Table, ident: exp.Identifier, alias: str | None) -> None:
    """Rename a table reference in place, keeping its position (for lines) and, when given, the
    name the query used for it as an alias. Only the name changes: PIVOT, TABLESAMPLE, hints
    and the like stay on the table."""
    ident.meta.update(table.this.meta)
    table.set("this", ident)
    table.set("db", None)
    table.set("catalog", None)
    if alias and not table.alias:
        table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))


def resolve_input(known: dict[str, str], ref: str, file: str, line: int | None) -> str:
    """The project name (source, seed or DT) a table reference reads; unknown: an error at the
    user's line with the closest name."""
    from dtcli.errors import suggest

    resolved = known.get(ref) or known.get(ref.split(".")[-1])
    if resolved is None:
        raise ValidationError(f"unknown table '{ref}'", file=file, line=line,
                              hint=suggest(ref.split(".")[-1], known) or
                              "declare it under sources: in dt_project.yml or add tables/<name>.sql")
    return resolved
