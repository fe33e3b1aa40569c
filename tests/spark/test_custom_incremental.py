"""The seed's five custom incremental examples (REFRESH USING), in `dialect: snowflake` (the seed's
own CREATE DYNAMIC TABLE statements pasted as table files where the seed gives them) and as Spark
SQL, over one set of sources. After each batch of inserts, updates and deletes every table must
equal what its statement defines, computed here in plain Python from the changes the test made;
a repeat run with no change is NO_DATA.

Both projects compile to the same Spark SQL (tests/unit/test_custom_config.py checks it without a
JVM), so by default only the Snowflake one runs in Spark; DT_CUSTOM_BOTH_DIALECTS=1 runs both."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

import pytest

from dtcli import api
from dtcli.model import CREATION, FULL, INCREMENTAL, NO_DATA, SUCCEEDED
from tests.custom_seed_projects import COLUMNS, SOURCES, seed_projects
from tests.helpers import checkpoint_blocks, write_project
from tests.sched_helpers import in_process

pytestmark = pytest.mark.spark

class Sources:
    """The source tables, and the same rows kept in Python for the expected results."""

    def __init__(self, spark, data):
        self.spark, self.data = spark, data
        self.rows: dict[str, list[tuple]] = {n: [] for n in SOURCES}
        self.inserted: dict[str, list[tuple]] = {n: [] for n in SOURCES}    # every row ever inserted
        for name, columns in SOURCES.items():
            spark.sql(f"CREATE TABLE delta.`{data / name}` ({columns}) USING delta "
                      "TBLPROPERTIES (delta.enableChangeDataFeed = true)")

    def sql(self, statement: str) -> None:
        self.spark.sql(statement.replace("{", f"delta.`{self.data}/").replace("}", "`"))

    def insert(self, name: str, rows: list[tuple]) -> None:
        values = ", ".join("(" + ", ".join(_literal(v) for v in row) + ")" for row in rows)
        self.sql(f"INSERT INTO {{{name}}} VALUES {values}")
        self.rows[name] += rows
        self.inserted[name] += rows

    def delete(self, name: str, column: str, key) -> list[tuple]:
        self.sql(f"DELETE FROM {{{name}}} WHERE {column} = {key}")
        gone = [r for r in self.rows[name] if r[0] == key]
        self.rows[name] = [r for r in self.rows[name] if r[0] != key]
        return gone

    def update(self, name: str, column: str, value, where: str, key) -> None:
        self.sql(f"UPDATE {{{name}}} SET {column} = {_literal(value)} WHERE {where} = {key}")
        index = [c.split()[0] for c in SOURCES[name].split(", ")].index(column)
        self.rows[name] = [tuple(value if i == index else v for i, v in enumerate(r)) if r[0] == key else r
                           for r in self.rows[name]]


def _literal(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, datetime):
        return f"TIMESTAMP'{value:%Y-%m-%d %H:%M:%S}'"
    return f"'{value}'" if isinstance(value, str) else str(value)


class Expected:
    """What each statement defines, from the changes between two refreshes (plain Python)."""

    def __init__(self):
        self.clicks: list[tuple] = []
        self.deletions: list[tuple] = []
        self.scores: dict[int, int] = {}
        self.best: dict[int, int] = {}
        self.seen_clicks = 0
        self.seen_scores = 0

    def refreshed(self, src: Sources, new_deletes: list[tuple]) -> None:
        pages = {p[0]: p for p in src.rows["pages"]}
        for click in src.inserted["clicks"][self.seen_clicks:]:
            page = pages.get(click[2], (None, None, None))
            self.clicks.append((click[0], click[1], page[1], page[2], click[3]))
        self.seen_clicks = len(src.inserted["clicks"])
        for player, score in src.inserted["match_results"][self.seen_scores:]:
            self.scores[player] = self.scores.get(player, 0) + score
            self.best[player] = max(self.best.get(player, score), score)
        self.seen_scores = len(src.inserted["match_results"])
        self.deletions += new_deletes

    def leaderboard(self) -> set[tuple]:
        ranked = sorted(self.best.items(), key=lambda kv: (-kv[1], kv[0]))
        return set(ranked[:3])

    @staticmethod
    def orders(src: Sources) -> set[tuple]:
        names = dict(src.rows["customers"])
        return {(o, amount, names.get(c)) for o, c, amount in src.rows["orders"]}


def _rows(spark, root, name) -> list[tuple]:
    return sorted((tuple(r) for r in spark.read.format("delta").load(str(root / "warehouse" / name)).collect()),
                  key=repr)


def _run(spark, roots, now, all_tables=True):
    out = []
    for root in roots:
        blocks = checkpoint_blocks(spark)
        result = api.run(api.check(root, now=now), all_tables=all_tables, launcher=in_process(spark))
        assert checkpoint_blocks(spark, at_most=blocks) <= blocks, "a refresh left checkpointed change rows behind"
        records = {r.name: r for r in result.records}
        assert all(r.state == SUCCEEDED for r in records.values()), {n: r.state_message for n, r in records.items()}
        out.append(records)
    return out


def _check(spark, roots, src: Sources, expected: Expected) -> None:
    for root in roots:
        where = root.name
        assert _rows(spark, root, "dt_enriched_clicks") == sorted(expected.clicks, key=repr), where
        assert _rows(spark, root, "dt_deletions_log") == sorted(expected.deletions, key=repr), where
        assert dict(_rows(spark, root, "dt_player_scores")) == expected.scores, where
        assert set(_rows(spark, root, "dt_leaderboard")) == expected.leaderboard(), where
        assert set(_rows(spark, root, "dt_orders_enriched")) == Expected.orders(src), where


def test_the_seed_examples_in_both_dialects(spark, tmp_path):
    roots = seed_projects(tmp_path)
    if not os.environ.get("DT_CUSTOM_BOTH_DIALECTS"):
        roots = roots[:1]
    src = Sources(spark, tmp_path / "data")
    expected = Expected()
    t0 = datetime.now(timezone.utc)
    ts = datetime(2025, 1, 1, 8, 0)
    src.insert("pages", [(1, "Home", "main"), (2, "Docs", "help"), (3, "Blog", None)])
    src.insert("customers", [(10, "Ada"), (11, "Grace")])
    src.insert("clicks", [(1, 100, 1, ts), (2, 101, 2, ts), (3, 100, 9, ts)])
    src.insert("users", [(1, "ann", "a@x"), (2, "bob", "b@x"), (3, "cid", "c@x")])
    src.insert("match_results", [(1, 10), (2, 5), (1, 7)])
    src.insert("orders", [(100, 10, 50), (101, 11, 20), (102, 12, 5)])
    # 1. creation: every existing row through the statement as an INSERT; the deletions log
    #    (initialize: on_schedule) waits for its first tick
    first = _run(spark, roots, t0, all_tables=False)
    for records in first:
        assert "dt_deletions_log" not in records
        assert {r.refresh_action for r in records.values()} == {FULL}
        assert {r.refresh_trigger for r in records.values()} == {CREATION}
    src.delete("users", "id", 3)          # before the log exists: the log's initial refresh sees no delete
    expected.refreshed(src, [])
    for records in _run(spark, roots, t0 + timedelta(minutes=2), all_tables=False):
        assert records["dt_deletions_log"].refresh_trigger == CREATION
        assert records["dt_player_scores"].refresh_action == NO_DATA      # match_results did not move
    _check(spark, roots, src, expected)

    # 2. a batch of inserts, updates and deletes in several commits
    src.update("pages", "page_title", "Home!", "page_id", 1)              # read at each refresh's snapshot
    src.insert("clicks", [(4, 102, 1, ts), (5, 100, 3, ts)])
    src.delete("clicks", "click_id", 2)                                   # APPEND_ONLY: ignored
    src.update("users", "email", "bob@y", "id", 2)                        # an update is not a deletion
    deleted = src.delete("users", "id", 1)
    src.insert("match_results", [(3, 30), (2, 1)])
    src.update("match_results", "score", 99, "player_id", 2)              # APPEND_ONLY: ignored
    src.update("orders", "amount", 55, "order_id", 100)
    src.update("orders", "amount", 56, "order_id", 100)                   # twice: one net update
    src.delete("orders", "order_id", 101)
    src.insert("orders", [(103, 11, 7)])
    expected.refreshed(src, deleted)
    for records in _run(spark, roots, t0 + timedelta(minutes=4)):
        assert {r.refresh_action for r in records.values()} == {INCREMENTAL}, records
        scores = records["dt_player_scores"]
        assert (scores.num_inserted_rows, scores.num_updated_rows) == (1, 1)
    _check(spark, roots, src, expected)

    # 3. an overwrite of unchanged rows (delete + re-insert of the same values) cancels out on
    #    the RELY key of orders; a re-inserted user is not a deletion; a delete is logged once
    src.delete("orders", "order_id", 102)
    src.insert("orders", [(102, 12, 5)])
    src.insert("users", [(1, "ann", "a@x")])
    deleted = src.delete("users", "id", 2)
    src.insert("match_results", [(4, 12), (5, 12), (1, 1)])
    src.insert("clicks", [(6, 103, 2, ts)])
    expected.refreshed(src, deleted)
    for records in _run(spark, roots, t0 + timedelta(minutes=6)):
        assert records["dt_orders_enriched"].num_inserted_rows + records["dt_orders_enriched"].num_deleted_rows \
            + records["dt_orders_enriched"].num_updated_rows == 0
    _check(spark, roots, src, expected)

    # 4. nothing changed: NO_DATA everywhere, nothing written
    versions = [_versions(root) for root in roots]
    for records in _run(spark, roots, t0 + timedelta(minutes=8)):
        assert {r.refresh_action for r in records.values()} == {NO_DATA}
    assert [_versions(root) for root in roots] == versions
    _check(spark, roots, src, expected)


def _versions(root) -> dict[str, int]:
    from dtcli.state.delta_log import table_version

    return {n: table_version(str(root / "warehouse" / n)) for n in COLUMNS}


MERGE_LOG = """MERGE INTO SELF AS t
USING (SELECT id, v FROM events CHANGES() WHERE METADATA$ACTION = 'INSERT'{dedupe}) AS s
ON t.id = s.id
WHEN MATCHED THEN UPDATE SET t.v = s.v
WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"""


def test_run_time_errors_fail_with_the_reason_and_change_nothing(spark, tmp_path):
    from dtcli.model import FAILED
    from dtcli.state.delta_log import table_version

    data = tmp_path / "data" / "events"
    root = write_project(tmp_path / "p", {"latest": MERGE_LOG.format(dedupe="")},
                         config="sources:\n  events: {path: ../data/events}\n",
                         table_yml={"latest": "columns: [{name: id, type: INT}, {name: v, type: INT}]\n"})
    events = f"delta.`{data}`"

    def create_events():
        spark.sql(f"CREATE TABLE {events} (id INT, v INT) USING delta TBLPROPERTIES (delta.enableChangeDataFeed = true)")
        spark.sql(f"INSERT INTO {events} VALUES (1, 1), (2, 2)")

    def run():
        result = api.run(api.check(root), all_tables=True, launcher=in_process(spark))
        return {r.name: r for r in result.records}["latest"]

    def rows():
        return sorted(tuple(r) for r in spark.read.format("delta").load(str(root / "warehouse" / "latest")).collect())

    create_events()
    assert run().state == SUCCEEDED and rows() == [(1, 1), (2, 2)]
    # several source rows for one target row: the refresh fails, names the ON condition, writes nothing
    spark.sql(f"INSERT INTO {events} VALUES (1, 10), (1, 11)")
    version = table_version(str(root / "warehouse" / "latest"))
    failed = run()
    assert failed.state == FAILED and failed.state_code == "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"
    assert "t.id = s.id" in failed.state_message and "QUALIFY ROW_NUMBER()" in failed.state_message
    assert table_version(str(root / "warehouse" / "latest")) == version and rows() == [(1, 1), (2, 2)]
    # the statement edited (CREATE OR ALTER) and a nullable column added at the end: the data is
    # kept and the same changes are read again
    (root / "tables" / "latest.sql").write_text(
        MERGE_LOG.format(dedupe="\n  QUALIFY ROW_NUMBER() OVER (PARTITION BY id ORDER BY v DESC) = 1"))
    (root / "tables" / "latest.yml").write_text(
        "columns: [{name: id, type: INT}, {name: v, type: INT}, {name: note, type: STRING}]\n")
    fixed = run()
    assert (fixed.state, fixed.refresh_action) == (SUCCEEDED, INCREMENTAL), fixed.state_message
    assert rows() == [(1, 11, None), (2, 2, None)]
    # change data vacuumed away: fails with the reason and the fix, no silent reinitialization
    spark.sql(f"UPDATE {events} SET v = 5 WHERE id = 2")
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        spark.sql(f"VACUUM {events} RETAIN 0 HOURS")
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    version = table_version(str(root / "warehouse" / "latest"))
    gone = run()
    assert gone.state == FAILED and "no longer available" in gone.state_message, gone.state_message
    assert "dt drop" in gone.state_message and "logRetentionDuration" in gone.state_message
    assert table_version(str(root / "warehouse" / "latest")) == version
    # the source recreated: fails, says so
    import shutil

    shutil.rmtree(data)
    create_events()
    spark.sql(f"INSERT INTO {events} VALUES (3, 3)")
    spark.sql(f"INSERT INTO {events} VALUES (4, 4)")
    recreated = run()
    assert recreated.state == FAILED and "recreated" in recreated.state_message, recreated.state_message
    assert rows() == [(1, 11, None), (2, 2, None)]


def test_backfill_start_at_and_downstream_readers(spark, tmp_path):
    """A custom table copied from a snapshot reads changes after start_at; a query DT and another
    custom table read it (its change data feed) incrementally."""
    from dtcli.errors import DtError

    data = tmp_path / "data"
    for name in ("events", "snap"):
        spark.sql(f"CREATE TABLE delta.`{data / name}` (id INT, v INT) USING delta "
                  "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    spark.sql(f"INSERT INTO delta.`{data / 'snap'}` VALUES (0, 0)")
    spark.sql(f"INSERT INTO delta.`{data / 'events'}` VALUES (1, 1)")       # version 1: before start_at's point
    spark.sql(f"INSERT INTO delta.`{data / 'events'}` VALUES (2, 2)")       # version 2: read
    cols = "columns: [{name: id, type: INT}, {name: v, type: INT}]\n"
    root = write_project(tmp_path / "p", {
        "copy": "INSERT INTO SELF SELECT id, v FROM events CHANGES(INFORMATION => APPEND_ONLY)",
        "again": "INSERT INTO SELF SELECT * EXCLUDE (METADATA$ACTION, METADATA$ISUPDATE) FROM copy CHANGES()",
        "total": "SELECT COUNT(*) AS n, SUM(v) AS s FROM copy",
    }, config="sources:\n  events: ../data/events\n  snap: ../data/snap\n",
        table_yml={"copy": cols + "backfill: {from: snap}\nstart_at: {version: 1}\n", "again": cols,
                   "total": "refresh_mode: incremental\n"})

    def run():
        result = api.run(api.check(root), all_tables=True, launcher=in_process(spark))
        records = {r.name: r for r in result.records}
        assert all(r.state == SUCCEEDED for r in records.values()), {n: r.state_message for n, r in records.items()}
        return records

    def rows(name):
        return sorted(tuple(r) for r in spark.read.format("delta").load(str(root / "warehouse" / name)).collect())

    created = run()
    assert created["copy"].num_copied_rows == 1 and rows("copy") == [(0, 0)]
    assert rows("again") == [(0, 0)] and rows("total") == [(1, 0)]
    second = run()
    assert second["copy"].refresh_action == INCREMENTAL and rows("copy") == [(0, 0), (2, 2)]
    assert rows("again") == [(0, 0), (2, 2)] and rows("total") == [(2, 2)]
    spark.sql(f"INSERT INTO delta.`{data / 'events'}` VALUES (3, 3)")
    third = run()
    assert third["total"].refresh_action == INCREMENTAL and third["again"].refresh_action == INCREMENTAL
    assert rows("copy") == rows("again") == [(0, 0), (2, 2), (3, 3)] and rows("total") == [(3, 5)]
    # start_at is creation-only
    (root / "tables" / "copy.yml").write_text(cols + "backfill: {from: snap}\nstart_at: {version: 2}\n")
    with pytest.raises(DtError, match="start_at is set at creation only"):
        api.check(root)
