"""A small table at a pinned version read over its file list (engine/runtime/listed.py, through
engine/runtime/pinned.py): the same rows as Delta's own read at that version (deletion vectors,
partitions, column mapping, a version behind later deletes), queries over it run fewer jobs (no
Delta file filtering), and a larger table is read as Delta reads it."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers import jobs_run

pytestmark = pytest.mark.spark


def _index(df) -> str:
    """The class of the file index `df` reads its table through."""
    return df._jdf.queryExecution().analyzed().relation().location().getClass().getSimpleName()


@pytest.fixture
def tables(spark, tmp_path):
    """Two small tables with deletion vectors, one of them partitioned with column mapping;
    each with a row deleted at version 2 (the version read) and rows deleted after it."""
    made = {}
    for name, extra in (("plain", ""), ("parted", "PARTITIONED BY (p)")):
        path = str(tmp_path / name)
        mapped = ", delta.columnMapping.mode = 'name'" if extra else ""
        spark.sql(f"CREATE TABLE delta.`{path}` (k INT, p STRING, v DOUBLE) USING delta {extra} "
                  f"TBLPROPERTIES (delta.enableDeletionVectors = true{mapped})")
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a', 1.5), (2, 'a', NULL), (3, 'b', 3.0), "
                  "(NULL, 'b', 4.0), (5, NULL, 5.0), (5, NULL, 5.0)")
        spark.sql(f"DELETE FROM delta.`{path}` WHERE k = 3")                # version 2: a deletion vector
        spark.sql(f"DELETE FROM delta.`{path}` WHERE k = 1 OR p = 'b'")     # after the version read
        made[name] = path
    return made


def test_a_small_table_read_over_its_files_has_delta_rows_and_plans_no_file_filtering(spark, tables):
    from dtcli.engine.runtime.pinned import PinnedReads, _read

    query = "SELECT p, count(*), sum(v) FROM {} WHERE k > 1 OR p = 'a' GROUP BY p"
    run = PinnedReads()
    try:
        for name, path in tables.items():
            listed = run.at(spark, path, 2)
            assert _index(listed) == "TahoeBatchFileIndex", name
            delta = _read(spark, path, 2)
            assert listed.columns == delta.columns
            assert sorted(map(tuple, listed.collect()), key=repr) == sorted(map(tuple, delta.collect()), key=repr)
            assert len(listed.collect()) == 5, name          # the deleted row is not read, the later changes not seen
            listed.createOrReplaceTempView("listed_t")
            delta.createOrReplaceTempView("delta_t")
            assert sorted(spark.sql(query.format("listed_t")).collect(), key=repr) == \
                sorted(spark.sql(query.format("delta_t")).collect(), key=repr), name
            # the table's state is built by now: planning the plain read still filters its files
            # (twice, deletion vectors enabled), with a job each; the listed one plans none
            over_files = jobs_run(spark, f"delta-{name}", lambda: spark.sql(query.format("delta_t")).collect())[1]
            over_list = jobs_run(spark, f"listed-{name}", lambda: spark.sql(query.format("listed_t")).collect())[1]
            assert over_list + 2 <= over_files, (name, over_list, over_files)
        # the partitioned table's partitions are still pruned (a run's first read: not cached)
        run.clear()
        parted = run.at(spark, tables["parted"], 2).filter("p = 'a'")
        assert "PartitionFilters: [isnotnull(p" in parted._jdf.queryExecution().executedPlan().toString()
        assert sorted(r.k for r in parted.collect()) == [1, 2]
    finally:
        run.clear()
        for view in ("listed_t", "delta_t"):
            spark.catalog.dropTempView(view)


def test_a_table_over_the_size_is_listed_when_it_has_few_files_else_read_as_delta_reads_it(
        spark, tables, monkeypatch):
    from dtcli.engine.runtime import listed, pinned

    monkeypatch.setattr(listed, "LISTED_BYTES", 10)
    files = len(spark.read.format("delta").option("versionAsOf", 2).load(tables["plain"]).inputFiles())
    for most, index in ((files, "TahoeBatchFileIndex"), (files - 1, "TahoeLogFileIndex")):
        monkeypatch.setattr(listed, "LISTED_FILES", most)
        run = pinned.PinnedReads()
        try:
            read = run.at(spark, tables["plain"], 2)
            assert _index(read) == index, f"{files} files, listed up to {most}"
            assert len(read.collect()) == 5
        finally:
            run.clear()


def test_a_table_dt_writes_is_listed_once_per_version_and_never_served_stale(spark, tables, tmp_path):
    """listed.read, as refreshes read the DT and its internal tables: the newest version over
    its file list, the same list for every read of that version, a new one once the table moves
    on, and none kept for a table created again at the same path."""
    from dtcli.engine.runtime import listed

    path = tables["plain"]
    try:
        first = listed.read(spark, path)
        assert _index(first) == "TahoeBatchFileIndex"
        assert sorted(r.k for r in first.collect()) == [2, 5, 5]         # version 3, the newest
        again = listed.read(spark, path)
        plain = spark.read.format("delta").load(path)
        plain.filter("k > 1").collect()         # its state built: what is left is planning the scan
        # the second read of the version is neither listed again nor filtered (twice with
        # deletion vectors), as a plain read of the table is
        assert jobs_run(spark, "listed-again", again.filter("k > 1").collect)[1] + 2 <= \
            jobs_run(spark, "plain", plain.filter("k > 1").collect)[1]
        assert sorted((r.k for r in listed.read(spark, path, 2).collect()), key=repr) == [1, 2, 5, 5, None]
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (7, 'c', 7.0)")
        # Delta's commit wrote the new version's files into its checksum file: listed from there
        moved, jobs = jobs_run(spark, "listed-moved", lambda: listed.read(spark, path))
        assert jobs == 0 and _index(moved) == "TahoeBatchFileIndex"
        assert sorted(r.k for r in moved.collect()) == [2, 5, 5, 7]
        shutil.rmtree(path)
        spark.sql(f"CREATE TABLE delta.`{path}` (k INT, p STRING, v DOUBLE) USING delta")
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (9, 'z', 9.0)")
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (10, 'z', 9.0), (11, 'z', 9.0), (12, 'z', 9.0)")
        assert sorted(r.k for r in listed.read(spark, path).collect()) == [9, 10, 11, 12]   # version 2, as a list kept of the old one
    finally:
        listed.forget()


def test_a_version_whose_checksum_lists_no_files_is_listed_by_a_job(spark, tables, monkeypatch):
    """A checksum file without the files (a table of many files, another writer): the list is
    made from the table's state instead, with the same rows."""
    from dtcli.engine.runtime import listed

    monkeypatch.setattr(listed, "_checksum_files", lambda snapshot: None)
    try:
        for path in tables.values():
            made, jobs = jobs_run(spark, f"listed-state-{path}", lambda path=path: listed.read(spark, path, 2))
            assert jobs >= 1 and _index(made) == "TahoeBatchFileIndex"
            delta = spark.read.format("delta").option("versionAsOf", 2).load(path)
            assert sorted(map(tuple, made.collect()), key=repr) == sorted(map(tuple, delta.collect()), key=repr)
    finally:
        listed.forget()


def test_a_version_another_writer_left_without_checksum_is_listed_from_its_log_without_a_job(
        spark, tmp_path, monkeypatch):
    """A table written by a writer that leaves no checksum files (deltalake, as the TPC-H
    sources): its files are listed from the log read in Python, with the jobs of Delta's state
    rebuild spared and the same rows at every version; a table whose files need more than paths
    (deletion vectors) is still listed by Delta."""
    from dtcli.engine.runtime import listed

    def versions(path: str):
        return {v: sorted(map(tuple, spark.read.format("delta").option("versionAsOf", v).load(path).collect()),
                          key=repr) for v in (1, 2, 3)}

    paths = {}
    for name, dv in (("plain", "false"), ("vectors", "true")):
        path = paths[name] = str(tmp_path / name)
        spark.sql(f"CREATE TABLE delta.`{path}` (k INT, s STRING, v DECIMAL(10, 2)) USING delta "
                  f"TBLPROPERTIES (delta.enableDeletionVectors = {dv}, delta.enableChangeDataFeed = true)")
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a', 1.50), (2, NULL, NULL), (3, 'c', 3.00)")
        spark.sql(f"DELETE FROM delta.`{path}` WHERE k = 2")
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (4, 'd', 4.00), (4, 'd', 4.00)")
    expected = {name: versions(path) for name, path in paths.items()}
    for path in paths.values():
        for crc in (tmp_path / path).glob("_delta_log/*.crc"):
            crc.unlink()
    try:
        for name, path in paths.items():
            for version, rows in expected[name].items():
                listed.forget()
                spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()     # as a new application finds it
                made, jobs = jobs_run(spark, f"log-{name}-{version}", lambda p=path, v=version: listed.read(spark, p, v))
                assert _index(made) == "TahoeBatchFileIndex"
                assert sorted(map(tuple, made.collect()), key=repr) == rows, (name, version)
                monkeypatch.setattr(listed, "_log_files", lambda jvm, snapshot: None)
                listed.forget()
                spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
                _, by_state = jobs_run(spark, f"state-{name}-{version}",
                                       lambda p=path, v=version: listed.read(spark, p, v))
                monkeypatch.undo()
                if name == "plain":     # listed from the log: the state rebuild's two jobs spared
                    assert jobs + 2 <= by_state, (version, jobs, by_state)
                else:                   # deletion vectors enabled: listed by Delta, as before
                    assert jobs >= by_state, (version, jobs, by_state)
    finally:
        listed.forget()
