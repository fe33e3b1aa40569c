"""Building a table's Delta state on a side thread (engine/runtime/table_state.py), as an incremental
refresh does for the tables it scans after reading its changes."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers import jobs_run

pytestmark = pytest.mark.spark


def _cold(spark) -> None:
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()


@pytest.fixture
def as_large(monkeypatch) -> None:
    """The tables read as tables too large to be read over their file list are (a small one
    has no state to build: engine/runtime/listed.py)."""
    from dtcli.engine.runtime import listed

    monkeypatch.setattr(listed, "LISTED_BYTES", 0)
    monkeypatch.setattr(listed, "LISTED_FILES", 0)


def test_prefetched_state_spares_a_later_scan_its_state_jobs(spark, tmp_path, as_large):
    from dtcli.engine.runtime.table_state import Prefetch

    path = str(tmp_path / "t")
    (spark.range(2000).selectExpr("id AS k", "CAST(id % 7 AS STRING) AS s").repartition(4)
     .write.format("delta").save(path))

    def plan_scan():
        spark.read.format("delta").load(path).filter("k BETWEEN 10 AND 20") \
            ._jdf.queryExecution().executedPlan()

    _cold(spark)
    cold = jobs_run(spark, "state-cold", plan_scan)[1]
    _cold(spark)
    spark.sparkContext.setJobGroup("state-prefetch", "prefetch")
    try:
        Prefetch(spark, [(path, None)]).join()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    tracker = spark.sparkContext.statusTracker()
    # its jobs ran under the job group of the thread that started it (a refresh's progress)
    assert tracker.getJobIdsForGroup("state-prefetch"), "the prefetch ran no job in the group"
    warm = jobs_run(spark, "state-warm", plan_scan)[1]
    assert warm < cold, f"planning the scan ran {warm} jobs after the prefetch, {cold} without"


def test_a_table_that_cannot_be_read_is_left_to_the_refresh(spark, tmp_path, as_large):
    """A missing table (or version) neither fails the prefetch nor stops it: the tables after it
    in the list are still loaded, and their scans find their state built."""
    from dtcli.engine.runtime.table_state import Prefetch

    path = str(tmp_path / "after")
    spark.range(500).selectExpr("id AS k").write.format("delta").save(path)

    def plan_scan():
        spark.read.format("delta").load(path).filter("k < 5")._jdf.queryExecution().executedPlan()

    _cold(spark)
    cold = jobs_run(spark, "missing-cold", plan_scan)[1]
    _cold(spark)
    missing = str(tmp_path / "missing")
    Prefetch(spark, [(missing, None), (path, 3), (path, None)]).join()
    warm = jobs_run(spark, "missing-warm", plan_scan)[1]
    assert warm < cold, f"the table after the missing one was not loaded: {warm} jobs, {cold} cold"


def test_the_state_is_loaded_at_the_version_asked_for(spark, tmp_path):
    from dtcli.engine.runtime.table_state import load

    path = str(tmp_path / "v")
    spark.range(10).write.format("delta").save(path)
    spark.range(10, 20).write.format("delta").mode("append").save(path)
    load(spark, path, 0)
    load(spark, path)
    with pytest.raises(Exception, match="(?i)version"):
        load(spark, path, 7)


def test_a_run_reads_a_table_once_per_version_for_every_session(spark, tmp_path):
    """engine/runtime/pinned.py: refreshes side by side (each in a session of its own) that read
    one table at one older version share one snapshot: the rows are that version's, each
    session's view is its own, and a later read does not build the snapshot's state again."""
    from dtcli.engine.runtime.pinned import PinnedReads

    path = str(tmp_path / "pinned")
    spark.range(40).selectExpr("id AS k").repartition(2).write.format("delta").save(path)
    spark.range(40, 45).selectExpr("id AS k").write.format("delta").mode("append").save(path)
    spark.read.format("delta").load(path).count()      # the table's newest version is 1
    one, two = spark.newSession(), spark.newSession()
    count = "SELECT count(*) FROM pinned_in WHERE k < 30"

    def fresh():
        one.read.format("delta").option("versionAsOf", 0).load(path).createOrReplaceTempView("pinned_in")
        return one.sql(count).collect()[0][0]

    assert fresh() == 30
    alone = jobs_run(one, "pinned-fresh", fresh)[1]
    pinned = PinnedReads()
    try:
        pinned.at(one, path, 0).createOrReplaceTempView("pinned_in")
        assert one.sql(count).collect()[0][0] == 30        # builds the snapshot's state once

        def shared():
            pinned.at(two, path, 0).createOrReplaceTempView("pinned_in")
            return two.sql(count).collect()[0][0]

        assert shared() == 30 and two.table("pinned_in").count() == 40      # version 0's rows, not 1's
        again = jobs_run(two, "pinned-shared", shared)[1]
        assert again < alone, f"a shared read ran {again} jobs, a read of its own {alone}"
        two.catalog.dropTempView("pinned_in")
        assert one.table("pinned_in").count() == 40     # the other session's view is untouched
    finally:
        pinned.clear()      # as a run's end does: its cached rows would outlive the test


def test_a_run_builds_a_pinned_tables_state_once_for_all_its_refreshes(spark, tmp_path, request):
    """The 22 TPC-H DTs read lineitem at one version in 17 refreshes of a run: the first
    refresh's prefetch builds its state, the others' run no job for it (their own scans find
    it built), and a new run (a new PinnedReads) loads it again. A table as large as lineitem
    is not read over its file list (as a small one is, with no state to build: no job)."""
    from dtcli.engine.runtime.pinned import PinnedReads
    from dtcli.engine.runtime.table_state import Prefetch

    path = str(tmp_path / "shared")
    spark.range(300).selectExpr("id AS k").repartition(3).write.format("delta").save(path)
    spark.range(300, 310).selectExpr("id AS k").write.format("delta").mode("append").save(path)
    _cold(spark)
    listed_run = PinnedReads()
    try:
        assert jobs_run(spark, "shared-listed", lambda: Prefetch(spark, [(path, 1)], listed_run).join())[1] == 0
    finally:
        listed_run.clear()
    request.getfixturevalue("as_large")
    _cold(spark)
    run = PinnedReads()
    first = jobs_run(spark, "shared-first", lambda: Prefetch(spark, [(path, 1)], run).join())[1]
    again = jobs_run(spark, "shared-again", lambda: Prefetch(spark, [(path, 1)], run).join())[1]
    assert first > 0 and again == 0, f"the second refresh's prefetch ran {again} jobs, the first {first}"
    run.clear()
    assert jobs_run(spark, "shared-next-run", lambda: Prefetch(spark, [(path, 1)], run).join())[1] > 0


def _reads_from_memory(session, sql: str) -> bool:
    return "InMemoryRelation" in session.sql(sql)._jdf.queryExecution().withCachedData().toString()


def test_a_run_keeps_its_small_inputs_rows_in_memory_within_its_budget(spark, tmp_path):
    """engine/runtime/pinned.py, with `spark.dt.inputCacheBytes` set: a small table the run reads
    at a pinned version a second time is cached for the run, so later queries plan no Delta scan
    of it; the views refreshes make of it and drop do not let it go; a table read once, or beyond
    the run's budget, is read from its files; the run's end lets it go; unset, nothing is cached."""
    from dtcli.engine.runtime.listed import file_bytes
    from dtcli.engine.runtime.pinned import CACHE_SETTING, PinnedReads

    small, other = str(tmp_path / "small"), str(tmp_path / "other")
    spark.range(40).selectExpr("id AS k").repartition(2).write.format("delta").save(small)
    spark.range(40, 45).selectExpr("id AS k").write.format("delta").mode("append").save(small)
    spark.range(10).selectExpr("id AS k").write.format("delta").save(other)
    one, two = spark.newSession(), spark.newSession()
    for session in (one, two):      # room for the first table read, not for the second
        session.conf.set(CACHE_SETTING, str(file_bytes(small, 0)))
    run = PinnedReads()
    try:
        count = "SELECT count(*) FROM pinned_small WHERE k < 30"
        run.at(one, small, 0).createOrReplaceTempView("pinned_small")
        assert not _reads_from_memory(one, count) and run.cached() == 0      # read once: as it is
        assert one.sql(count).collect()[0][0] == 30
        run.at(two, small, 0).createOrReplaceTempView("pinned_small")
        run.at(one, small, 0).createOrReplaceTempView("pinned_small")
        assert _reads_from_memory(one, count) and _reads_from_memory(two, count)
        assert two.sql(count).collect()[0][0] == 30 and two.table("pinned_small").count() == 40
        # as a refresh does with its views: one of its own over the input's, both dropped
        two.table("pinned_small").createOrReplaceTempView("pinned_own")
        two.catalog.dropTempView("pinned_own")
        two.catalog.dropTempView("pinned_small")
        assert _reads_from_memory(one, count)
        cached = jobs_run(one, "pinned-cached", lambda: one.sql(count).collect())[1]
        one.read.format("delta").option("versionAsOf", 0).load(small).createOrReplaceTempView("pinned_own")
        fresh = jobs_run(one, "pinned-fresh-read", lambda: one.sql(count.replace("pinned_small", "pinned_own")).collect())[1]
        one.catalog.dropTempView("pinned_own")
        assert cached < fresh, f"a query over the cached rows ran {cached} jobs, over the files {fresh}"
        for _ in range(2):
            run.at(one, other, 0).createOrReplaceTempView("pinned_other")
        assert not _reads_from_memory(one, "SELECT * FROM pinned_other") and run.cached() == 1
        run.clear()
        assert run.cached() == 0 and not _reads_from_memory(one, count)
        assert one.sql(count).collect()[0][0] == 30

        one.conf.unset(CACHE_SETTING)      # off by default: every table read from its files
        off = PinnedReads()
        for _ in range(2):
            off.at(one, small, 0).createOrReplaceTempView("pinned_small")
        assert not _reads_from_memory(one, count) and off.cached() == 0
        assert one.sql(count).collect()[0][0] == 30
    finally:
        run.clear()
        for session in (one, two):
            for view in ("pinned_small", "pinned_other"):
                session.catalog.dropTempView(view)


def test_a_later_run_of_the_application_reuses_a_version_by_its_tables_id(spark, tmp_path):
    """engine/runtime/pinned.py: in one application (a `--watch`), a run finds ready a version an
    earlier run read, when the plan names the table's Delta id: no Spark job, the same rows. A
    table dropped and created again at the same path counts its versions from 0 again under
    another id: its version 0 is read anew, never taken for the old table's; a directory put
    back from a copy and written on (same id, another version 1) is read anew too."""
    from dtcli.engine.runtime.pinned import PinnedReads
    from dtcli.state.delta_log import table_info

    path = str(tmp_path / "carried")

    def make(first: int) -> str:
        spark.range(first, first + 30).selectExpr("id AS k").repartition(2).write.format("delta").save(path)
        shutil.rmtree(str(tmp_path / "at0"), ignore_errors=True)
        shutil.copytree(path, str(tmp_path / "at0"))
        spark.range(100, 105).selectExpr("id AS k").write.format("delta").mode("append").save(path)
        return table_info(path).table_id

    def keys(run, table_id):
        return sorted(r.k for r in run.at(spark, path, 0, table_id=table_id).collect())

    old_id = make(0)
    first = PinnedReads()
    assert keys(first, old_id) == list(range(30))
    first.clear()                       # the run ends; the application goes on
    later = PinnedReads()
    read, jobs = jobs_run(spark, "carried-again", lambda: later.at(spark, path, 0, table_id=old_id)
                          ._jdf.queryExecution().executedPlan())
    assert jobs == 0, f"reading a version an earlier run read ran {jobs} jobs"
    assert keys(later, old_id) == list(range(30))
    latest = sorted(r.k for r in later.at(spark, path, 1, table_id=old_id).collect())
    later.clear()
    # the directory put back as it was at version 0 and written on: another version 1, same id
    shutil.rmtree(path)
    shutil.copytree(str(tmp_path / "at0"), path)
    spark.range(200, 203).selectExpr("id AS k").write.format("delta").mode("append").save(path)
    put_back = PinnedReads()
    assert latest == list(range(30)) + list(range(100, 105))
    assert sorted(r.k for r in put_back.at(spark, path, 1, table_id=old_id).collect()) == \
        list(range(30)) + [200, 201, 202]
    put_back.clear()
    shutil.rmtree(path)
    new_id = make(50)
    assert new_id != old_id
    again = PinnedReads()
    assert keys(again, new_id) == list(range(50, 80))     # the new table's version 0
    again.clear()
