"""A table's kind, looked up once from what its file holds (`kind_of_statement`, by the loader)
or from its TableDef (`kind_of`): the one place the two kinds are told apart."""

from __future__ import annotations

from dtcli.model import TableDef
from dtcli.planning.kinds.base import TableKind
from dtcli.planning.kinds.custom import CUSTOM
from dtcli.planning.kinds.query import QUERY
from dtcli.sql.parse import is_custom_statement

KINDS: dict[str, TableKind] = {kind.name: kind for kind in (QUERY, CUSTOM)}


def kind_of(table: TableDef) -> TableKind:
    return KINDS[table.kind]


def kind_of_statement(sql: str) -> TableKind:
    """A custom incremental statement (REFRESH USING, INSERT INTO SELF...) or a query."""
    return CUSTOM if is_custom_statement(sql) else QUERY
