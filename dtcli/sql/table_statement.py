"""A table file's statement, parsed once, with every input it reads resolved to the project's
DTs and sources: a query (`read_query`) or a custom incremental statement (`read_custom`). The
loader picks the reader by the table's kind (dtcli/planning/kinds)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dtcli.errors import ValidationError
from dtcli.sql.custom import SELF_VIEW, CustomStatement, changes_view, parse_custom, split_changes_name
from dtcli.sql.parse import (
    ParsedSQL,
    is_cte_ref,
    parse_sql,
    point_table_at,
    rename_tables,
    resolve_input,
    table_refs,
    the_query,
    to_spark,
)


@dataclass
class TableStatement:
    """What a table file's SQL gives its TableDef: the statement, inputs by logical name."""

    spark_sql: str                # in Spark SQL, reading inputs by their logical names
    inputs: list[str]             # in order of appearance
    input_lines: dict[str, int]   # the line each input first appears on
    parsed: ParsedSQL
    query: exp.Expression         # the query (or statement) with inputs renamed
    custom: CustomStatement | None = None


def read_query(sql: str, name: str, file: str, dialect: str, known: dict[str, str], *,
               quote: bool) -> TableStatement:
    """A query table's one query, its inputs renamed to their logical names (`quote`: as
    rename_tables quotes them)."""
    parsed = parse_sql(sql, dialect, file)
    query = the_query(parsed, file)
    inputs: list[str] = []
    input_lines: dict[str, int] = {}
    mapping: dict[str, str] = {}
    for ref, line in table_refs(query):
        resolved = resolve_input(known, ref, file, line)
        if resolved == name:
            raise ValidationError(f"table '{name}' reads itself", file=file, line=line,
                                  hint="a dynamic table cannot read its own output")
        mapping[ref] = resolved
        if resolved not in inputs:
            inputs.append(resolved)
            input_lines[resolved] = line or 1
    logical = rename_tables(query, mapping, quote=quote)
    return TableStatement(to_spark(logical), inputs, input_lines, parsed, logical)


def read_custom(sql: str, name: str, file: str, dialect: str, known: dict[str, str], *,
                quote: bool = True) -> TableStatement:
    """A custom incremental statement with every input named by its logical name (CHANGES()
    inputs by their change views). `quote` is a query's concern: a statement's inputs are
    renamed to views whose names need no quoting."""
    statement = parse_custom(sql, dialect, file, name)
    tree = statement.tree
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    inputs: list[str] = []
    lines: dict[str, int] = {}
    for table in list(tree.find_all(exp.Table)):
        if table is target or not table.name or isinstance(table.this, exp.Func) or is_cte_ref(table) \
                or table.name == SELF_VIEW:
            continue
        split = split_changes_name(table.name)
        base = split[1] if split else table.name
        full = ".".join(p for p in (table.catalog, table.db, base) if p).lower()
        line = table.this.meta.get("line")
        if split:
            ref = next((c for c in statement.changes if c.name == full and c.mode == split[0]), None)
            line = ref.line if ref is not None else line
        resolved = resolve_input(known, full, file, line)
        if resolved == name:
            raise ValidationError(f"REFRESH USING names {name} itself", file=file, line=line,
                                  hint="inside REFRESH USING the table is SELF: write FROM SELF AS cur")
        if resolved not in inputs:
            inputs.append(resolved)
            lines[resolved] = line or 1
        alias = table.alias or (base if (table.db or base.lower() != resolved) or split else None)
        view = changes_view(resolved, split[0]) if split else resolved
        point_table_at(table, exp.to_identifier(view), alias)
        if split:
            entry = (resolved, split[0], line or 1)
            if entry[:2] not in [c[:2] for c in statement.change_inputs]:
                statement.change_inputs.append(entry)
        elif resolved not in statement.snapshot_inputs:
            statement.snapshot_inputs.append(resolved)
    return TableStatement(to_spark(statement.tree), inputs, lines, statement.parsed, statement.tree, statement)
