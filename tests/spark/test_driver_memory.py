"""What a long-lived dt application (a `--watch` engine, a run of many DTs) keeps in the driver's
heap between refreshes: Spark settings in spark_conf.BASE_CONF keep it bounded."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_spark_pool_threads_stay_few_so_the_sessions_they_inherit_are_bounded(spark):
    """Each new thread of Spark's broadcast and query-stage pools keeps the session active where
    it was created (often a session Delta cloned for a commit, with a table snapshot) for its
    whole life. dt caps those pools (spark_conf.BASE_CONF): twelve queries broadcasting at once
    leave at most 8 broadcast threads, where Spark's default would start one per query."""
    from concurrent.futures import ThreadPoolExecutor

    def broadcast_join(k: int) -> int:
        left = spark.range(50).selectExpr(f"id + {k} AS id")
        return left.join(spark.range(20).hint("broadcast"), "id").count()

    with ThreadPoolExecutor(12) as pool:
        assert sorted(pool.map(broadcast_join, range(12))) == sorted(max(0, 20 - k) for k in range(12))
    threads = spark._jvm.java.lang.Thread.getAllStackTraces().keySet().toArray()
    names = [t.getName() for t in threads]
    for prefix in ("broadcast-exchange", "shuffle-exchange", "ResultQueryStageExecution"):
        alive = [n for n in names if n.startswith(prefix)]
        assert len(alive) <= 8, f"{len(alive)} {prefix} threads: {alive}"


def test_a_broadcast_hash_table_starts_with_a_small_page(spark):
    """Spark builds a broadcast join's hash table on the driver with a memory manager of its own,
    made from the JVM's system properties with unlimited memory: without dt's `spark.buffer.pageSize`
    its first page is 64 MB for any number of rows, held until the broadcast is cleaned up. The
    same construction as Spark's (HashedRelation) must get dt's 4 MB page."""
    jvm = spark._jvm
    unlimited = jvm.java.lang.Long.MAX_VALUE
    manager = jvm.org.apache.spark.memory.UnifiedMemoryManager(
        jvm.org.apache.spark.SparkConf(), unlimited, unlimited // 2, 1)
    page = jvm.org.apache.spark.memory.TaskMemoryManager(manager, 0).pageSizeBytes()
    assert page == 4 * 2**20, f"{page / 2**20:g} MB pages"
