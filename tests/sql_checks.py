"""A query as a checked project has it, without a project: parsed, bound to its inputs' columns,
rewritten by the rules and analysed (the unit tests of the rules and of explain's rows)."""

from __future__ import annotations

from dtcli.model import Column
from dtcli.sql.analysis import analyze
from dtcli.sql.parse import parse_sql, the_query
from dtcli.sql.resolve import resolve

AB = {"a": (Column("k", "INT"), Column("g", "STRING"), Column("v", "INT")),
      "b": (Column("k", "INT"), Column("g", "STRING"), Column("w", "INT"))}


def analysed(sql: str, inputs=AB, dialect: str = "spark"):
    """(analysis, resolved query)."""
    parsed = parse_sql(sql, dialect)
    resolved = resolve(the_query(parsed), inputs, dialect).normalized()
    return analyze(parsed, resolved.query, resolved.rewrites), resolved
