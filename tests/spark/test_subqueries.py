"""Subqueries rewritten into joins (sql/rules/subqueries.py), semi / anti joins and several keyed
joins per SELECT, refreshed INCREMENTAL on Spark and compared with a recompute after each batch.

The batches hit what the rewrites must get right: NULL keys and values on both sides,
duplicates, a set emptied and filled again, updates of keys and of the compared values, deletes.
"""

from __future__ import annotations

import pytest

from dtcli.model import INCREMENTAL, NO_DATA, SUCCEEDED
from tests.spark.harness import Env

pytestmark = pytest.mark.spark

SOURCES = {"a": "k INT, g STRING, v INT", "b": "k INT, g STRING, w INT"}
INITIAL = {
    "a": [(1, "x", 1), (1, "x", 1), (2, "y", 5), (None, "x", 2), (3, None, None), (4, "z", 0)],
    "b": [(1, "x", 0), (2, "y", 7), (2, "y", 7), (None, "x", 1), (5, "z", None)],
}
BATCHES = [
    # a NULL joins the set, a value moves, a key gains a duplicate
    ["INSERT INTO {b} VALUES (3, 'x', 2), (NULL, NULL, NULL), (2, 'x', 9)", "UPDATE {a} SET v = 9 WHERE k = 2"],
    # keys leave and arrive on both sides, duplicates on the left
    ["DELETE FROM {b} WHERE k = 1 OR k IS NULL",
     "INSERT INTO {a} VALUES (5, 'z', 3), (5, 'z', 3), (NULL, NULL, 1)", "UPDATE {b} SET k = 4 WHERE k = 2"],
    # the set emptied
    ["DELETE FROM {b} WHERE true", "UPDATE {a} SET k = 1 WHERE k = 3"],
    # filled again, with a NULL value; NULL keys leave the left side
    ["INSERT INTO {b} VALUES (1, 'x', 1), (4, 'z', NULL), (4, 'z', 3), (5, 'y', 3)",
     "DELETE FROM {a} WHERE k IS NULL", "UPDATE {a} SET v = NULL WHERE k = 5"],
]

TABLES = {
    # user-written semi / anti joins
    "semi_residual": "SELECT a.k, a.v FROM a LEFT SEMI JOIN b ON a.k = b.k AND b.w <> a.v",
    "anti_grouped": "SELECT a.g, COUNT(*) AS n, SUM(a.v) AS s FROM a LEFT ANTI JOIN b ON a.k = b.k "
                    "GROUP BY a.g",
    # subqueries rewritten into joins (sql/rules/subqueries.py)
    "exists": "SELECT a.k, a.v FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.w > 1)",
    "not_exists_residual": "SELECT a.k, a.v FROM a WHERE NOT EXISTS "
                           "(SELECT 1 FROM b WHERE b.k = a.k AND b.w <> a.v)",
    "exists_uncorrelated": "SELECT a.k, a.g FROM a WHERE a.v > 1 OR EXISTS (SELECT 1 FROM b WHERE b.w = 3)",
    "in_tuple": "SELECT a.k, a.v FROM a WHERE (a.k, a.g) IN (SELECT b.k, b.g FROM b)",
    "in_grouped": "SELECT a.k, a.v FROM a WHERE a.k IN (SELECT b.k FROM b GROUP BY b.k HAVING COUNT(*) > 1)",
    "not_in": "SELECT a.k, a.v FROM a WHERE a.v NOT IN (SELECT b.w FROM b)",
    "not_in_correlated": "SELECT a.k, a.v FROM a WHERE a.v NOT IN (SELECT b.w FROM b WHERE b.k = a.k)",
    "scalar_where": "SELECT a.k, a.v FROM a WHERE a.v > (SELECT AVG(b.w) FROM b)",
    "scalar_max": "SELECT a.k, a.v, (SELECT MAX(b.w) FROM b) AS m FROM a",
    "scalar_correlated": "SELECT a.k, a.v FROM a WHERE a.v < (SELECT MAX(b.w) FROM b WHERE b.k = a.k)",
    "scalar_count": "SELECT a.k, (SELECT COUNT(*) FROM b WHERE b.k = a.k) AS n FROM a",
    # not one aggregate: its value and row count (several rows would fail, as the query does)
    "scalar_distinct": "SELECT a.k, a.g FROM a WHERE a.g = (SELECT DISTINCT b.g FROM b WHERE b.g = 'y')",
    "exists_or": "SELECT a.k, a.g FROM a WHERE a.v > 3 OR EXISTS (SELECT 1 FROM b WHERE b.k = a.k)",
    "scalar_having": "SELECT a.g, SUM(a.v) AS s FROM a GROUP BY a.g "
                     "HAVING SUM(a.v) > (SELECT AVG(b.w) FROM b)",
    # TPC-H Q21's shape: EXISTS and NOT EXISTS with a non-equality, under a GROUP BY
    "q21_like": "SELECT a.g, COUNT(*) AS n FROM a WHERE EXISTS "
                "(SELECT 1 FROM b WHERE b.k = a.k AND b.g <> a.g) AND NOT EXISTS "
                "(SELECT 1 FROM b AS b3 WHERE b3.k = a.k AND b3.g <> a.g AND b3.w > 2) GROUP BY a.g",
    # several keyed joins in one SELECT (sql/rules/keyed_joins.py)
    "two_left_joins": "SELECT a.k, b.w, a2.v AS v2 FROM a LEFT JOIN b ON a.k = b.k "
                      "LEFT JOIN a AS a2 ON b.w = a2.v",
}


def test_subqueries_and_semi_joins_refresh_incrementally_and_exactly(spark, tmp_path):
    env = Env(spark, tmp_path)
    for name, ddl in SOURCES.items():
        env.create_source(name, ddl, INITIAL[name])
    env.write(TABLES)
    for name, record in env.refresh().items():
        assert record.state == SUCCEEDED, f"{name}: {record.state_message}"
        env.check(name)
    for batch in BATCHES:
        for statement in batch:
            env.sql(statement)
        for name, record in env.refresh().items():
            assert record.state == SUCCEEDED, f"{name}: {record.state_message}"
            assert record.refresh_action in (INCREMENTAL, NO_DATA), \
                f"{name} refreshed {record.refresh_action}: {record.state_message}"
            env.check(name)
