"""Static refresh-mode analysis of a dynamic table's query (no JVM)."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from dtcli.errors import ValidationError
from dtcli.sql.analysis import OperatorInfo, QueryAnalysis, analyze
from dtcli.sql.functions import SPARK_BUILTINS
from dtcli.sql.parse import parse_sql


def analyze_query(sql: str) -> QueryAnalysis:
    """The analysis of one Spark SQL query's text, as a table file's one parse gives it."""
    parsed = parse_sql(sql, "spark")
    if len(parsed.statements) != 1 or not isinstance(parsed.statements[0], exp.Query):
        raise ValidationError("a dynamic table is defined by exactly one SELECT or WITH query")
    return analyze(parsed, parsed.statements[0])


FULL = "not incremental: forces FULL"


def ops(sql: str) -> dict[str, OperatorInfo]:
    """Operators by display name (first occurrence)."""
    out: dict[str, OperatorInfo] = {}
    for op in analyze_query(sql).operators:
        out.setdefault(op.operator, op)
    return out


def names(sql: str) -> list[str]:
    return [op.operator for op in analyze_query(sql).operators]


def assert_full(sql: str, fragment: str, line: int | None = None) -> QueryAnalysis:
    a = analyze_query(sql)
    assert not a.incremental, a
    assert a.reason == a.blockers[0]
    assert any(fragment in b for b in a.blockers), a.blockers
    if line is not None:
        hit = next(b for b in a.blockers if fragment in b)
        assert f"at line {line} " in hit, hit
    return a


def assert_incremental(sql: str) -> QueryAnalysis:
    a = analyze_query(sql)
    assert a.incremental, a.blockers
    assert a.reason is None and a.blockers == ()
    assert all(op.incremental and op.strategy != FULL for op in a.operators)
    return a


# -- the incremental constructs -------------------------------------------------------------

def test_select_where_from_apply_to_changed_rows():
    a = assert_incremental("SELECT id, upper(name) AS n FROM orders WHERE amount > fee")
    assert [op.operator for op in a.operators] == ["FROM orders", "WHERE", "SELECT"]
    assert {op.strategy for op in a.operators} == {"apply to changed rows only"}
    assert all(op.considerations == () for op in a.operators)


def test_qualified_table_name_is_kept():
    assert "FROM db.orders" in names("SELECT * FROM db.orders")


def test_union_all_and_union_distinct():
    a = assert_incremental("SELECT a FROM t1 UNION ALL SELECT a FROM t2")
    assert ops("SELECT a FROM t1 UNION ALL SELECT a FROM t2")["UNION ALL"].strategy == \
        "union of each side's changes"
    assert names("SELECT a FROM t1 UNION ALL SELECT a FROM t2") == [
        "FROM t1", "SELECT", "UNION ALL", "FROM t2", "SELECT"]
    # UNION (distinct) is rewritten by sql/rules/set_operations once the columns are bound
    # (tests/unit/test_set_operations.py); a query left unbound keeps it, FULL, saying why
    a = assert_full("SELECT a FROM t1\nUNION\nSELECT a FROM t2", "UNION", line=2)
    union = next(op for op in a.operators if op.operator == "UNION")
    assert not union.incremental and "columns of every branch" in union.considerations[0]
    assert union.line == 2


def test_inner_cross_and_comma_joins():
    sql = ("SELECT * FROM orders o JOIN customers c ON o.customer_id = c.customer_id "
           "INNER JOIN items i ON i.order_id = o.id CROSS JOIN regions, nations")
    a = assert_incremental(sql)
    by = {op.operator: op for op in a.operators}
    for name in ("INNER JOIN customers", "INNER JOIN items", "CROSS JOIN regions",
                 "CROSS JOIN nations"):
        assert by[name].strategy == "ΔA ⋈ B_new + A_old ⋈ ΔB over pinned versions"
    assert "customer_id" in by["INNER JOIN customers"].considerations[0]
    assert "keep one side small" in by["CROSS JOIN regions"].considerations[0]


def test_comma_joins_on_an_equality_in_where_are_inner_joins_on_its_columns():
    """TPC-H's and TPC-DS's `FROM a, b WHERE a.k = b.k`: an inner join on k (explain said CROSS
    JOIN and advised keeping one side small), qualified or not; a comma join with no equality
    of its columns is still a cross join."""
    sql = ("SELECT o.id FROM orders o, customers c, items, regions r "
           "WHERE o.customer_id = c.customer_id AND item_order = order_key AND r.name = 'EU'")
    by = {op.operator: op for op in assert_incremental(sql).operators}
    assert "customer_id" in by["INNER JOIN customers"].considerations[0]
    assert "item_order, order_key" in by["INNER JOIN items"].considerations[0]
    assert "keep one side small" in by["CROSS JOIN regions"].considerations[0]
    strategy = "ΔA ⋈ B_new + A_old ⋈ ΔB over pinned versions"
    assert {by[n].strategy for n in ("INNER JOIN customers", "INNER JOIN items", "CROSS JOIN regions")} == {strategy}


@pytest.mark.parametrize("written, shown", [
    ("LEFT JOIN", "LEFT OUTER JOIN"), ("LEFT OUTER JOIN", "LEFT OUTER JOIN"),
    ("RIGHT JOIN", "RIGHT OUTER JOIN"), ("FULL OUTER JOIN", "FULL OUTER JOIN"),
    ("FULL JOIN", "FULL OUTER JOIN"),
])
def test_outer_joins_recompute_touched_keys(written, shown):
    sql = f"SELECT * FROM orders o {written} payments p ON o.id = p.order_id"
    assert_incremental(sql)
    op = ops(sql)[f"{shown} payments"]
    assert op.strategy == "recompute the join keys touched by either side's changes"
    advice = " ".join(op.considerations)
    assert "cluster" in advice and "order_id" in advice and "changes" in advice


def test_join_without_equality_is_flagged():
    op = ops("SELECT * FROM a JOIN b ON a.x > b.y")["INNER JOIN b"]
    assert op.incremental and "no equality" in op.considerations[0]
    # an outer join without one is keyed by its preserved side's columns: incremental, with the
    # advice; a FULL OUTER JOIN has no preserved side: FULL
    op = ops("SELECT * FROM a LEFT JOIN b ON a.x > b.y")["LEFT OUTER JOIN b"]
    assert op.incremental and "no equality" in op.considerations[0]
    op = ops("SELECT * FROM a FULL JOIN b ON a.x > b.y")["FULL OUTER JOIN b"]
    assert not op.incremental and "without an equality" in op.considerations[0]
    assert "no equality" in op.considerations[1]


def test_group_by_recomputes_changed_groups():
    a = assert_incremental("SELECT customer_id, sum(amount) AS total FROM orders "
                           "GROUP BY customer_id")
    op = ops("SELECT customer_id, sum(amount) FROM orders GROUP BY customer_id")[
        "GROUP BY customer_id"]
    assert op.strategy == "recompute the groups whose keys changed"
    assert op.considerations == ()
    assert [o.operator for o in a.operators] == ["FROM orders", "GROUP BY customer_id", "SELECT"]


def test_scalar_aggregate_recomputes_single_row():
    a = assert_incremental("SELECT count(*) AS n, sum(amount) AS total FROM orders")
    op = ops("SELECT count(*) AS n FROM orders")["SCALAR AGGREGATE"]
    assert op.strategy == "recompute the single row"
    assert "SCALAR AGGREGATE" in [o.operator for o in a.operators]


def test_window_aggregate_is_not_a_scalar_aggregate():
    assert "SCALAR AGGREGATE" not in names(
        "SELECT sum(x) OVER (PARTITION BY k) FROM t")


def test_distinct_is_incremental():
    op = ops("SELECT DISTINCT a, b FROM t")["DISTINCT"]
    assert op.incremental and op.considerations == ()
    assert "recompute" in op.strategy


def test_window_with_partition_by():
    sql = "SELECT customer_id, rank() OVER (PARTITION BY customer_id ORDER BY ts) AS r FROM t"
    a = assert_incremental(sql)
    op = ops(sql)["WINDOW rank() OVER (PARTITION BY customer_id)"]
    assert op.strategy == "recompute the partitions that changed"
    assert [o.operator for o in a.operators].index(op.operator) < \
        [o.operator for o in a.operators].index("SELECT")


def test_window_partition_key_need_not_be_an_output():
    assert_incremental("SELECT id, row_number() OVER (PARTITION BY region ORDER BY ts) rn FROM t")


def test_named_window_with_partition_by():
    assert_incremental("SELECT sum(x) OVER w FROM t WINDOW w AS (PARTITION BY c ORDER BY d)")


def test_qualify_over_partitioned_window():
    a = assert_incremental(
        "SELECT a, b FROM t QUALIFY row_number() OVER (PARTITION BY a ORDER BY b DESC) = 1")
    assert "QUALIFY" in [o.operator for o in a.operators]


@pytest.mark.parametrize("sql, shown", [
    ("SELECT o.id, item FROM orders o LATERAL VIEW explode(items) t AS item",
     "LATERAL VIEW explode(items)"),
    ("SELECT id, pos, v FROM t LATERAL VIEW posexplode(xs) p AS pos, v",
     "LATERAL VIEW posexplode(xs)"),
    ("SELECT id, v FROM t LATERAL VIEW OUTER explode(xs) p AS v",
     "LATERAL VIEW OUTER explode(xs)"),
    ("SELECT id, s.* FROM t LATERAL VIEW inline(structs) s", "LATERAL VIEW inline(structs)"),
    ("SELECT id, explode(items) AS item FROM t", "explode(items) in SELECT"),
    ("SELECT id, posexplode(items) FROM t", "posexplode(items) in SELECT"),
    ("SELECT * FROM t, LATERAL explode(t.items) AS x(i)", "LATERAL explode(t.items)"),
])
def test_generators_apply_to_changed_rows(sql, shown):
    assert_incremental(sql)
    assert ops(sql)[shown].strategy == "apply to changed rows"


def test_derived_tables_are_analysed_recursively():
    sql = """SELECT k, n
FROM (
  SELECT k, count(*) AS n
  FROM (SELECT k FROM events WHERE kind = 'click') e
  GROUP BY k
) agg"""
    a = assert_incremental(sql)
    got = [o.operator for o in a.operators]
    assert got[0] == "FROM (subquery) AS agg"
    assert "FROM events" in got and "GROUP BY k" in got and got.count("SELECT") == 3
    assert ops(sql)["FROM events"].line == 4


def test_nested_subquery_blocker_is_found():
    sql = "SELECT * FROM (\n  SELECT * FROM (\n    SELECT a FROM t\n    LIMIT 3) x) y"
    assert_full(sql, "LIMIT", line=4)


def test_cte_body_is_analysed():
    sql = """WITH active_customers AS (
  SELECT customer_id, count(*) AS n
  FROM orders
  GROUP BY customer_id
)
SELECT c.customer_id, a.n
FROM customers c
JOIN active_customers a ON a.customer_id = c.customer_id"""
    a = assert_incremental(sql)
    got = [o.operator for o in a.operators]
    assert got[:4] == ["WITH active_customers", "FROM orders", "GROUP BY customer_id", "SELECT"]
    assert "INNER JOIN active_customers" in got
    by = ops(sql)
    assert by["WITH active_customers"].line == 1
    assert by["GROUP BY customer_id"].line == 4


def test_cte_body_blocker_names_its_line():
    sql = "WITH x AS (\n  SELECT a\n  FROM t\n  WHERE my_udf(a)\n)\nSELECT * FROM x"
    assert_full(sql, "user-defined function my_udf()", line=4)


def test_cte_reference_reads_the_cte_changes():
    op = ops("WITH x AS (SELECT a FROM t) SELECT * FROM x")["FROM x"]
    assert "CTE" in op.strategy and op.incremental


def test_long_with_chain_gets_advice():
    sql = ("WITH a AS (SELECT 1 x FROM t), b AS (SELECT * FROM a), c AS (SELECT * FROM b), "
           "d AS (SELECT * FROM c) SELECT * FROM d")
    assert ops(sql)["WITH a"].considerations
    assert not ops("WITH a AS (SELECT 1 x FROM t) SELECT * FROM a")["WITH a"].considerations


def test_order_by_is_allowed_with_advice():
    a = assert_incremental("SELECT a FROM t\nORDER BY a")
    op = ops("SELECT a FROM t\nORDER BY a")["ORDER BY"]
    assert op.incremental and op.line == 2
    assert "order" in op.considerations[0]
    assert a.operators[-1].operator == "ORDER BY"


# -- the constructs that force FULL -----------------------------------------------------------

def test_limit_forces_full_with_line():
    sql = "SELECT a\nFROM t\nWHERE a > 1\nORDER BY a\n\n\nLIMIT 10"
    a = assert_full(sql, "LIMIT", line=7)
    assert a.reason == "LIMIT at line 7 cannot be refreshed incrementally"
    op = ops(sql)["LIMIT"]
    assert not op.incremental and op.strategy == FULL and op.line == 7 and op.considerations


def test_offset_and_tablesample_force_full():
    assert_full("SELECT a FROM t LIMIT 3 OFFSET 2", "OFFSET")
    assert_full("SELECT a FROM t\n  TABLESAMPLE (10 PERCENT)", "TABLESAMPLE", line=2)


@pytest.mark.parametrize("op_sql, shown", [
    ("EXCEPT", "EXCEPT"), ("EXCEPT ALL", "EXCEPT ALL"), ("MINUS", "EXCEPT"),
    ("INTERSECT", "INTERSECT"), ("INTERSECT ALL", "INTERSECT ALL"),
])
def test_except_and_intersect_unbound_force_full(op_sql, shown):
    """Unbound (its columns unknown), a set operation stays as written: FULL, saying why; bound,
    the rules rewrite it (tests/unit/test_set_operations.py)."""
    sql = f"SELECT a FROM t1\n{op_sql}\nSELECT a FROM t2"
    a = assert_full(sql, shown, line=2)
    assert a.reason == f"{shown} at line 2 cannot be refreshed incrementally"
    assert ops(sql)[shown].considerations


def test_exists_subquery():
    sql = "SELECT a FROM t\nWHERE EXISTS (SELECT 1 FROM u WHERE u.a = t.a)"
    assert_full(sql, "EXISTS subquery", line=2)
    assert ops(sql)["EXISTS subquery"].considerations
    assert_full("SELECT a FROM t WHERE NOT EXISTS (SELECT 1 FROM u)", "NOT EXISTS subquery")


def test_in_subquery():
    sql = "SELECT a\nFROM t\nWHERE a IN (\n  SELECT b FROM u)"
    assert_full(sql, "IN subquery", line=3)
    assert_full("SELECT a FROM t WHERE a NOT IN (SELECT b FROM u)", "NOT IN subquery")


def test_in_literal_list_is_fine():
    assert_incremental("SELECT a FROM t WHERE a IN (1, 2, 3)")


@pytest.mark.parametrize("sql, line", [
    ("SELECT a,\n  (SELECT max(x) FROM u) AS m\nFROM t", 2),
    ("SELECT a FROM t\nWHERE b > (SELECT avg(b) FROM t)", 2),
    ("SELECT a, sum(b) FROM t GROUP BY a\nHAVING sum(b) > (SELECT 10)", 2),
])
def test_scalar_subquery_outside_from(sql, line):
    assert_full(sql, "scalar subquery", line=line)


def test_lateral_subquery_forces_full_but_lateral_view_does_not():
    assert_full("SELECT * FROM a,\n  LATERAL (SELECT * FROM c WHERE c.x = a.x) l",
                "LATERAL subquery", line=2)
    assert_full("SELECT * FROM a JOIN LATERAL (SELECT * FROM c WHERE c.x = a.x) l ON true",
                "LATERAL subquery")
    assert_incremental("SELECT * FROM a LATERAL VIEW explode(a.xs) v AS x")


@pytest.mark.parametrize("call", [
    "rand()", "rand(42)", "random()", "randn()", "uuid()", "shuffle(xs)", "now()",
    "current_timestamp()", "current_timestamp", "current_date()", "current_date",
    "localtimestamp", "unix_timestamp()", "monotonically_increasing_id()",
    "spark_partition_id()", "input_file_name()", "current_user()",
    "reflect('java.util.UUID', 'randomUUID')", "uniform(0, 10)",
])
def test_nondeterministic_functions_force_full(call):
    a = assert_full(f"SELECT a,\n  {call} AS v\nFROM t", "nondeterministic function", line=2)
    assert any(o.operator.startswith("nondeterministic function") and not o.incremental
               for o in a.operators)


def test_nondeterministic_in_where_names_function():
    a = assert_full("SELECT a FROM t\nWHERE rand() < 0.1", "rand()", line=2)
    assert a.reason == "nondeterministic function rand() at line 2 cannot be refreshed " \
        "incrementally"


def test_unix_timestamp_with_argument_is_deterministic():
    assert_incremental("SELECT unix_timestamp(ts) AS u, to_date(ts) d FROM t")


@pytest.mark.parametrize("call", [
    "upper(a)", "coalesce(a, b)", "date_trunc('day', ts)", "nvl(a, 1)",
    "get_json_object(j, '$.x')", "pmod(a, 3)", "xxhash64(a)", "make_date(2020, 1, 1)",
    "concat_ws('-', a, b)", "regexp_extract(s, 'a(b)', 1)", "from_json(j, 'a INT')",
    "transform(xs, x -> x + 1)", "named_struct('a', a)", "format_number(a, 2)",
    "timestamp_seconds(a)", "try_to_timestamp(s)", "isnotnull(a)",
])
def test_builtins_are_not_udfs(call):
    assert_incremental(f"SELECT {call} AS v FROM t")


def test_no_spark_builtin_is_taken_for_a_udf():
    # Every word-named built-in of Spark must be accepted, whatever sqlglot makes of it.
    for name in sorted(SPARK_BUILTINS):
        for args in ("(a)", "(a, b)", "(a, b, c)", "()"):
            try:
                a = analyze_query(f"SELECT {name}{args} FROM t")
            except ValidationError:
                continue
            assert not any("user-defined" in b for b in a.blockers), (name, a.blockers)
            break


@pytest.mark.parametrize("call, shown", [
    ("my_udf(x)", "my_udf"), ("db.fn(x)", "db.fn"), ("my_agg(DISTINCT x)", "my_agg"),
])
def test_user_defined_functions_force_full(call, shown):
    a = assert_full(f"SELECT\n  {call} AS v\nFROM t", f"user-defined function {shown}()", line=2)
    op = next(o for o in a.operators if o.operator.startswith("user-defined"))
    assert op.considerations and op.strategy == FULL


def test_udtf_in_lateral_view_forces_full():
    assert_full("SELECT * FROM t LATERAL VIEW my_udtf(x) v AS y", "my_udtf")


def test_window_without_partition_by_is_one_partition():
    sql = "SELECT a,\n  row_number() OVER (ORDER BY ts) AS rn\nFROM t"
    op = ops(sql)["WINDOW row_number() OVER (ORDER BY ts)"]
    assert op.incremental and op.line == 2 and op.strategy.startswith("no PARTITION BY")
    assert any("PARTITION BY" in c and "add" in c for c in op.considerations)
    assert ops("SELECT sum(a) OVER () FROM t")["WINDOW sum(a) OVER ()"].incremental


@pytest.mark.parametrize("join", ["LEFT SEMI JOIN", "LEFT ANTI JOIN", "SEMI JOIN", "ANTI JOIN"])
def test_semi_and_anti_joins_recompute_the_left_rows_of_their_keys(join):
    a = assert_incremental(f"SELECT * FROM t {join} u ON t.a = u.a")
    kind = join.split()[-2]
    row = next(o for o in a.operators if o.operator == f"LEFT {kind} JOIN u")
    assert row.strategy == "recompute the left rows of the join keys either side's changes touch"
    # without an equality between the sides, keyed by the left side's columns it reads (as a
    # LEFT OUTER JOIN is), with the advice; reading none of them, FULL, saying why
    a = assert_incremental(f"SELECT * FROM t {join} u ON t.a < u.a")
    row = next(o for o in a.operators if o.operator == f"LEFT {kind} JOIN u")
    assert "no equality" in row.considerations[0]
    assert_full(f"SELECT * FROM t {join} u ON u.a > 1", "without an equality")


def test_pivot_recursive_cte_and_table_functions_force_full():
    assert_full("SELECT * FROM t PIVOT (sum(x) FOR y IN ('a', 'b'))", "PIVOT")
    assert_full("WITH RECURSIVE r AS (SELECT 1 n UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
                "SELECT * FROM r", "WITH RECURSIVE r")
    assert_full("SELECT * FROM my_tvf(1)", "table function my_tvf()")
    assert_incremental("SELECT * FROM range(10)")
    assert_incremental("SELECT * FROM VALUES (1, 2), (3, 4) AS v(a, b)")


# -- GROUP BY keys --------------------------------------------------------------------------

def test_group_by_key_not_in_select_recomputes_its_groups_with_advice():
    """The compiler restricts the block's input by the key expressions, so an unselected key
    still refreshes incrementally (the groups netted row by row); the advice says selecting it
    lets the refresh replace the groups in place."""
    sql = "SELECT sum(amount) AS total\nFROM orders\nGROUP BY\n  customer_id"
    assert_incremental(sql)
    op = ops(sql)["GROUP BY customer_id"]
    assert op.incremental and op.line == 3
    assert any("`customer_id` is not an output column" in c for c in op.considerations)


@pytest.mark.parametrize("sql", [
    "SELECT o.customer_id, sum(amount) FROM orders o GROUP BY customer_id",
    "SELECT customer_id AS c, sum(amount) FROM orders GROUP BY customer_id",
    "SELECT customer_id, sum(amount) FROM orders GROUP BY 1",
    "SELECT upper(name) AS u, count(*) FROM t GROUP BY upper(name)",
    "SELECT upper(name) AS u, count(*) FROM t GROUP BY u",
    "SELECT a, b, sum(c) FROM t GROUP BY ALL",
])
def test_group_by_keys_found_in_select(sql):
    assert_incremental(sql)


@pytest.mark.parametrize("sql, row, fragment", [
    ("SELECT a, b, sum(c) FROM t GROUP BY ROLLUP (a, b)", "GROUP BY ROLLUP (a, b)",
     "GROUPING SETS / ROLLUP / CUBE"),
    ("SELECT a, b, sum(c) FROM t GROUP BY GROUPING SETS ((a, b), (a))", "GROUP BY GROUPING SETS",
     "GROUPING SETS / ROLLUP / CUBE"),
    ("SELECT a.k, b.w, c.v FROM a LEFT JOIN b ON a.k = b.k\nLEFT JOIN c ON a.k = c.k", "LEFT OUTER JOIN c",
     "more than one outer, semi or anti join"),
    ("SELECT a.k, b.w FROM a FULL JOIN b ON a.k < b.k", "FULL OUTER JOIN b", "without an equality"),
    ("SELECT k, v FROM t QUALIFY v > 1", "QUALIFY", "QUALIFY without a window"),
    ("SELECT DISTINCT a, count(*) AS n FROM t GROUP BY a", "DISTINCT", "DISTINCT over an aggregation"),
    ("SELECT DISTINCT k, explode(xs) AS x FROM t", "explode(xs) in SELECT", "a generator in the SELECT list"),
    ("SELECT k, v FROM t UNION ALL SELECT a.k, a.v FROM a FULL JOIN b ON a.k = b.k FULL JOIN c ON a.k = c.k",
     "FULL OUTER JOIN c", "more than one outer, semi or anti join"),
])
def test_a_block_the_change_compiler_refuses_forces_full_on_the_construct_it_names(sql, row, fragment):
    """Every construct is known, but the compiler's rule for the block's shape refuses it: the
    analyzer asks the same rule, and the row of the construct it names forces FULL, with why."""
    a = analyze_query(sql)
    line = next(op.line for op in a.operators if op.operator.startswith(row))
    assert_full(sql, fragment, line=line)
    marked = [op for op in a.operators if not op.incremental]
    assert [op.operator for op in marked if op.operator.startswith(row)] and len(marked) == 1, a.operators
    assert fragment in marked[0].considerations[0]
    assert a.reason == f"{marked[0].operator} at line {line} cannot be refreshed incrementally: " \
                       f"{marked[0].considerations[0]}"


def test_grouping_sets_left_unbound_stay_full():
    """Bound, sql/rules/grouping_sets rewrites them (tests/unit/test_grouping_sets.py)."""
    assert_full("SELECT a, sum(c) FROM t GROUP BY GROUPING SETS ((a, b), (a))",
                "GROUPING SETS / ROLLUP / CUBE are refreshed FULL")


@pytest.mark.parametrize("sql", [
    "SELECT date_trunc('MINUTE', ts) AS m, sum(c1) FROM t GROUP BY date_trunc('MINUTE', ts)",
    "SELECT date_trunc('MINUTE', ts) AS m, sum(c1) FROM t GROUP BY 1",
    "SELECT date_trunc('MINUTE', ts) AS m, sum(c1) FROM t GROUP BY m",
    "SELECT a + b AS s, count(*) FROM t GROUP BY a + b",
])
def test_compound_group_by_key_gets_advice(sql):
    a = assert_incremental(sql)
    group = next(o for o in a.operators if o.operator.startswith("GROUP BY"))
    advice = " ".join(group.considerations)
    assert "expression" in advice and "upstream dynamic table" in advice


def test_plain_group_by_key_gets_no_compound_advice():
    a = analyze_query("SELECT a, count(*) FROM t GROUP BY a")
    assert not any("expression" in c for o in a.operators for c in o.considerations)


@pytest.mark.parametrize("agg", ["min(x)", "max(x)", "count(DISTINCT x)", "max_by(x, y)"])
def test_non_subtractable_aggregates_get_advice(agg):
    a = assert_incremental(f"SELECT k, {agg} AS v FROM t GROUP BY k")
    group = ops(f"SELECT k, {agg} AS v FROM t GROUP BY k")["GROUP BY k"]
    assert any("recompute" in c and "whole group" in c for c in group.considerations), a


def test_subtractable_aggregates_get_no_advice():
    assert ops("SELECT k, sum(x), count(*), avg(y) FROM t GROUP BY k")[
        "GROUP BY k"].considerations == ()


def test_scalar_min_max_advice():
    op = ops("SELECT max(ts) AS latest FROM t")["SCALAR AGGREGATE"]
    assert op.considerations and "whole input" in op.considerations[0]


# -- DISTINCT and WHERE advice ----------------------------------------------------------------

@pytest.mark.parametrize("sql", [
    "SELECT DISTINCT a, count(*) AS n FROM t GROUP BY a",
    "SELECT DISTINCT a FROM (SELECT a, count(*) AS n FROM t GROUP BY a) s",
    "SELECT DISTINCT * FROM (SELECT a, count(*) AS n FROM t GROUP BY a) s",
    "WITH g AS (SELECT DISTINCT a, b FROM t) SELECT DISTINCT a, b FROM g",
])
def test_redundant_distinct(sql):
    a = analyze_query(sql)      # DISTINCT over a GROUP BY, or * unresolved, is refreshed FULL too
    op = [o for o in a.operators if o.operator == "DISTINCT"][-1]   # the outer one
    assert any("redundant" in c for c in op.considerations)


@pytest.mark.parametrize("sql", [
    "SELECT DISTINCT a FROM t",
    "SELECT DISTINCT n FROM (SELECT a, count(*) AS n FROM t GROUP BY a) s",
    "SELECT DISTINCT s.a FROM (SELECT a, count(*) n FROM t GROUP BY a) s JOIN u ON u.a = s.a",
])
def test_needed_distinct_gets_no_advice(sql):
    assert ops(sql)["DISTINCT"].considerations == ()


@pytest.mark.parametrize("where", [
    "status = 'shipped'", "'shipped' = status", "region_id = 42",
    "ts BETWEEN '2024-01-01' AND '2024-01-02'", "x >= 5 AND x < 10",
    "d = DATE '2024-01-01'", "kind IN ('a', 'b')", "flag = true AND y > z",
])
def test_selective_where_gets_advice(where):
    op = ops(f"SELECT a FROM t WHERE {where}")["WHERE"]
    assert op.incremental
    assert op.considerations and "even when none" in op.considerations[0]


@pytest.mark.parametrize("where", ["a > b", "x >= 5", "a = b", "s LIKE 'a%' OR x = 1"])
def test_unselective_where_gets_no_advice(where):
    assert ops(f"SELECT a FROM t WHERE {where}")["WHERE"].considerations == ()


# -- lines, order and output ------------------------------------------------------------------

MULTILINE = """
WITH recent AS (
  SELECT *
  FROM db.orders
  WHERE status = 'open'
)
SELECT
  r.customer_id,
  count(*) AS n
FROM recent r
LEFT OUTER JOIN payments p
  ON p.order_id = r.id
GROUP BY r.customer_id
ORDER BY n DESC"""


def test_lines_on_multiline_sql():
    by = ops(MULTILINE)
    assert by["WITH recent"].line == 2
    assert by["FROM db.orders"].line == 4
    assert by["WHERE"].line == 5
    assert by["FROM recent"].line == 10
    assert by["LEFT OUTER JOIN payments"].line == 11
    assert by["GROUP BY r.customer_id"].line == 13
    assert by["ORDER BY"].line == 14
    selects = [o.line for o in analyze_query(MULTILINE).operators if o.operator == "SELECT"]
    assert selects == [3, 7]


def test_keyword_line_when_clause_body_is_on_next_line():
    by = ops("SELECT a\nFROM t\nWHERE\n  a = b\nGROUP BY\n  a")
    assert by["WHERE"].line == 3 and by["GROUP BY a"].line == 5


def test_reason_names_first_blocker_in_the_text():
    sql = "SELECT a,\n  my_udf(b) AS u\nFROM t\nWHERE rand() < 0.5\nLIMIT 5"
    a = analyze_query(sql)
    assert a.reason == "user-defined function my_udf() at line 2 cannot be refreshed " \
        "incrementally"
    assert [re.search(r"line (\d+)", b).group(1) for b in a.blockers] == ["2", "4", "5"]
    assert len(a.blockers) == sum(not o.incremental for o in a.operators)


def test_reading_order():
    sql = ("SELECT DISTINCT k, rank() OVER (PARTITION BY k ORDER BY v) r FROM t "
           "JOIN u ON t.id = u.id WHERE v > 0 GROUP BY k, v HAVING count(*) > 1 ORDER BY k")
    got = names(sql)
    order = ["FROM t", "INNER JOIN u", "WHERE", "GROUP BY k, v", "HAVING",
             "WINDOW rank() OVER (PARTITION BY k)", "DISTINCT", "SELECT", "ORDER BY"]
    assert [n for n in got if n in order] == order


def test_to_dict_is_json_serialisable():
    a = analyze_query("SELECT a, rand() FROM t WHERE a = 1 LIMIT 3")
    d = json.loads(json.dumps(a.to_dict()))
    assert set(d) == {"incremental", "reason", "operators", "blockers"}
    assert d["incremental"] is False and d["reason"] == d["blockers"][0]
    for op in d["operators"]:
        assert set(op) == {"operator", "strategy", "considerations", "line", "incremental"}
        assert isinstance(op["considerations"], list)
    assert any(op["considerations"] for op in d["operators"])


def test_results_are_frozen():
    a = analyze_query("SELECT a FROM t")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.incremental = False  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.operators[0].line = 3  # type: ignore[misc]


@pytest.mark.parametrize("sql", ["SELECT FROM WHERE", "SELECT (a FROM t", ""])
def test_bad_sql_is_a_validation_error(sql):
    with pytest.raises(ValidationError):
        analyze_query(sql)


def test_syntax_error_names_the_line():
    with pytest.raises(ValidationError) as err:
        analyze_query("SELECT a\nFROM t\nWHERE (a = \n")
    assert err.value.line is not None


@pytest.mark.parametrize("sql", ["INSERT INTO t SELECT 1", "SELECT 1; SELECT 2",
                                 "CREATE TABLE x (a INT)"])
def test_only_one_query_is_accepted(sql):
    with pytest.raises(ValidationError):
        analyze_query(sql)


def test_module_does_not_import_pyspark():
    import subprocess
    import sys
    code = "import sys, dtcli.sql.analysis; sys.exit('pyspark' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# -- invariants over generated queries --------------------------------------------------------

CLAUSES = {
    "where": ["", "WHERE a > b", "WHERE a = 1", "WHERE EXISTS (SELECT 1 FROM u)",
              "WHERE rand() < 0.5", "WHERE my_udf(a)"],
    "join": ["", "JOIN u ON t.a = u.a", "LEFT JOIN u ON t.a = u.a",
             "LEFT SEMI JOIN u ON t.a = u.a", ", LATERAL (SELECT * FROM v WHERE v.a = t.a) l",
             "LATERAL VIEW explode(xs) e AS x"],
    "select": ["a, b", "a, count(*) AS n", "a, row_number() OVER (ORDER BY b) rn",
               "a, sum(b) OVER (PARTITION BY a) s", "a, (SELECT 1) s", "DISTINCT a, b"],
    "group": ["", "GROUP BY a", "GROUP BY a, b", "GROUP BY a, c"],
    "tail": ["", "ORDER BY a", "LIMIT 5", "UNION ALL SELECT a, b FROM w",
             "EXCEPT SELECT a, b FROM w"],
}


@settings(max_examples=150, deadline=None)
@given(st.fixed_dictionaries({k: st.sampled_from(v) for k, v in CLAUSES.items()}),
       st.lists(st.sampled_from([" ", "\n", "\n  "]), min_size=5, max_size=5))
def test_invariants(parts, seps):
    select = parts["select"]
    if parts["group"] and ("OVER" in select or "DISTINCT" in select or "(SELECT" in select):
        select = "a, count(*) AS n"
    sql = seps[0].join(["SELECT", select, "FROM t", parts["join"]]) + seps[1] + \
        seps[2].join([parts["where"], parts["group"], parts["tail"]])
    try:
        sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.ParseError:
        return
    a = analyze_query(sql)
    n_lines = sql.count("\n") + 1
    assert a.incremental == (not a.blockers)
    assert a.reason == (a.blockers[0] if a.blockers else None)
    assert len(a.blockers) >= sum(not o.incremental for o in a.operators)
    for op in a.operators:
        assert op.line is not None and 1 <= op.line <= n_lines, (sql, op)
        assert (op.strategy == "not incremental: forces FULL") == (not op.incremental)
    for reason in a.blockers:
        line = int(re.search(r"at line (\d+)", reason).group(1))
        assert 1 <= line <= n_lines
    lines = [int(re.search(r"at line (\d+)", r).group(1)) for r in a.blockers]
    assert lines == sorted(lines)
    json.dumps(a.to_dict())
    assert isinstance(sqlglot.parse_one(sql, read="spark"), exp.Query)
