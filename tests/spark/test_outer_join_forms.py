"""Outer joins in the forms users write, refreshed incrementally on Spark against the query
recomputed at the same versions: ON in parentheses, null-safe equalities, comma joins before an
outer join, and ON conditions without an equality (keyed by the preserved side's columns,
incremental_rewrite/shapes.py `_theta_join`). NULLs, duplicates, updates, deletes."""

from __future__ import annotations

import pytest

from dtcli.model import INCREMENTAL, NO_DATA, SUCCEEDED
from tests.spark.harness import Env

pytestmark = pytest.mark.spark

FORMS = {
    "parens": "SELECT a.k, a.v, b.w FROM a LEFT JOIN b ON (a.k = b.k AND (b.w > 1))",
    "null_safe_full": "SELECT a.k AS ak, a.g, b.k AS bk, b.w FROM a FULL JOIN b ON (a.k <=> b.k)",
    "comma": "SELECT x.k, y.w, b.w AS w2 FROM a AS x, b AS y LEFT JOIN b ON b.k = y.k WHERE x.g = y.g",
    "theta": "SELECT a.k, a.v, b.w FROM a LEFT JOIN b ON a.v < b.w OR b.k IS NULL",
    "theta_right": "SELECT a.v, b.k, b.w FROM a RIGHT JOIN b ON a.k + b.w = 3",
    "theta_grouped": "SELECT a.g, COUNT(b.w) AS n, SUM(b.w) AS s FROM a LEFT JOIN b ON a.v <= b.w GROUP BY a.g",
}


def test_outer_join_forms_refresh_incrementally_and_exactly(spark, tmp_path):
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING, v INT",
                      [(1, "x", 1), (1, "x", 1), (2, None, 3), (None, "y", None), (None, "y", 4), (3, "z", 1)])
    env.create_source("b", "k INT, g STRING, w INT",
                      [(1, "x", 2), (2, None, 1), (2, None, 1), (None, "y", 5), (4, "w", 3)])
    env.write(FORMS)
    assert all(r.state == SUCCEEDED for r in env.refresh().values())

    def incremental() -> None:
        records = env.refresh()
        for name in FORMS:
            record = records[name]
            assert record.state == SUCCEEDED, (name, record.state_message)
            assert record.refresh_action == INCREMENTAL, (name, record.refresh_action, record.state_message)
            env.check(name)

    env.sql("INSERT INTO {a} VALUES (4, 'w', 2), (4, 'w', 2), (NULL, NULL, NULL)")
    env.sql("DELETE FROM {b} WHERE k = 1")
    incremental()
    env.sql("UPDATE {b} SET w = w + 2 WHERE k IS NULL OR k = 2")
    env.sql("UPDATE {a} SET k = NULL, v = 0 WHERE g = 'z'")
    env.sql("INSERT INTO {b} VALUES (NULL, NULL, 0), (3, 'z', 1)")
    incremental()
    env.sql("DELETE FROM {a} WHERE v IS NULL OR v > 3")
    incremental()
    assert {r.refresh_action for r in env.refresh().values()} == {NO_DATA}
