"""Incremental refresh properties that the random harness does not pin down on its own."""

from __future__ import annotations

import pytest

from dtcli.model import INCREMENTAL, REINITIALIZE, SUCCEEDED
from tests.helpers import multiset
from tests.spark.harness import Env

pytestmark = pytest.mark.spark

QUERY = """
SELECT a.g, COUNT(*) AS n, SUM(b.v) AS s
FROM a JOIN b ON a.k = b.k
GROUP BY a.g
"""


def _table(env: Env, name: str):
    project = env.project()
    return env.spark.read.format("delta").load(project.table_path(name))


def test_one_refresh_over_many_commits_equals_one_per_commit(spark, tmp_path):
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING", [(1, "x"), (2, "y"), (None, "x")])
    env.create_source("b", "k INT, v DECIMAL(12,2)", [(1, 1), (2, 2), (2, 2)])
    env.write({"each": QUERY, "batched": QUERY})
    env.refresh()
    commits = [
        "INSERT INTO {b} VALUES (1, 5), (3, 1)",
        "UPDATE {a} SET k = 3 WHERE k = 2",
        "DELETE FROM {b} WHERE k = 1",
    ]
    for statement in commits:
        env.sql(statement)
        record = env.refresh(["each"])["each"]
        assert record.refresh_action == INCREMENTAL, record.state_message
    records = env.refresh()
    assert records["batched"].refresh_action == INCREMENTAL
    assert records["batched"].state == SUCCEEDED, records["batched"].state_message
    env.check("each")
    env.check("batched")
    assert multiset(_table(env, "each")) == multiset(_table(env, "batched"))


def test_missing_change_data_reinitializes_with_the_reason(spark, tmp_path):
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING", [(1, "x")])
    env.write({"copy": "SELECT k, g FROM a WHERE k > 0"})
    env.refresh()
    env.sql("ALTER TABLE {a} SET TBLPROPERTIES (delta.enableChangeDataFeed = false)")
    env.sql("INSERT INTO {a} VALUES (2, 'y')")
    env.sql("ALTER TABLE {a} SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    env.sql("INSERT INTO {a} VALUES (3, 'z')")
    record = env.refresh()["copy"]
    assert record.state == SUCCEEDED, record.state_message
    assert record.refresh_action == REINITIALIZE
    assert "change data" in (record.reinit_reason or "")
    env.check("copy")
    # the next refresh starts from the recomputed table and is incremental again
    env.sql("DELETE FROM {a} WHERE k = 1")
    record = env.refresh()["copy"]
    assert record.refresh_action == INCREMENTAL and record.num_deleted_rows == 1
    env.check("copy")
