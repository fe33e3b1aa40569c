"""An input's change read once per run (engine/runtime/change_cache.py): every refresh gets the
change set a read of its own columns would give, from one read of the feed, without a job."""

from __future__ import annotations

import pytest

from dtcli.engine.runtime import change_cache, changes
from dtcli.model import INCREMENTAL, SUCCEEDED
from tests.helpers import jobs_run
from tests.spark.harness import Env

pytestmark = pytest.mark.spark


def _rows(cs):
    return sorted(map(repr, cs.local))


def test_each_projection_equals_its_own_read_and_costs_no_job(spark, tmp_path):
    """NULLs, duplicates, updates, deletes, NaN and -0.0 in a DOUBLE; a row changed only in
    columns a projection does not read cancels out of it."""
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING, v DECIMAL(12,2), d DOUBLE, ts TIMESTAMP",
                      [(k, f"g{k % 3}", k, None, None) for k in range(1, 9)] + [(None, None, None, None, None)] * 2)
    path, start = env.path("a"), env.version("a")
    env.sql("UPDATE {a} SET v = v + 1 WHERE k IN (1, 2)")            # g, k unchanged
    env.sql("UPDATE {a} SET d = CAST('NaN' AS DOUBLE) WHERE k = 3")
    env.sql("UPDATE {a} SET d = -0.0 WHERE k = 4")
    env.sql("UPDATE {a} SET d = 0.0, ts = TIMESTAMP'2026-01-02 03:04:05' WHERE k = 5")
    env.sql("DELETE FROM {a} WHERE k = 6")
    env.sql("INSERT INTO {a} VALUES (NULL, NULL, NULL, NULL, NULL), (7, 'g1', 7, NULL, NULL)")
    end = env.version("a")
    cache = change_cache.ChangeCache()
    for columns in (["k", "g"], ["G"], ["v"], ["d"], ["d", "k"], [], None, ["ts", "k"]):
        own = changes.read_changes(spark, "a", path, start, end, columns)
        shared, jobs = jobs_run(spark, f"cc-{columns}", lambda columns=columns: changes.read_changes(
            spark, "a", path, start, end, columns, cache=cache))
        assert shared.weighted.schema == own.weighted.schema, columns
        assert _rows(shared) == _rows(own), columns
        assert shared.rows == own.rows
        cached = columns is not None and "ts" not in columns
        assert (jobs == 0) == cached or columns == ["k", "g"], (columns, jobs)   # the first reads
        assert shared.weighted._jdf.queryExecution().analyzed().getClass().getSimpleName() == "LocalRelation"
    assert changes.read_changes(spark, "a", path, start, start + 1, ["k", "g"], cache=cache).rows == 0


def test_two_tables_over_one_input_read_its_change_once_each_as_its_own(spark, tmp_path, feed_reads):
    """Side by side (their own sessions): one read of `a`'s feed for both. `keys` reads k and g,
    which the change leaves as they were: its input did not change, its table stays; `per_g` reads
    v and takes the change."""
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING, v DECIMAL(12,2)",
                      [(1, "x", 1), (2, "y", 2), (2, "y", 2), (None, "x", None), (3, None, 3)])
    env.write({"per_g": "SELECT g, COUNT(*) AS n, SUM(v) AS s FROM a GROUP BY g",
               "keys": "SELECT k, g FROM a WHERE k IS NOT NULL"}, threads=2)
    env.refresh()
    env.sql("UPDATE {a} SET v = v * 10 WHERE k IN (1, 2)")
    feed_reads.clear()
    records = env.refresh()
    assert feed_reads == [env.path("a")]
    for name in ("per_g", "keys"):
        assert records[name].state == SUCCEEDED, records[name].state_message
        assert records[name].refresh_action == INCREMENTAL
        env.check(name)
    assert records["keys"].refresh_strategy == "no_row_changed"
    assert (records["keys"].num_inserted_rows, records["keys"].num_deleted_rows) == (0, 0)
    assert records["per_g"].num_inserted_rows > 0

    env.sql("INSERT INTO {a} VALUES (4, 'x', 4), (NULL, NULL, NULL)")
    env.sql("DELETE FROM {a} WHERE k = 1")
    feed_reads.clear()
    records = env.refresh()
    assert feed_reads == [env.path("a")]
    for name in ("per_g", "keys"):
        assert records[name].refresh_action == INCREMENTAL, records[name].state_message
        assert records[name].num_inserted_rows + records[name].num_deleted_rows > 0
        env.check(name)


def test_a_dt_read_by_another_hands_it_the_change_it_committed(spark, tmp_path, feed_reads):
    """`down` reads `up`'s change as `up`'s refresh wrote it, kept by the run: no read of `up`'s
    feed, and `down` equals its recompute (NULLs, duplicates, updates, deletes)."""
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING, v DECIMAL(12,2)",
                      [(1, "x", 1), (2, "y", 2), (2, "y", 2), (None, "x", None), (3, None, 3)])
    env.write({"up": "SELECT k, g, v * 2 AS v2 FROM a WHERE v IS NULL OR v < 100",
               "down": "SELECT g, COUNT(*) AS n, SUM(v2) AS s FROM up GROUP BY g"})
    env.refresh()
    for batch in (["UPDATE {a} SET v = v + 10 WHERE k = 2", "DELETE FROM {a} WHERE k = 3",
                   "INSERT INTO {a} VALUES (4, NULL, NULL), (1, 'x', 1)"],
                  ["UPDATE {a} SET g = NULL WHERE k = 1", "UPDATE {a} SET v = 500 WHERE k = 4"]):
        for statement in batch:
            env.sql(statement)
        feed_reads.clear()
        records = env.refresh()
        for name in ("up", "down"):
            assert records[name].refresh_action == INCREMENTAL, records[name].state_message
            env.check(name)
        assert records["up"].refresh_strategy in ("rows_appended", "slice_replaced", "rows_merged"), records["up"]
        assert env.path("up") not in feed_reads and env.path("a") in feed_reads, feed_reads
        assert records["down"].num_inserted_rows + records["down"].num_deleted_rows > 0


def test_a_column_the_cache_does_not_hold_or_a_schema_change_reads_its_own(spark, tmp_path, feed_reads):
    """A DT reading a TIMESTAMP takes its change from a read of its own; after a column is added
    to the input, every DT reads its own (the shared read is of one schema)."""
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING, ts TIMESTAMP", [(1, "x", None), (2, "y", None)])
    env.write({"by_ts": "SELECT ts, COUNT(*) AS n FROM a GROUP BY ts",
               "by_g": "SELECT g, COUNT(*) AS n FROM a GROUP BY g"})
    env.refresh()
    env.sql("INSERT INTO {a} VALUES (3, 'x', TIMESTAMP'2026-03-29 02:30:00'), (4, NULL, NULL)")
    feed_reads.clear()
    records = env.refresh()
    assert sorted(feed_reads) == [env.path("a")] * 2      # the shared one, then by_ts's own
    env.sql("ALTER TABLE {a} ADD COLUMNS (extra INT)")
    env.sql("UPDATE {a} SET g = 'z' WHERE k = 1")
    feed_reads.clear()
    records |= env.refresh()
    assert sorted(feed_reads) == [env.path("a")] * 2      # each its own
    for name in ("by_ts", "by_g"):
        assert records[name].state == SUCCEEDED, records[name].state_message
        assert records[name].refresh_action == INCREMENTAL
        env.check(name)


def test_a_change_past_the_budget_serves_only_the_refresh_that_read_it(spark, tmp_path, feed_reads):
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING", [(1, "x")])
    path, start = env.path("a"), env.version("a")
    env.insert("a", [(2, "y"), (3, "z")])
    cache = change_cache.ChangeCache(max_cells=5)       # 2 rows x 3 fields do not fit
    first = changes.read_changes(spark, "a", path, start, start + 1, ["k"], cache=cache)
    second = changes.read_changes(spark, "a", path, start, start + 1, ["g"], cache=cache)
    assert (first.rows, second.rows) == (2, 2)
    assert len(feed_reads) == 2
    cache = change_cache.ChangeCache()
    changes.read_changes(spark, "a", path, start, start + 1, ["k"], cache=cache)
    changes.read_changes(spark, "a", path, start, start + 1, ["g"], cache=cache)
    assert len(feed_reads) == 3
    cache.clear()
    changes.read_changes(spark, "a", path, start, start + 1, ["g"], cache=cache)
    assert len(feed_reads) == 4
