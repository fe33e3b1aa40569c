"""A source version its writer left without a checksum file, read from the Parquet files its log
lists (engine/runtime/log_read.py, through engine/runtime/pinned.py): Delta's rows at every
version (a column added later read as NULL in older files, deletes, duplicates, NULLs), with no
Spark job; a table whose files need more than their paths (deletion vectors, partitions), a
version with a checksum, or a table of another id than the plan's, is read by Delta."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers import jobs_run

pytestmark = pytest.mark.spark

DELTA_INDEXES = ("TahoeLogFileIndex", "TahoeBatchFileIndex")


def _index(df) -> str:
    return df._jdf.queryExecution().analyzed().collectLeaves().head().relation().location().getClass().getSimpleName()


def _rows(df) -> list[tuple]:
    return sorted(map(tuple, df.collect()), key=repr)


def _delta(spark, path: str, version: int) -> list[tuple]:
    return _rows(spark.read.format("delta").option("versionAsOf", version).load(path))


@pytest.fixture
def written(spark, tmp_path):
    """Tables written by Spark, then stripped of their checksum files as another writer leaves
    them: `plain` (no deletion vectors; a column added at version 3), `vectors`, `parted`.
    Returns (paths, each table's rows at versions 1-4 as Delta reads them)."""
    paths, expected = {}, {}
    for name, props, extra in (("plain", "false", ""), ("vectors", "true", ""),
                               ("parted", "false", "PARTITIONED BY (s)")):
        path = paths[name] = str(tmp_path / name)
        spark.sql(f"CREATE TABLE delta.`{path}` (k INT, s STRING, v DECIMAL(10, 2)) USING delta {extra} "
                  f"TBLPROPERTIES (delta.enableDeletionVectors = {props}, delta.enableChangeDataFeed = true)")
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a', 1.50), (2, NULL, NULL), (3, 'c', 3.00), (3, 'c', 3.00)")
        spark.sql(f"DELETE FROM delta.`{path}` WHERE k = 2")
        spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (w BIGINT)")
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (4, 'd', 4.00, 40), (NULL, 'e', NULL, NULL)")
        expected[name] = {v: _delta(spark, path, v) for v in (1, 2, 3, 4)}
    for path in paths.values():
        for crc in (tmp_path / path).glob("_delta_log/*.crc"):
            crc.unlink()
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()      # as a new application finds them
    return paths, expected


def test_a_version_without_checksum_reads_as_its_files_with_deltas_rows_and_no_job(spark, written):
    from dtcli.engine.runtime.pinned import PinnedReads, forget_carried

    paths, expected = written
    for version in (1, 2, 3, 4):
        run = PinnedReads()
        try:
            df, jobs = jobs_run(spark, f"log-read-{version}", lambda v=version, r=run: r.at(spark, paths["plain"], v))
            assert jobs == 0 and _index(df) not in DELTA_INDEXES, version
            assert _rows(df) == expected["plain"][version], version
            assert df.columns == (["k", "s", "v"] if version < 3 else ["k", "s", "v", "w"])
            # a query over it: NULLs, duplicates and the added column as Delta has them
            df.createOrReplaceTempView("log_read_t")
            spark.read.format("delta").option("versionAsOf", version).load(paths["plain"]) \
                .createOrReplaceTempView("delta_t")
            query = "SELECT s, count(*), sum(v), count(k) FROM {} GROUP BY s"
            assert _rows(spark.sql(query.format("log_read_t"))) == _rows(spark.sql(query.format("delta_t")))
        finally:
            run.clear()
            spark.catalog.dropTempView("log_read_t")
            spark.catalog.dropTempView("delta_t")
    forget_carried()


def test_what_needs_more_than_its_files_or_is_another_table_is_read_by_delta(spark, written, tmp_path):
    from dtcli.engine.runtime.pinned import PinnedReads, forget_carried

    paths, expected = written
    run = PinnedReads()
    try:
        for name in ("vectors", "parted"):
            df = run.at(spark, paths[name], 2)
            assert _index(df) in DELTA_INDEXES, name
            assert _rows(df) == expected[name][2], name
        # the plan knows the table by another id (it was dropped and created again): Delta reads it
        df = run.at(spark, paths["plain"], 4, table_id="an-older-table")
        assert _index(df) in DELTA_INDEXES and _rows(df) == expected["plain"][4]
    finally:
        run.clear()
        forget_carried()
    # a version with its checksum file (Spark's own writes) is read by Delta, which needs no job for it
    path = str(tmp_path / "with_crc")
    shutil.copytree(paths["plain"], path)
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (5, 'f', 5.00, 50)")
    run = PinnedReads()
    try:
        df = run.at(spark, path, 5)
        assert _index(df) in DELTA_INDEXES
        assert len(df.collect()) == len(expected["plain"][4]) + 1
    finally:
        run.clear()
        forget_carried()
