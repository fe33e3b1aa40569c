"""A change feed read from its files on the driver (state/change_feed.py, through
engine/runtime/change_cache.py) against Spark's read of the same versions: the same netted rows
and types after every kind of commit a source's writers make, and no read at all (Spark reads)
where the files are not the whole feed."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from dtcli.engine.runtime import change_cache
from dtcli.model import INCREMENTAL
from tests.spark.harness import Env

pytestmark = pytest.mark.spark

DDL = "k INT, g STRING, v DECIMAL(12,2), d DOUBLE, day DATE, b BOOLEAN, n BIGINT"


def _rows(shared):
    return sorted(map(repr, shared.rows))


def _both(spark, path, start, end):
    """(the driver's read or None, Spark's read) of versions start+1..end."""
    mine = change_cache._read_files(spark, path, start, end)
    spark.conf.set(change_cache.FILES_SETTING, "false")
    try:
        theirs = change_cache._read(spark, path, start, end)
    finally:
        spark.conf.unset(change_cache.FILES_SETTING)
    return mine, theirs


def _same(mine, theirs, what):
    assert mine is not None, what
    assert [(f.name, f.dataType, f.nullable) for f in mine.fields] == \
        [(f.name, f.dataType, f.nullable) for f in theirs.fields], what
    assert _rows(mine) == _rows(theirs), what
    assert mine.complete == theirs.complete, what


def test_every_commit_kind_reads_as_spark_reads_it(spark, tmp_path):
    """Spark's INSERT, UPDATE, DELETE, MERGE; NULLs, duplicates, NaN and -0.0, a row changed and
    changed back; each commit alone and the ranges over several. A DELETE that marks rows in a
    deletion vector writes no change file (Spark finds its rows from the vectors): Spark reads
    it, as it reads a range holding a property change."""
    env = Env(spark, tmp_path)
    env.create_source("a", DDL, [(k, f"g{k % 3}", k, k / 2, None, k % 2 == 0, k * 10 ** 10)
                                 for k in range(1, 9)] + [(None,) * 7] * 2)
    path, start = env.path("a"), env.version("a")
    statements = [
        "INSERT INTO {a} VALUES (9, 'g0', 9.99, CAST('NaN' AS DOUBLE), DATE'2026-02-28', true, -1),"
        " (9, 'g0', 9.99, CAST('NaN' AS DOUBLE), DATE'2026-02-28', true, -1), (NULL, NULL, NULL, -0.0, NULL, NULL, NULL)",
        "UPDATE {a} SET v = v + 1, day = DATE'2026-01-01' WHERE k IN (1, 2)",
        "UPDATE {a} SET d = -0.0 WHERE k = 3",
        "DELETE FROM {a} WHERE k = 4",
        "ALTER TABLE {a} SET TBLPROPERTIES (delta.enableDeletionVectors = false)",
        "DELETE FROM {a} WHERE k = 5",
        "UPDATE {a} SET v = v - 1 WHERE k IN (1, 2)",      # the value changed back (not the day)
        "MERGE INTO {a} t USING (SELECT 6 AS k, 'x' AS g UNION ALL SELECT 10, 'y') s ON t.k = s.k"
        " WHEN MATCHED THEN UPDATE SET g = s.g WHEN NOT MATCHED THEN INSERT (k, g) VALUES (s.k, s.g)",
    ]
    versions = [start]
    for statement in statements:
        env.sql(statement)
        versions.append(env.version("a"))
    marked, property_change = versions[4], versions[5]
    for before, after in zip(versions, versions[1:]):
        mine, theirs = _both(spark, path, before, after)
        if after in (marked, property_change):
            assert mine is None, statements[versions.index(after) - 1]
        else:
            _same(mine, theirs, statements[versions.index(after) - 1])
    _same(*_both(spark, path, property_change, versions[-1]), "the range after the property change")
    _same(*_both(spark, path, start, versions[3]), "the range before the marked delete")
    assert _both(spark, path, start, versions[-1])[0] is None


def test_commits_whose_files_are_not_the_feed_are_left_to_spark(spark, tmp_path):
    """An overwrite (removed rows without change files), a schema change, a partitioned table,
    column mapping: no driver read; OPTIMIZE changes no data: an empty change."""
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING", [(1, "x"), (2, "y")])
    path = env.path("a")
    env.insert("a", [(3, "z")])
    v = env.version("a")
    env.sql("OPTIMIZE {a}")
    mine, theirs = _both(spark, path, v, env.version("a"))
    _same(mine, theirs, "optimize")
    assert mine.rows == []
    v = env.version("a")
    spark.createDataFrame([(5, "w")], "k INT, g STRING").write.format("delta").mode("overwrite").save(path)
    assert _both(spark, path, v, env.version("a"))[0] is None
    v = env.version("a")
    env.sql("ALTER TABLE {a} ADD COLUMNS (extra INT)")
    env.insert("a", [(6, "v", 1)])
    assert _both(spark, path, v, env.version("a"))[0] is None

    spark.sql(f"CREATE TABLE delta.`{tmp_path}/p` (k INT, g STRING) USING delta PARTITIONED BY (g) "
              "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    spark.sql(f"INSERT INTO delta.`{tmp_path}/p` VALUES (1, 'x')")
    assert change_cache._read_files(spark, f"{tmp_path}/p", 0, 1) is None
    spark.sql(f"CREATE TABLE delta.`{tmp_path}/m` (k INT, g STRING) USING delta TBLPROPERTIES "
              "(delta.enableChangeDataFeed = true, delta.columnMapping.mode = 'name', "
              "delta.minReaderVersion = 2, delta.minWriterVersion = 5)")
    spark.sql(f"INSERT INTO delta.`{tmp_path}/m` VALUES (1, 'x')")
    assert change_cache._read_files(spark, f"{tmp_path}/m", 0, 1) is None


def test_a_deltalake_writer_s_commits_read_as_spark_reads_them(spark, tmp_path, feed_reads):
    """The benchmarks' writer (deltalake, no JVM): appends and a MERGE that inserts, updates and
    deletes; then a refresh over it reads the change without a Spark job of its own."""
    path = str(tmp_path / "src")
    schema = pa.schema([("k", pa.int32()), ("g", pa.string()), ("v", pa.decimal128(12, 2))])
    write_deltalake(path, pa.table({"k": [1, 2, 3, None], "g": ["x", "y", None, "x"],
                                    "v": [pa.scalar(1, pa.decimal128(12, 2)).as_py()] * 4}, schema=schema),
                    configuration={"delta.enableChangeDataFeed": "true"})
    write_deltalake(path, pa.table({"k": [4, 4], "g": ["z", "z"], "v": [None, None]}, schema=schema),
                    mode="append")
    source = pa.table({"k": [1, 2, 5], "g": ["x2", None, "n"], "v": [None] * 3, "op": ["U", "D", "I"]},
                      schema=schema.append(pa.field("op", pa.string())))
    (DeltaTable(path).merge(source, "t.k = s.k", source_alias="s", target_alias="t")
     .when_matched_update({"g": "s.g"}, predicate="s.op = 'U'").when_matched_delete(predicate="s.op = 'D'")
     .when_not_matched_insert({"k": "s.k", "g": "s.g", "v": "s.v"}, predicate="s.op = 'I'").execute())
    for before, after in ((0, 1), (1, 2), (0, 2)):
        mine, theirs = _both(spark, path, before, after)
        _same(mine, theirs, (before, after))

    env = Env(spark, tmp_path)
    env.sources["src"] = path
    env.write({"per_g": "SELECT g, COUNT(*) AS n, SUM(v) AS s FROM src GROUP BY g"})
    env.refresh()
    write_deltalake(path, pa.table({"k": [7], "g": ["x"], "v": [None]}, schema=schema), mode="append")
    feed_reads.clear()
    records = env.refresh()
    assert records["per_g"].refresh_action == INCREMENTAL, records["per_g"].state_message
    assert feed_reads == [path] and feed_reads.by_spark == []
    env.check("per_g")
