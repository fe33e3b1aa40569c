"""Set operations refreshed incrementally on Spark, against the query recomputed at the same
versions (sql/rules/set_operations.py): NULLs (equal to each other in a set operation),
duplicate rows on both sides, inserts, updates of compared columns, deletes, overwrites."""

from __future__ import annotations

import pytest

from dtcli.model import INCREMENTAL, NO_DATA, SUCCEEDED
from tests.spark.harness import Env

pytestmark = pytest.mark.spark

# Spark's own semantics where an engine could differ: types widened across the sides (INT and
# BIGINT), MINUS, a DT reading a set operation's DT. The other forms (precedence, nesting, CTEs)
# are checked by the hundreds on DuckDB (tests/fuzz/test_setop_cases.py).
SET_OPERATIONS = {
    "u": "SELECT k, g FROM a UNION SELECT k, g FROM b",
    "i": "SELECT k, g FROM a INTERSECT SELECT CAST(k AS BIGINT), g FROM b",
    "m": "SELECT k, g FROM b MINUS SELECT k, g FROM a WHERE v > 1",
    "ia": "SELECT k, g FROM a INTERSECT ALL SELECT k, g FROM b",
    "ea": "SELECT k, g FROM a EXCEPT ALL SELECT k, g FROM b",
    # a DT reading a set operation's DT: its change is the one the first refresh committed
    "down": "SELECT g, COUNT(*) AS n FROM ea GROUP BY g",
}


def _incremental(env: Env, names) -> None:
    records = env.refresh()
    for name in names:
        record = records[name]
        assert record.state == SUCCEEDED, (name, record.state_message)
        assert record.refresh_action == INCREMENTAL, (name, record.refresh_action, record.state_message)
        env.check(name)


def test_set_operations_refresh_incrementally_and_exactly(spark, tmp_path):
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING, v INT",
                      [(1, "x", 1), (1, "x", 1), (1, "x", 2), (2, None, 3), (None, "y", None),
                       (None, "y", 4), (3, "z", 1)])
    env.create_source("b", "k INT, g STRING, w INT",
                      [(1, "x", 5), (2, None, 1), (2, None, 1), (None, "y", 2), (4, "w", 3)])
    env.write(SET_OPERATIONS)
    assert all(r.state == SUCCEEDED for r in env.refresh().values())
    for name in SET_OPERATIONS:
        env.check(name)
    # duplicates and NULL rows added on one side, a matched row deleted on the other
    env.sql("INSERT INTO {a} VALUES (2, NULL, 7), (4, 'w', 1), (4, 'w', 1), (NULL, NULL, NULL)")
    env.sql("DELETE FROM {b} WHERE k = 1")
    _incremental(env, SET_OPERATIONS)
    # updates of the compared columns on both sides, in one refresh over several commits
    env.sql("UPDATE {a} SET g = 'y' WHERE k IS NULL")
    env.sql("UPDATE {b} SET k = 3, g = 'z' WHERE w = 1")
    env.sql("INSERT INTO {b} VALUES (NULL, NULL, 9), (1, 'x', 1), (1, 'x', 1), (1, 'x', 1)")
    _incremental(env, SET_OPERATIONS)
    # an overwrite of one side (every row deleted and rewritten), the other side emptied
    env.sql("INSERT OVERWRITE {a} SELECT k, g, v + 1 FROM {a} WHERE k IS NOT NULL OR g IS NULL")
    env.sql("DELETE FROM {b} WHERE true")
    _incremental(env, SET_OPERATIONS)
    records = env.refresh()
    assert {r.refresh_action for r in records.values()} == {NO_DATA}


def test_intersect_replaces_its_affected_rows_by_key(spark, tmp_path):
    """INTERSECT's GROUP BY over every column is keyed by the DT's own columns: the refresh
    recomputes the touched rows and replaces exactly those (no row-by-row merge)."""
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING, v INT", [(1, "x", 1), (2, "y", 2), (2, "y", 2)])
    env.create_source("b", "k INT, g STRING, w INT", [(2, "y", 1), (3, "z", 1)])
    env.write({"i": "SELECT k, g FROM a INTERSECT SELECT k, g FROM b",
               "u": "SELECT k, g FROM a UNION SELECT k, g FROM b"})
    env.refresh()
    env.sql("INSERT INTO {b} VALUES (1, 'x', 4)")
    env.sql("DELETE FROM {a} WHERE k = 2")
    records = env.refresh()
    for name in ("i", "u"):
        assert records[name].refresh_action == INCREMENTAL, records[name].state_message
        assert records[name].refresh_strategy == "keys_recomputed", records[name].refresh_strategy
        env.check(name)


GROUPING_SETS = {
    "r": "SELECT k, g, GROUPING(g) AS gg, COUNT(*) AS n, SUM(v) AS s FROM a GROUP BY ROLLUP (k, g)",
    # (Spark resolves GROUPING(k) in HAVING only when k is selected)
    "c": "SELECT k, k + 1 AS k1, COALESCE(g, 'all') AS g, GROUPING_ID(k, g) AS gid, MAX(v) AS m, "
         "COUNT(k) AS nk FROM a GROUP BY CUBE (k, g) HAVING COUNT(*) > 1 OR GROUPING(k) = 1",
    "gs": "SELECT g, k, SUM(v) AS s FROM a WHERE v IS NULL OR v < 9 "
          "GROUP BY GROUPING SETS ((g, k), (g), (g), ()) ORDER BY 1, 2",
    "mixed": "SELECT k, g, COUNT(*) AS n FROM a GROUP BY k, g WITH ROLLUP",
    # its key is not an output: each grouping set's groups are netted row by row
    "hidden": "SELECT g, SUM(v) AS s FROM a GROUP BY ROLLUP (g, k)",
    # TPC-DS q36's shape: each level ranked within its parent, over the UNION ALL of the sets
    "ranked": "SELECT k, g, SUM(v) AS s, GROUPING(k) + GROUPING(g) AS lvl, RANK() OVER (PARTITION BY "
              "GROUPING(k) + GROUPING(g), CASE WHEN GROUPING(g) = 0 THEN k END ORDER BY SUM(v) DESC) AS r "
              "FROM a GROUP BY ROLLUP (k, g)",
    # and q86's top rows, sorted by an expression of GROUPING() (a hidden sort key per group)
    "ranked_top": "SELECT k, g, SUM(v) AS s, RANK() OVER (PARTITION BY GROUPING(g) ORDER BY SUM(v)) AS r "
                  "FROM a GROUP BY ROLLUP (k, g) ORDER BY GROUPING(k) + GROUPING(g) DESC, "
                  "CASE WHEN GROUPING(g) = 0 THEN k END, k, g LIMIT 4",
}


def test_grouping_sets_refresh_incrementally_and_exactly(spark, tmp_path):
    """One GROUP BY per grouping set, unioned: NULL keys of the data told apart from rolled-up
    ones by GROUPING(), a set listed twice, HAVING over GROUPING(); and Spark's answer on an
    empty input, where ROLLUP and CUBE yield no grand-total row (a scalar aggregate would)."""
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING, v INT",
                      [(1, "x", 1), (1, "x", 1), (1, None, 2), (2, None, 3), (None, "y", None),
                       (None, None, 4), (3, "z", 1)])
    env.write(GROUPING_SETS)
    assert all(r.state == SUCCEEDED for r in env.refresh().values())
    env.sql("INSERT INTO {a} VALUES (2, 'x', 7), (4, NULL, 1), (NULL, NULL, NULL)")
    env.sql("UPDATE {a} SET g = 'w' WHERE k = 1 AND v = 2")
    _incremental(env, GROUPING_SETS)
    env.sql("DELETE FROM {a} WHERE true")
    _incremental(env, GROUPING_SETS)
    assert env.spark.read.format("delta").load(env.project("r").table_path("r")).count() == 0
    env.sql("INSERT INTO {a} VALUES (5, 'q', 2), (5, 'q', 2)")
    _incremental(env, GROUPING_SETS)
