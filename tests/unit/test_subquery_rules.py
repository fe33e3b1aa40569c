"""The subqueries and keyed_joins rules as explain shows them: the rewritten construct's row (as the
user wrote it, at its line, with how its join refreshes), and the reason of what stays FULL."""

from __future__ import annotations

import pytest

from dtcli.sql.incremental_rewrite import unsupported_reason
from tests.sql_checks import AB, analysed

explain = analysed


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
    ("SELECT a.k FROM a WHERE EXISTS (SELECT b.k FROM b WHERE b.k < a.k GROUP BY b.k)",
     "a correlated subquery that aggregates"),
    ("SELECT a.k FROM a WHERE a.v > (SELECT MAX(b.w) FROM b WHERE b.k < a.k)",
     "correlation is made of equalities"),
    ("SELECT a.k FROM a WHERE (a.k, a.g) NOT IN (SELECT b.k, b.g FROM b)",
     "NOT IN over several columns"),
    ("SELECT a.k FROM a WHERE a.v > 1 OR a.k IN (SELECT b.k FROM b WHERE b.w < a.v)",
     "a correlated IN under OR or in the SELECT list is rewritten when its correlation is made "
     "of equalities"),
    ("SELECT a.k, (a.k, a.g) IN (SELECT b.k, b.g FROM b) AS f FROM a",
     "an IN subquery over several columns is rewritten only as a conjunct of WHERE"),
    ("SELECT a.k FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND EXISTS "
     "(SELECT 1 FROM b AS c WHERE c.g = a.g))",
     "a column of a query further out"),
    # a quantified comparison (Snowflake's; Spark has none) is no scalar value: it was once
    # rewritten as one (its set's one value, more than one row an error), a different query
    ("SELECT a.k FROM a WHERE a.v > ANY (SELECT b.w FROM b)", "a comparison with ANY (SELECT ...)"),
    ("SELECT a.k FROM a WHERE a.v > 1 OR a.k = ANY (SELECT b.k FROM b)", "a comparison with ANY"),
    ("SELECT a.k FROM a WHERE a.v > ALL (SELECT b.w FROM b WHERE b.k = a.k)", "a comparison with ALL"),
])
def test_a_subquery_left_as_written_is_full_with_the_rules_reason(sql, reason):
    analysis, resolved = explain(sql)
    assert not analysis.incremental
    said = [c for op in analysis.operators if not op.incremental for c in op.considerations]
    assert any(reason in c for c in said), said
    # and the change compiler refuses it too: explain and the refresh agree
    assert unsupported_reason(resolved.query, list(AB))


@pytest.mark.parametrize("sql", [
    # a block recomputed whole (a global aggregate) never visits the derived table's block
    "SELECT COUNT(*) AS n FROM (SELECT a.k FROM a WHERE a.v > (SELECT MAX(b.w) FROM b "
    "WHERE b.k < a.k)) AS t",
    "SELECT t.k FROM (SELECT a.k FROM a WHERE a.v > 1 OR a.k IN (SELECT b.k FROM b "
    "WHERE b.w < a.v)) AS t",
])
def test_the_compiler_refuses_a_subquery_left_in_a_derived_table(sql):
    analysis, resolved = explain(sql)
    assert not analysis.incremental
    assert unsupported_reason(resolved.query, list(AB)) == (
        "a subquery outside FROM cannot be refreshed incrementally")


def test_two_outer_joins_are_nested_into_one_keyed_join_per_block():
    analysis, resolved = explain("SELECT a.k, b.w, c.v FROM a LEFT JOIN b ON a.k = b.k "
                                 "LEFT JOIN a AS c ON b.w = c.v")
    assert analysis.incremental, analysis.blockers
    text = resolved.query.sql(dialect="spark")
    assert text.startswith("SELECT __dt_j1.k AS k, __dt_j1.w AS w, c.v AS v FROM (SELECT a.k AS k, "
                           "b.w AS w FROM a AS a LEFT JOIN b AS b ON a.k = b.k) AS __dt_j1 LEFT JOIN")
    assert any(op.operator.startswith("LEFT OUTER JOIN (nested)") for op in analysis.operators)


def test_an_in_under_or_is_a_left_join_of_the_sets_values_with_its_flags_where_nulls_matter():
    analysis, resolved = explain("SELECT a.k FROM a WHERE a.v > 1\n  OR a.k IN (SELECT b.k FROM b)")
    assert analysis.incremental, analysis.blockers
    row = next(op for op in analysis.operators if op.operator.startswith("IN subquery"))
    assert row.line == 2 and row.incremental and "LEFT JOIN (its distinct values)" in row.operator
    assert row.strategy == "recompute the join keys touched by either side's changes"
    # only TRUE keeps a row in WHERE: no flags
    assert "__dt_empty" not in resolved.query.sql(dialect="spark")
    # NOT IN's answer (TRUE or FALSE, as Spark's null-aware existence join gives it) reads the
    # set's flags too
    analysis, resolved = explain("SELECT a.k, a.v NOT IN (SELECT b.w FROM b) AS f FROM a")
    assert analysis.incremental, analysis.blockers
    row = next(op for op in analysis.operators if op.operator.startswith("NOT IN subquery"))
    assert any("whether the set is empty or holds a NULL" in c for c in row.considerations)
    assert "__dt_empty" in resolved.query.sql(dialect="spark")


def test_a_correlation_in_every_branch_of_an_or_is_one_equality():
    analysis, resolved = explain("SELECT a.k FROM a WHERE (SELECT COUNT(*) FROM b WHERE "
                                 "(b.k = a.k AND b.w > 1) OR (b.k = a.k AND b.g = 'x')) > 0")
    assert analysis.incremental, analysis.blockers
    text = resolved.query.sql(dialect="spark")
    assert "WHERE (b.w > 1 OR b.g = 'x') GROUP BY b.k) AS __dt_sq1 ON __dt_sq1.k = a.k" in text, text


def test_an_exists_under_or_with_an_inequality_over_an_outer_join_looks_up_the_from_clause():
    """FUZZ-FINDINGS seed 911 (TPC-H Q21's `<>` under OR, in a block with a FULL JOIN): its
    answer is looked up per distinct (t1.k, t2.v) of the block's own FROM clause, so a row the
    outer join pads with NULLs finds its values there too (DuckDB: tests/fuzz FOUND 911)."""
    analysis, resolved = explain("SELECT t1.w AS c0, t2.g AS c1 FROM b AS t1 FULL OUTER JOIN a AS t2 "
                                 "ON t1.w = t2.k WHERE (EXISTS (SELECT 1 FROM a AS t3 WHERE "
                                 "t3.v = t1.k AND t3.k <> t2.v) OR t1.g IN ('x', 'y'))")
    assert analysis.incremental, analysis.blockers
    text = resolved.query.sql(dialect="spark")
    # the lookup: DISTINCT values of the FROM clause (outer join included) the subquery holds for,
    # joined null-safely (keyed_joins then nests the block's outer and semi joins)
    assert text.count("FROM b AS t1 FULL OUTER JOIN a AS t2 ON t1.w = t2.k") == 2, text
    assert "SELECT DISTINCT" in text and "LEFT SEMI JOIN" in text, text
    assert text.count("IS NOT DISTINCT FROM") == 2, text
    assert unsupported_reason(resolved.query, list(AB)) is None


def test_a_cte_read_by_the_subquery_of_a_lifted_having_stays_in_scope():
    """TPC-DS q24: HAVING compares with a scalar subquery over the CTE the block groups; the
    grouped block becomes a derived table and the WITH stays on the block around it, where the
    joined subquery reads the CTE too."""
    analysis, resolved = explain("WITH s AS (SELECT a.g, SUM(a.v) AS t FROM a GROUP BY a.g) "
                                 "SELECT s.g, SUM(s.t) AS p FROM s GROUP BY s.g "
                                 "HAVING SUM(s.t) > (SELECT 0.05 * AVG(s.t) FROM s)")
    assert analysis.incremental, analysis.blockers
    query = resolved.query
    assert query.args.get("with_") is not None or query.args.get("with") is not None
    assert unsupported_reason(query, list(AB)) is None
