"""The differential harness's DTs, one per query shape, and the sources they read: refreshed on
Spark by tests/spark/test_incremental_harness.py, explained by tests/fuzz/test_explain_agrees.py."""

SHAPES = {
    "filtered": "SELECT k, g, v * 2 AS v2 FROM a WHERE v IS NULL OR v > 1",
    "unioned": "SELECT k, g AS label FROM a UNION ALL SELECT k, w FROM b",
    # the CTE shadows the table it reads: inside its body `a` is the source, outside the CTE
    "cte_self_join": """
        WITH a AS (SELECT k, v FROM a WHERE k IS NOT NULL)
        SELECT x1.k, x1.v, x2.v AS v_other FROM a AS x1 JOIN a AS x2 ON x1.k = x2.k""",
    "inner_join": "SELECT a.k, a.g, a.v, b.w FROM a JOIN b ON a.k = b.k",
    "three_way": """
        SELECT a.k, b.w, c.label FROM a JOIN b ON a.k = b.k JOIN c ON a.g = c.g""",
    "left_join": "SELECT a.k, a.v, b.w FROM a LEFT JOIN b ON a.k = b.k",
    "full_join": "SELECT a.k AS ak, a.g, b.k AS bk, b.w FROM a FULL OUTER JOIN b ON a.k = b.k",
    "grouped": """
        SELECT g, SUM(v) AS s, COUNT(*) AS n, COUNT(v) AS nv, MIN(v) AS mn, MAX(v) AS mx,
               AVG(v) AS av, COUNT(DISTINCT k) AS dk
        FROM a GROUP BY g""",
    "outer_grouped": """
        SELECT b.k, b.w, COUNT(a.k) AS n, SUM(a.v) AS s
        FROM b LEFT JOIN a ON a.k = b.k GROUP BY b.k, b.w""",
    "distinct": "SELECT DISTINCT g, k FROM a",
    "windowed": """
        SELECT k, g, v, RANK() OVER (PARTITION BY g ORDER BY v) AS r,
               SUM(v) OVER (PARTITION BY g ORDER BY v) AS running
        FROM a""",
    # one row, recomputed from the inputs (engine/runtime/query_shape.py), written whole and in place
    "scalar": "SELECT COUNT(*) AS n, SUM(v) AS s, MAX(k) AS mk FROM a",
    "scalar_in_place": "SELECT COUNT(*) AS n, SUM(b.k) AS s, MIN(a.g) AS mg FROM a JOIN b ON a.k = b.k",
    # sums over never-NULL columns: groups adjusted from the DT's own rows (own_rows.py)
    "summed": """
        SELECT eg, COUNT(*) AS n, SUM(ev) AS s, SUM(ek * 2 - ev) AS t, COUNT(eg) AS ng
        FROM e GROUP BY eg""",
    "summed_join": "SELECT b.w, COUNT(*) AS n, SUM(e.ev) AS s FROM e JOIN b ON e.ek = b.k GROUP BY b.w",
    "ranked_join": """
        SELECT b.w, e.ek, e.ev, RANK() OVER (PARTITION BY b.w ORDER BY e.ev DESC) AS r
        FROM e JOIN b ON e.ek = b.k""",
    "exploded": "SELECT a.k, e.x FROM a LATERAL VIEW explode(a.arr) e AS x",
    "chained": "SELECT w, SUM(v) AS s, COUNT(*) AS n FROM inner_join GROUP BY w",
    # COUNT / SUM / AVG over NULLs, with HAVING and without GROUP BY: running totals kept as an
    # internal table (sql/rules/aggregate_totals.py)
    "averaged": """
        SELECT g, AVG(v) AS av, SUM(v) AS s, COUNT(*) AS n FROM a
        GROUP BY g HAVING COUNT(v) > 0""",
    "scalar_totals": "SELECT COUNT(*) AS n, SUM(v) * 2 AS s2, AVG(v) AS av FROM a",
    # TPC-H Q13's shape, columns unqualified: sqlglot binds them to their inputs before analysis
    "q13": """
        SELECT c_count, COUNT(*) AS custdist
        FROM (SELECT k, COUNT(dk) AS c_count
              FROM b LEFT OUTER JOIN d ON k = dk AND dc NOT LIKE '%q%'
              GROUP BY k) AS c_orders
        GROUP BY c_count""",
}
# Shapes whose DT takes its change in place (replaceWhere, MERGE, append), as by default; the
# others set `small_table_rows` and are written whole by an overwrite (engine/runtime/rewrite.py): each
# way of computing a change is checked with both kinds of commit.
IN_PLACE = ("filtered", "unioned", "inner_join", "left_join", "full_join", "grouped", "windowed",
            "summed", "scalar_in_place")
# shapes whose one row is recomputed from the inputs at their new versions
ONE_ROW = ("scalar", "scalar_in_place")
# shapes maintained from the DT's own rows or from running totals, and how
FROM_OWN_ROWS = {"summed": "own_rows_aggregate", "summed_join": "own_rows_aggregate",
                 "ranked_join": "own_rows_window", "windowed": "own_rows_window",
                 "averaged": "aggregate_totals", "scalar_totals": "aggregate_totals"}
# The same shape as a Snowflake user writes it, in a project with `dialect: snowflake`.
SNOWFLAKE_SHAPES = {
    "q13_snowflake": """
        SELECT c_count, COUNT(*) AS custdist
        FROM (SELECT k, COUNT(dk) AS c_count
              FROM b LEFT OUTER JOIN d ON k = dk AND NOT (dc ILIKE '%q%')
              GROUP BY k) AS c_orders
        GROUP BY c_count""",
}

SOURCES = {
    "a": "k INT, g STRING, v DECIMAL(12,2), arr ARRAY<INT>",
    "b": "k INT, w STRING",
    "c": "g STRING, label STRING",
    "d": "dk INT, dc STRING",
    "e": "ek INT NOT NULL, eg STRING, ev DECIMAL(12,2) NOT NULL",
}
