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


def _commit_actions(path: str, version: int) -> list[dict]:
    import json
    from pathlib import Path

    log = Path(path) / "_delta_log" / f"{version:020d}.json"
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


SMALL_CHANGE_TABLES = {"lines": "SELECT k, g, v FROM a WHERE k IS NULL OR k % 2 = 0",
                       "per_g": "SELECT g, COUNT(*) AS n, SUM(v) AS s FROM a GROUP BY g"}


def _small_change(env: Env):
    """Create the DTs, change a few of their 4,000 source rows, refresh."""
    env.refresh()
    env.sql("DELETE FROM {a} WHERE k IN (4, 1000, 2001)")
    env.sql("UPDATE {a} SET v = v + 1 WHERE k IN (6, 3000) OR k IS NULL")
    env.sql("INSERT INTO {a} VALUES (5000, 'g0', 1), (NULL, NULL, NULL)")
    return env.refresh()


def test_a_small_change_rewrites_the_changed_rows_not_the_table(spark, tmp_path, monkeypatch):
    """Deletion vectors + a keyed or located replace in place (`spark.dt.wholeWriteBytes` below
    the DTs' size): the refresh commit marks the old rows deleted and writes only the new ones,
    and `show`'s row count (JVM-free) stays exact."""
    from dtcli.engine.runtime import slice_commit
    from dtcli.state.delta_log import table_info

    monkeypatch.setattr(slice_commit, "WHOLE_BYTES", 0)

    env = Env(spark, tmp_path)
    rows = [(k, f"g{k % 50}", k % 7) for k in range(1, 4001)] + [(None, None, None)] * 2
    env.create_source("a", "k INT, g STRING, v DECIMAL(12,2)", rows)
    env.write(SMALL_CHANGE_TABLES)      # small_table_rows off (the default): in place
    records = _small_change(env)
    project = env.project()
    for name, most in (("lines", 20), ("per_g", 10)):
        assert records[name].refresh_action == INCREMENTAL, records[name].state_message
        env.check(name)
        path = project.table_path(name)
        info = table_info(path)
        assert info.rows == _table(env, name).count()
        actions = _commit_actions(path, info.version)
        adds = [a["add"] for a in actions if "add" in a]
        assert any(a.get("deletionVector") for a in adds), "old rows are marked, not rewritten"
        import json
        written = sum(json.loads(a["stats"])["numRecords"] for a in adds
                      if not a.get("deletionVector"))
        assert 0 < written <= most, f"{name}: {written} rows written for a change of a few"
    assert (records["lines"].num_inserted_rows, records["lines"].num_deleted_rows) == (4, 4)


def test_a_small_table_takes_its_change_as_one_overwrite_with_the_same_rows_and_counts(spark, tmp_path):
    """Under `small_table_rows` (here 50,000; off by default) the DT is written whole: one overwrite commit, no
    deletion vector, the frontier in it; the rows equal the recompute and the statistics count
    the change, as the in-place commit's do. A DT another DT reads takes its change in place."""
    import json

    from dtcli.state.delta_log import FRONTIER_KEY, table_info

    env = Env(spark, tmp_path)
    rows = [(k, f"g{k % 50}", k % 7) for k in range(1, 4001)] + [(None, None, None)] * 2
    env.create_source("a", "k INT, g STRING, v DECIMAL(12,2)", rows)
    tables = {**SMALL_CHANGE_TABLES, "read": "SELECT k, g FROM a WHERE k % 3 = 0",
              "reader": "SELECT g, COUNT(*) AS n FROM read GROUP BY g"}
    env.write(tables, table_yml=dict.fromkeys(tables, "small_table_rows: 50000\n"))
    records = _small_change(env)
    project = env.project()
    for name in (*SMALL_CHANGE_TABLES, "read", "reader"):
        assert records[name].refresh_action == INCREMENTAL, records[name].state_message
        env.check(name)
        info = table_info(project.table_path(name))
        assert info.rows == _table(env, name).count()
        commit = next(a["commitInfo"] for a in _commit_actions(project.table_path(name), info.version)
                      if "commitInfo" in a)
        overwrite = commit["operationParameters"].get("mode") == "Overwrite" and \
            "predicate" not in commit["operationParameters"]
        assert overwrite == (name != "read"), (name, commit["operation"], commit["operationParameters"])
        assert json.loads(commit["userMetadata"])[FRONTIER_KEY]["run_id"] == records[name].run_id
    assert records["lines"].refresh_strategy == "table_rewritten"
    assert (records["lines"].num_inserted_rows, records["lines"].num_deleted_rows) == (4, 4)
    assert records["lines"].num_copied_rows == _table(env, "lines").count() - 4
    assert records["per_g"].refresh_strategy == "keys_recomputed" or "own_rows" in records["per_g"].refresh_strategy


def test_a_change_that_does_not_fit_the_table_refreshes_full_never_a_wrong_answer(spark, tmp_path):
    """Rows deleted from a DT behind dt's back: the next change removes rows the DT no longer
    holds. Each apply path notices inside the job that writes (the commit never happens) and the
    refresh recomputes the table, with the reason."""
    env = Env(spark, tmp_path)
    env.create_source("e", "k INT NOT NULL, g STRING, v DECIMAL(12,2) NOT NULL")
    # big enough for ADAPTIVE to choose INCREMENTAL for a one-row change
    env.sql("INSERT INTO {e} SELECT id, CASE WHEN id = 3 THEN 'y' ELSE CAST(id % 7 AS STRING) END, "
            "CAST(id AS DECIMAL(12,2)) FROM range(1, 500)")
    tables = {"sliced": "SELECT k, g, v FROM e",
              "summed": "SELECT g, COUNT(*) AS n, SUM(v) AS s FROM e GROUP BY g",
              "ranked": "SELECT g, k, v, RANK() OVER (PARTITION BY g ORDER BY v) AS r FROM e"}
    env.write(tables, table_yml=dict.fromkeys(tables, "refresh_mode: adaptive\n"))
    env.refresh()
    project = env.project()
    for name in tables:
        spark.sql(f"DELETE FROM delta.`{project.table_path(name)}` WHERE g = 'y'")
    env.sql("DELETE FROM {e} WHERE k = 3")
    records = env.refresh()
    for name in tables:
        record = records[name]
        assert record.state == SUCCEEDED, record.state_message
        assert record.refresh_action == "FULL", (name, record.refresh_action, record.refresh_strategy)
        assert "does not hold" in (record.state_message or ""), record.state_message
        env.check(name)


def test_a_forced_incremental_refresh_that_fails_fails_instead_of_refreshing_full(spark, tmp_path):
    """The same change that does not fit the table, with `refresh_mode: incremental`: the
    refresh FAILS with the error, as Snowflake does for a forced mode, and the DT is left as it
    was (no commit); recomputing it is the user's call (`--full-refresh`)."""
    from dtcli.model import FAILED
    from dtcli.state.delta_log import table_version

    env = Env(spark, tmp_path)
    env.create_source("e", "k INT NOT NULL, g STRING, v DECIMAL(12,2) NOT NULL",
                      [(k, "y" if k == 3 else str(k % 3), k) for k in range(1, 10)])
    tables = {"sliced": "SELECT k, g, v FROM e",
              "summed": "SELECT g, COUNT(*) AS n, SUM(v) AS s FROM e GROUP BY g"}
    env.write(tables)         # the harness's projects force refresh_mode: incremental
    env.refresh()
    project = env.project()
    before = {}
    for name in tables:
        spark.sql(f"DELETE FROM delta.`{project.table_path(name)}` WHERE g = 'y'")
        before[name] = table_version(project.table_path(name))
    env.sql("DELETE FROM {e} WHERE k = 3")
    records = env.refresh()
    for name in tables:
        record = records[name]
        assert record.state == FAILED, (name, record.state, record.refresh_action)
        assert record.refresh_action == INCREMENTAL
        assert "does not hold" in record.state_message and "refresh_mode is incremental" in record.state_message, \
            record.state_message
        assert table_version(project.table_path(name)) == before[name], "a failed refresh commits nothing"


def test_a_source_column_a_dt_does_not_read_leaves_it_incremental(spark, tmp_path):
    """A column added to a source: a DT that never selects it refreshes INCREMENTAL as usual; a
    DT selecting every column (`*`) now has one more and is reinitialized; a change to the type of
    a column a DT reads reinitializes it, naming the column."""
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING, v INT", [(1, "x", 1), (2, "y", 2)])
    tables = {"picked": "SELECT k, g FROM a WHERE k > 0", "everything": "SELECT * FROM a",
              "values_of": "SELECT k, v FROM a"}
    env.write(tables)
    env.refresh()
    env.sql("ALTER TABLE {a} ADD COLUMNS (note STRING)")
    env.sql("INSERT INTO {a} VALUES (3, 'z', 3, 'new')")
    records = env.refresh()
    assert records["picked"].refresh_action == INCREMENTAL, records["picked"].state_message
    assert records["values_of"].refresh_action == INCREMENTAL, records["values_of"].state_message
    assert records["everything"].refresh_action == REINITIALIZE
    for name in tables:
        assert records[name].state == SUCCEEDED, records[name].state_message
        env.check(name)
    assert "note" in _table(env, "everything").columns
    # v becomes a string: only the DT reading it is recomputed, with the reason
    current = spark.read.format("delta").load(env.path("a"))
    (current.selectExpr("k", "g", "CAST(v AS STRING) AS v", "note").write.format("delta")
     .mode("overwrite").option("overwriteSchema", "true").save(env.path("a")))
    records = env.refresh()
    assert records["values_of"].refresh_action == REINITIALIZE
    assert "column v" in (records["values_of"].reinit_reason or ""), records["values_of"].reinit_reason
    for name in tables:
        assert records[name].state == SUCCEEDED, records[name].state_message
        env.check(name)


def test_a_one_row_aggregate_commits_nothing_for_a_change_its_conditions_drop(spark, tmp_path):
    """A scalar aggregate recomputes its one row (single_row_recomputed) only when a changed row
    passes its WHERE: a change of rows it filters out, by insert, update or delete, commits
    the frontier alone, and the row still equals its recompute. MAX keeps it off running totals."""
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING, v DECIMAL(12,2)",
                      [(1, "x", 5), (2, "y", 7), (3, "x", None), (4, None, 9)])
    env.write({"top": "SELECT MAX(v) AS mv, COUNT(*) AS n, SUM(v) AS s FROM a WHERE g = 'x'"})
    runs = env.run_batches([
        ["INSERT INTO {a} VALUES (5, 'y', 100), (6, NULL, 50)"],     # filtered out
        ["UPDATE {a} SET v = 1000 WHERE k = 2", "DELETE FROM {a} WHERE k = 4"],
        ["INSERT INTO {a} VALUES (7, 'x', 11)"],                      # passes
        ["UPDATE {a} SET g = 'x' WHERE k = 5"],                       # moves into the filter
        ["DELETE FROM {a} WHERE g = 'x' AND v > 50"],                 # the maximum leaves
    ])
    taken = [records["top"].refresh_strategy for records in runs[1:]]
    assert taken == ["no_row_changed", "no_row_changed", "single_row_recomputed",
                     "single_row_recomputed", "single_row_recomputed"], taken
