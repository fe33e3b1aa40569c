"""The subqueries and keyed_joins rules as explain shows them: the rewritten construct's row (as the
user wrote it, at its line, with how its join refreshes), and the reason of what stays FULL."""

from __future__ import annotations

import pytest

from dtcli.model import Column
from dtcli.sql.analysis import analyze
from dtcli.sql.parse import parse_sql, the_query
from dtcli.sql.resolve import resolve

INPUTS = {"a": (Column("k", "int"), Column("g", "string"), Column("v", "int")),
          "b": (Column("k", "int"), Column("g", "string"), Column("w", "int"))}


def explain(sql: str):
    parsed = parse_sql(sql, "spark")
    resolved = resolve(the_query(parsed), INPUTS, "spark").normalized()
    return analyze(parsed, resolved.query, resolved.rewrites), resolved


def test_a_rewritten_subquery_is_a_row_at_its_line_saying_how_it_refreshes():
    analysis, resolved = explain("SELECT a.k\nFROM a\nWHERE a.v > 1\n  AND NOT EXISTS (SELECT 1 FROM b\n"
                                 "    WHERE b.k = a.k AND b.w <> a.v)")
    assert analysis.incremental, analysis.blockers
    row = next(op for op in analysis.operators if op.operator.startswith("NOT EXISTS subquery"))
    assert row.line == 4 and row.incremental
    assert row.strategy == "recompute the left rows of the join keys either side's changes touch"
    assert "LEFT ANTI JOIN" in row.operator
    assert [r.construct for r in resolved.rewrites] == ["NOT EXISTS subquery"]
    assert "LEFT ANTI JOIN" in resolved.query.sql(dialect="spark")


@pytest.mark.parametrize("sql, reason", [
    ("SELECT a.k FROM a WHERE EXISTS (SELECT b.k FROM b WHERE b.k = a.k GROUP BY b.k)",
     "a correlated subquery that aggregates"),
    ("SELECT a.k FROM a WHERE a.v > (SELECT MAX(b.w) FROM b WHERE b.k < a.k)",
     "correlation is made of equalities"),
    ("SELECT a.k FROM a WHERE (a.k, a.g) NOT IN (SELECT b.k, b.g FROM b)",
     "NOT IN over several columns"),
    ("SELECT a.k FROM a WHERE a.v > 1 OR a.k IN (SELECT b.k FROM b)",
     "an IN subquery is rewritten only as a conjunct of WHERE"),
    ("SELECT a.k FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND EXISTS "
     "(SELECT 1 FROM b AS c WHERE c.g = a.g))",
     "a column of a query further out"),
])
def test_a_subquery_left_as_written_is_full_with_the_rules_reason(sql, reason):
    analysis, _ = explain(sql)
    assert not analysis.incremental
    said = [c for op in analysis.operators if not op.incremental for c in op.considerations]
    assert any(reason in c for c in said), said


def test_two_outer_joins_are_nested_into_one_keyed_join_per_block():
    analysis, resolved = explain("SELECT a.k, b.w, c.v FROM a LEFT JOIN b ON a.k = b.k "
                                 "LEFT JOIN a AS c ON b.w = c.v")
    assert analysis.incremental, analysis.blockers
    text = resolved.query.sql(dialect="spark")
    assert text.startswith("SELECT __dt_j1.k AS k, __dt_j1.w AS w, c.v AS v FROM (SELECT a.k AS k, "
                           "b.w AS w FROM a AS a LEFT JOIN b AS b ON a.k = b.k) AS __dt_j1 LEFT JOIN")
    assert any(op.operator.startswith("LEFT OUTER JOIN (nested)") for op in analysis.operators)
