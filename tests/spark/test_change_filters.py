"""A change filtered by the query's conditions on its table alone (change_filters.py) before
anything is joined with it: differential tests against the query recomputed at the same
versions, with rows crossing each condition both ways, NULLs (a NULL key of NOT IN's set is
kept only when its row passes the subquery's condition), duplicates, updates and deletes; and a
change kept on the driver is filtered without a Spark job."""

from __future__ import annotations

import pytest

from dtcli.engine.runtime import changes
from tests.spark.harness import Env

pytestmark = pytest.mark.spark

TABLES = {
    "joined": "SELECT a.k, a.v, b.w FROM a JOIN b ON a.k = b.k WHERE a.v > 10 AND b.w IS NOT NULL",
    "grouped": "SELECT a.s, COUNT(*) AS n, SUM(b.w) AS sw FROM a JOIN b ON a.k = b.k WHERE a.v > 10 GROUP BY a.s",
    # b's own ON condition filters b; the WHERE reads both sides (and b's NULL row): no filter of a
    "outer": "SELECT a.k, b.w FROM a LEFT JOIN b ON a.k = b.k AND b.w > 5 WHERE b.w IS NULL OR a.v > 10",
    # `b.w IS NULL` keeps the left rows no b row matches: not a condition on b's rows
    "unmatched": "SELECT a.k, b.w FROM a LEFT JOIN b ON a.k = b.k WHERE b.w IS NULL",
    "anti": "SELECT a.k, a.v FROM a WHERE a.v > 10 AND NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.w > 5)",
    "notin": "SELECT a.k FROM a WHERE a.k NOT IN (SELECT b.k FROM b WHERE b.w > 5)",
    # a's two references with conditions of their own: a change row passing either one counts
    "twice": "SELECT x.k, y.k AS yk FROM a AS x JOIN a AS y ON x.k = y.v WHERE x.v > 10 AND y.v < 5",
    # an OR whose branches each have conditions on a and on b: a's and b's implied ORs
    "either": "SELECT a.k, b.w FROM a JOIN b ON a.k = b.k WHERE (a.v > 10 AND b.w > 5) OR (a.s = 'x' AND b.w IS NULL)",
    "top": "SELECT a.k, a.v FROM a WHERE a.v > 10 ORDER BY a.v DESC, a.k LIMIT 3",
}
A_ROWS = [(1, 20, "x"), (2, 3, "x"), (3, 30, "y"), (4, 4, None), (5, 15, "y"), (None, 50, "z"), (6, 1, "x"),
          (3, 30, "y")]
B_ROWS = [(1, 8), (2, 9), (3, 2), (5, None), (6, 7), (None, 3)]

BATCHES = [
    # only rows failing every condition: a.v <= 10, b.w <= 5 or NULL (a NULL key NOT IN ignores)
    ["INSERT INTO {a} VALUES (7, 2, 'x'), (7, 2, 'x'), (8, NULL, 'y')",
     "INSERT INTO {b} VALUES (7, 1), (NULL, 4), (8, NULL)"],
    # rows crossing the conditions both ways; deletes of passing and failing rows, a duplicate,
    # a NULL v
    ["UPDATE {a} SET v = 25 WHERE k = 2", "UPDATE {a} SET v = 5 WHERE k = 3",
     "UPDATE {b} SET w = 10 WHERE k = 3", "UPDATE {b} SET w = NULL WHERE k = 1",
     "DELETE FROM {a} WHERE k IN (5, 6)", "INSERT INTO {a} VALUES (1, 20, 'x'), (9, NULL, NULL), (4, 40, 'z')",
     "DELETE FROM {b} WHERE k = 6"],
    # a NULL key in NOT IN's set (its row passes w > 5): every row of notin goes
    ["INSERT INTO {b} VALUES (NULL, 6)", "UPDATE {a} SET v = 2 WHERE k = 4"],
    # and out again
    ["DELETE FROM {b} WHERE k IS NULL AND w = 6", "INSERT INTO {a} VALUES (10, 11, 'q')"],
]


def test_filtered_changes_refresh_every_shape_exactly(spark, tmp_path):
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, v INT, s STRING", A_ROWS)
    env.create_source("b", "k INT, w INT", B_ROWS)
    env.write(TABLES)
    env.run_batches(BATCHES)


def test_a_change_on_the_driver_is_filtered_without_a_job(spark, tmp_path):
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, v INT, s STRING", A_ROWS)
    start = env.version("a")
    env.sql("UPDATE {a} SET v = 12 WHERE k = 2")            # crosses v > 10 upwards
    env.sql("INSERT INTO {a} VALUES (7, 2, 'x'), (8, NULL, NULL)")
    cs = changes.read_changes(spark, "a", env.path("a"), start, env.version("a"))
    assert cs.local is not None and cs.rows == 4
    spark.sparkContext.setJobGroup("filtered", "filtered")
    try:
        kept = cs.where("v > 10")
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert spark.sparkContext.statusTracker().getJobIdsForGroup("filtered") == []
    assert sorted(tuple(r) for r in kept.local) == [(2, 12, "x", 1)]
    assert kept.rows == 1
    # a condition the change cannot evaluate leaves it whole
    assert cs.where("no_such_column > 1") is cs
