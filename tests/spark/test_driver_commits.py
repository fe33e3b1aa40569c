"""Commits written on the driver (engine/runtime/driver_write.py, state/driver_commit.py): a DT's
one row over its totals, a kept aggregate's adjusted groups, a slice of a DT's rows replaced, a
frontier-only commit.

Differential: the aggregates of test_aggregate_totals.py over the same batches (NULLs, duplicates,
updates, deletes, groups emptied and made again), with a DT reading one of them (so its change
feed is read), refreshed with the setting on: every DT equals its recompute after every batch,
every table the driver wrote in a batch (DTs and internal tables) has a change feed over the
batch's versions equal to the difference of its rows at those versions (read by Spark), a version
the driver wrote has a checksum file Delta validates against its own state, and Spark writes the
tables again after them. Off (two batches), the driver writes none.
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from dtcli.engine.runtime import driver_write
from dtcli.state import internal
from dtcli.state.delta_log import open_table, read_frontier
from tests.spark.harness import Env

pytestmark = pytest.mark.spark

A_ROWS = [(1, "x", 10, Decimal("1.10")), (2, "x", 20, Decimal("2.25")), (3, "y", 5, None), (None, "w", 1, Decimal("9.99")),
          (4, None, 3, Decimal("3.33")), (5, "z", 20, Decimal("0.01")), (5, "z", 20, Decimal("0.01"))]
B_ROWS = [(1, Decimal("0.5")), (2, Decimal("1.25")), (5, None)]
BATCHES = [
    # duplicates, NULL keys and values, a new group
    ["INSERT INTO {a} VALUES (9, 'v', 100, 1.00), (2, 'x', 20, 2.25), (11, NULL, NULL, NULL)",
     "INSERT INTO {b} VALUES (9, 2.5)"],
    # a change that reaches no group of `joined`
    ["INSERT INTO {b} VALUES (99, 1.5)"],
    # a group emptied, updates moving rows between groups and to NULL
    ["DELETE FROM {a} WHERE g = 'v'", "UPDATE {a} SET d = NULL WHERE k = 1", "UPDATE {a} SET g = 'y' WHERE k = 5"],
    # (almost) every row gone, then back
    ["DELETE FROM {a} WHERE k IS NULL OR k > 1", "UPDATE {a} SET v = -1 WHERE k = 1"],
    ["INSERT INTO {a} VALUES (20, 'x', 3, 1.50), (21, 'x', 4, 2.50), (22, 'y', 5, NULL), (23, NULL, 6, 3.00), "
     "(24, 'z', 7, 4.00), (25, 'z', 8, 5.00), (26, 'q', 9, 6.00)"],
]

TABLES = {
    "per_g": "SELECT g, SUM(d) AS s, AVG(v) AS av, COUNT(*) AS n FROM a GROUP BY g",
    "joined": "SELECT a.g, SUM(a.d * b.w) AS s FROM a JOIN b ON a.k = b.k GROUP BY a.g",
    "total": "SELECT COUNT(*) AS n, SUM(d) AS s, AVG(v) AS av FROM a WHERE v > 0",
    "few": "SELECT SUM(v) AS s FROM a HAVING COUNT(*) > 6",
    "above": "SELECT g, s FROM per_g WHERE n > 1",
    # rows of its own: a change that deletes replaces the slice of the changed rows' keys
    "positive": "SELECT k, g, v FROM a WHERE v > 2",
}


def _tables(env: Env) -> list[str]:
    """Every table the project writes: its DTs and their internal tables."""
    project = env.project()
    out = [project.table_path(n) for n in TABLES]
    for name in TABLES:
        out += [internal.path(project.warehouse, name, role) for role in internal.existing(project.warehouse, name)]
    return out


def _versions(paths: list[str]) -> dict[str, int]:
    return {p: open_table(p).version() for p in paths}


def _driver_commits(path: str, after: int = -1) -> int:
    """Commits of the table's log past version `after` that the driver wrote (their engineInfo
    says so)."""
    found = 0
    for f in sorted((Path(path) / "_delta_log").glob("*.json")):
        if int(f.name.split(".")[0]) <= after:
            continue
        info = json.loads(f.read_text().splitlines()[0]).get("commitInfo", {})
        found += info.get("engineInfo") == driver_write.ENGINE_INFO
    return found


def _rows(spark, path: str, version: int) -> Counter:
    return Counter(tuple(r) for r in spark.read.format("delta").option("versionAsOf", version).load(path).collect())


def _feed_matches(spark, path: str, start: int, end: int) -> None:
    """The table's change feed over start+1..end, netted, is the difference of its rows."""
    if end <= start:
        return
    feed = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", start + 1) \
        .option("endingVersion", end).load(path)
    data = [c for c in feed.columns if c not in ("_change_type", "_commit_version", "_commit_timestamp")]
    net: Counter = Counter()
    for r in feed.collect():
        sign = 1 if r["_change_type"] in ("insert", "update_postimage") else -1
        net[tuple(r[c] for c in data)] += sign
    before, after = _rows(spark, path, start), _rows(spark, path, end)
    want = Counter(after)
    want.subtract(before)
    assert {k: v for k, v in net.items() if v} == {k: v for k, v in want.items() if v}, (path, start, end)


def _checksum_agrees(spark, path: str) -> None:
    """The table's newest version has a checksum file Delta reads (its protocol, metadata and
    files, with no job: listed.py lists the version from it) and finds equal to its own state of
    the version (Delta's validation rebuilds the state and fails on a mismatch)."""
    from dtcli.engine.runtime import listed

    snapshot = listed._location(spark.read.format("delta").load(path)).getSnapshot()
    assert snapshot.checksumOpt().isDefined(), path
    assert listed._checksum_files(snapshot) is not None, path
    jvm = spark._jvm
    assert snapshot.validateChecksum(jvm.scala.Predef.Map().empty()), path
    # its files as Delta's state of the version has them (Delta's own comparison also tells a
    # missing `tags` from an empty one, which Spark's checksum files do not keep either)
    crc = snapshot.checksumOpt().get().allFiles().get()
    rebuilt = snapshot.allFiles().collectAsList()

    def files(listed):
        return sorted((str(f.path()), f.size(), f.modificationTime(), f.dataChange(), str(f.stats()),
                       f.tagsOrEmpty().toString(), f.deletionVector()) for f in listed)

    assert files(jvm.scala.jdk.javaapi.CollectionConverters.asJava(crc)) == files(rebuilt), path


def _run(spark, tmp_path, on: bool, monkeypatch, batches=BATCHES) -> tuple[Env, int]:
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING, v INT, d DECIMAL(12,2)", A_ROWS)
    env.create_source("b", "k INT, w DECIMAL(10,3)", B_ROWS)
    env.write(TABLES)
    # the refreshes run in sessions of their own, made before this test: the setting as the
    # project's spark.conf would give it to them, through dt's own reading of it
    real = driver_write.enabled
    monkeypatch.setattr(driver_write, "enabled", lambda s: on and real(s))
    try:
        env.refresh()
        for name in TABLES:
            env.check(name)
        paths = _tables(env)
        before = _versions(paths)
        for batch in batches:
            for statement in batch:
                env.sql(statement)
            for name, record in env.refresh().items():
                assert record.state == "SUCCEEDED", (name, record.state_message)
                env.check(name)
            after = _versions(paths)
            # the feed of what the driver wrote (Delta's own commits are Delta's to get right)
            for path in paths:
                if _driver_commits(path, before[path]):
                    _feed_matches(spark, path, before[path], after[path])
                if _driver_commits(path, after[path] - 1):
                    _checksum_agrees(spark, path)
            before = after
    finally:
        monkeypatch.setattr(driver_write, "enabled", real)
    return env, sum(_driver_commits(p) for p in _tables(env))


def test_driver_commits_equal_spark_commits(spark, tmp_path, monkeypatch):
    env, written = _run(spark, tmp_path / "on", True, monkeypatch)
    assert written >= len(BATCHES), written
    assert _driver_commits(env.project().table_path("positive")) >= 2     # a slice replaced
    # a table committed on the driver is a Delta table Spark goes on writing
    path = env.project().table_path("total")
    spark.sql(f"INSERT INTO delta.`{path}` SELECT * FROM delta.`{path}`")
    assert spark.read.format("delta").load(path).count() == 2
    _checksum_agrees(spark, path)       # Spark derived its checksum from the driver's
    frontier, _ = read_frontier(open_table(env.project().table_path("per_g")))
    assert frontier is not None and frontier.source_versions

    # off: Spark commits every one (the same refreshes' differential is test_aggregate_totals.py's)
    _, off = _run(spark, tmp_path / "off", False, monkeypatch, batches=BATCHES[:2])
    assert off == 0


def test_the_setting_turns_it_off(spark):
    assert driver_write.enabled(spark)
    spark.conf.set(driver_write.SETTING, "false")
    try:
        assert not driver_write.enabled(spark)
    finally:
        spark.conf.unset(driver_write.SETTING)


def test_a_frontier_only_commit_changes_no_row(spark, tmp_path):
    """The frontier alone, in a commit of no action: read back from the log, no row of the table
    or of its change feed moved, Spark's history lists it; and at a version Delta checkpoints
    at, Spark commits it (and writes the checkpoint)."""
    from dtcli.engine.runtime.apply import commit_nothing
    from dtcli.model import Frontier

    env = Env(spark, tmp_path)
    env.create_source("t", "k INT, s STRING", [(1, "a"), (None, None)])
    path = env.path("t")
    start = env.version("t")
    frontier = Frontier(source_versions={"x": 3}, run_id="r1")
    version = commit_nothing(spark, path, frontier)
    assert version == start + 1
    assert _driver_commits(path) == 1
    assert read_frontier(open_table(path))[0].source_versions == {"x": 3}
    _feed_matches(spark, path, start, version)
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]
    assert history["operation"] == driver_write.RECORD_FRONTIER
    while env.version("t") < 8:
        env.insert("t", [(2, "b")])
    assert commit_nothing(spark, path, frontier) == 9       # not at 10: (9 + 1) % 10 would be
    _checksum_agrees(spark, path)
    assert commit_nothing(spark, path, frontier) == 10
    assert _driver_commits(path) == 2
    assert (Path(path) / "_delta_log" / f"{10:020d}.checkpoint.parquet").exists()
    assert spark.read.format("delta").load(path).count() == 2 + 6
