"""A custom incremental table file: its statement parsed and its inputs resolved to the
project's DTs and sources, as a query table's are (see loader.py)."""

from __future__ import annotations

from sqlglot import exp

from dtcli.errors import ValidationError
from dtcli.sql.custom import SELF_VIEW, CustomStatement, changes_view, parse_custom, split_changes_name
from dtcli.sql.parse import is_cte_ref, point_table_at, resolve_input


def load_custom(sql: str, name: str, file: str, dialect: str, known: dict[str, str]
                ) -> tuple[CustomStatement, list[str], dict[str, int]]:
    """The statement with every input named by its logical name (CHANGES() inputs by their
    change views), the inputs in order of appearance, and the line each first appears on."""
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
    return statement, inputs, lines
