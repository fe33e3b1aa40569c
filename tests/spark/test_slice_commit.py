"""A small table's slice replaced by a commit dt builds from its list of files
(engine/runtime/slice_commit.py, through apply.replace): the same rows, the same change data
feed, counts and frontier as Delta's replaceWhere, in fewer Spark jobs, on tables with deletion
vectors, NULLs, duplicates, partitions and column mapping; a table that moved after it was listed,
or a larger one, goes through replaceWhere; a row outside the slice fails the write."""

from __future__ import annotations

import pytest

from dtcli.engine.runtime import apply, listed, slice_commit
from dtcli.model import SUCCEEDED, Frontier
from dtcli.state.delta_log import open_table, read_frontier
from tests.helpers import jobs_run

pytestmark = pytest.mark.spark

LAYOUTS = {
    "deletion vectors, change data feed": ("", "delta.enableDeletionVectors = true, delta.enableChangeDataFeed = true"),
    "partitioned, change data feed": ("PARTITIONED BY (p)", "delta.enableChangeDataFeed = true"),
    "column mapping": ("", "delta.columnMapping.mode = 'name', delta.enableDeletionVectors = true"),
}


def _table(spark, path: str, layout: str) -> None:
    extra, props = LAYOUTS[layout]
    spark.sql(f"CREATE TABLE delta.`{path}` (k INT, p STRING, v DOUBLE) USING delta {extra} "
              f"TBLPROPERTIES ({props})")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a', 1.5), (2, 'a', NULL), (2, 'a', NULL), "
              "(3, 'b', 3.0), (NULL, 'b', 4.0), (5, NULL, 5.0), (5, NULL, 5.0)")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE k = 3")          # a deletion vector (where on)
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (2, 'c', 2.5), (7, 'c', 7.0)")


def _state(spark, path: str, cdf: bool):
    rows = sorted(map(repr, spark.read.format("delta").load(path).collect()))
    changes = sorted(map(repr, spark.read.format("delta").option("readChangeFeed", "true")
                         .option("startingVersion", 4).load(path)
                         .select("k", "p", "v", "_change_type").collect())) if cdf else None
    frontier, version = read_frontier(open_table(path))
    return rows, changes, frontier, version


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_small_tables_slice_is_replaced_as_replace_where_does_in_fewer_jobs(spark, tmp_path, layout):
    """By default (`spark.dt.wholeWriteBytes` unset) by hand; set to 0, by replaceWhere."""
    cdf = "enableChangeDataFeed" in LAYOUTS[layout][1]
    predicate = "k = 2 OR k IS NULL"
    new = spark.createDataFrame([(2, "a", 9.0), (2, "a", 9.0), (None, "d", None)], "k INT, p STRING, v DOUBLE")
    frontier = Frontier(source_versions={"src": 7}, run_id="run-1")
    seen = {}
    for way in ("by hand", "replaceWhere"):
        path = str(tmp_path / way.replace(" ", "_"))
        _table(spark, path, layout)
        listed.forget()
        if way == "replaceWhere":
            spark.conf.set(slice_commit.WHOLE_SETTING, "0")
        try:
            done, jobs = jobs_run(spark, f"slice-{layout}-{way}",
                                  lambda path=path: apply.replace(spark, path, predicate, new, frontier))
        finally:
            spark.conf.unset(slice_commit.WHOLE_SETTING)
        seen[way] = (done[:3], _state(spark, path, cdf), jobs)
    (hand, hand_state, hand_jobs), (delta, delta_state, delta_jobs) = seen["by hand"], seen["replaceWhere"]
    assert hand == delta == (3, 4, 4)           # 3 rows written, 4 removed (2, 2, 2 and NULL), version 4
    assert hand_state == delta_state
    assert hand_state[2].run_id == "run-1" and hand_state[2].source_versions == {"src": 7}
    if cdf:
        kinds = [c for c in hand_state[1]]
        assert sum("'delete'" in c for c in kinds) == 4 and sum("'insert'" in c for c in kinds) == 3
    assert hand_jobs < delta_jobs, f"by hand {hand_jobs} jobs, replaceWhere {delta_jobs}"


def test_a_table_moved_after_it_was_listed_is_not_written_by_hand(spark, tmp_path):
    path = str(tmp_path / "moved")
    _table(spark, path, "deletion vectors, change data feed")
    listed.forget()
    at = slice_commit.target(spark, path)
    assert at is not None and at.version == 3
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (8, 'e', 8.0)")       # another commit since
    new = spark.createDataFrame([(2, "a", 9.0)], "k INT, p STRING, v DOUBLE")
    assert slice_commit.replace(spark, path, at, "k = 2", new, Frontier(source_versions={})) is None
    assert open_table(path).version() == 4                              # nothing written


def test_a_row_outside_the_slice_fails_the_write_and_commits_nothing(spark, tmp_path):
    path = str(tmp_path / "outside")
    _table(spark, path, "deletion vectors, change data feed")
    listed.forget()
    new = spark.createDataFrame([(2, "a", 9.0), (6, "a", 6.0)], "k INT, p STRING, v DOUBLE")
    with pytest.raises(Exception) as failed:
        apply.replace(spark, path, "k = 2", new, Frontier(source_versions={}))
    assert apply.inconsistent(failed.value) is not None
    assert open_table(path).version() == 3


def _operation(path: str) -> str:
    return open_table(path).history(1)[0]["operation"]


def test_a_full_refresh_of_a_small_dt_replaces_its_rows_by_hand_until_its_definition_changes(spark, tmp_path):
    """strategies/full.py: a FULL of a DT that exists with the definition the refresh would give
    it replaces every row in a commit dt builds (a WRITE in the table's history, with the change
    data of the rows that changed); a changed comment makes it CREATE OR REPLACE the table."""
    from tests.spark.harness import Env

    env = Env(spark, tmp_path)
    env.create_source("s", "k INT, g STRING", [(1, "x"), (2, "y"), (None, "x"), (2, "y")])
    query = "SELECT g, COUNT(*) AS n, SUM(k) AS total FROM s GROUP BY g"
    env.write({"summed": query}, table_yml={"summed": "refresh_mode: full\n"})
    env.refresh()
    path = env.project().table_path("summed")
    assert _operation(path) == "CREATE OR REPLACE TABLE AS SELECT"
    env.sql("INSERT INTO {s} VALUES (5, 'y'), (NULL, 'z')")
    record = env.refresh()["summed"]
    assert record.refresh_action == "FULL" and record.state == SUCCEEDED, record.state_message
    assert _operation(path) == "WRITE"
    assert (record.num_inserted_rows, record.num_deleted_rows) == (3, 2)
    env.check("summed")
    version = open_table(path).version()
    changed = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", version) \
        .load(path).select("g", "_change_type").collect()
    assert sorted((r.g or "", r._change_type) for r in changed) == [
        ("x", "delete"), ("x", "insert"), ("y", "delete"), ("y", "insert"), ("z", "insert")]

    env.write({"summed": query}, table_yml={"summed": "refresh_mode: full\ncomment: sums by g\n"})
    env.sql("INSERT INTO {s} VALUES (6, 'x')")
    record = env.refresh()["summed"]
    assert record.state == SUCCEEDED, record.state_message
    assert _operation(path) == "CREATE OR REPLACE TABLE AS SELECT"
    env.check("summed")
