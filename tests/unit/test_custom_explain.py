"""`dt explain` of custom incremental tables (no JVM): the statement kind, each CHANGES() input
with its information mode, SELF reads, snapshot-read tables, and warnings a user can act on."""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from tests.helpers import dt, write_project

SOURCES = ("sources:\n  scores: data/scores\n  users: {path: data/users, primary_key: [id], rely: true}\n"
           "  pages: data/pages\n")
TOP = """REFRESH USING (
  MERGE INTO SELF AS t
  USING (
    SELECT s.player_id, s.score
    FROM scores CHANGES(INFORMATION => APPEND_ONLY) AS s
    JOIN pages AS p ON p.id = s.player_id
    UNION ALL
    SELECT player_id, score FROM SELF
  ) AS src
  ON t.player_id = src.player_id
  WHEN MATCHED THEN UPDATE SET t.score = src.score
  WHEN NOT MATCHED THEN INSERT (player_id, score) VALUES (src.player_id, src.score)
)"""
TOTALS = """MERGE INTO SELF AS t
USING (SELECT player_id, SUM(score) AS n FROM scores CHANGES(INFORMATION => APPEND_ONLY) GROUP BY player_id) AS s
ON t.player_id = s.player_id
WHEN MATCHED THEN UPDATE SET t.score = t.score + s.n
WHEN NOT MATCHED THEN INSERT (player_id, score) VALUES (s.player_id, s.n)"""
DELETED = """INSERT INTO SELF SELECT id FROM users CHANGES() WHERE METADATA$ACTION = 'DELETE'"""
COLUMNS = "columns: [{name: player_id, type: INT}, {name: score, type: INT}]\n"


def _project(tmp_path):
    root = write_project(tmp_path / "p", {"top": TOP, "totals": TOTALS, "deleted": DELETED,
                                          "after": "SELECT id FROM deleted"}, config=SOURCES,
                         table_yml={"top": COLUMNS, "totals": COLUMNS, "deleted": "columns: [{name: id, type: INT}]\n"})
    cdf = {"delta.enableChangeDataFeed": "true"}
    write_deltalake(str(root / "data/scores"), pa.table({"player_id": pa.array([1, 2], pa.int32()),
                                                         "score": pa.array([5, 6], pa.int32())}), configuration=cdf)
    DeltaTable(str(root / "data/scores")).delete("player_id = 2")
    write_deltalake(str(root / "data/users"), pa.table({"id": pa.array([1], pa.int32())}), configuration=cdf)
    write_deltalake(str(root / "data/pages"), pa.table({"id": pa.array([1], pa.int32())}))
    return root


def test_explain_shows_the_statement_changes_self_and_snapshot_reads(tmp_path):
    root = _project(tmp_path)
    data = dt("explain", "top", "-p", str(root), "--format", "json").json()
    assert data["refresh_mode"] == "CUSTOM_INCREMENTAL"
    custom = data["custom"]
    assert custom["statement"] == "MERGE INTO SELF"
    assert custom["changes"] == [{"name": "scores", "information": "APPEND_ONLY", "line": 5,
                                  "rely_primary_key": None, "compacted_per_key": False}]
    assert custom["self_reads"] == [8] and custom["snapshot_tables"] == ["pages"]
    assert "every existing source row as an INSERT" in custom["initial_population"]
    assert [o["operator"] for o in data["operators"]] == [
        "MERGE INTO SELF", "scores CHANGES(INFORMATION => APPEND_ONLY)", "SELF", "FROM pages"]
    warnings = " | ".join(data["warnings"])
    assert "the MERGE source src is not provably unique on the ON keys (player_id)" in warnings
    assert "QUALIFY ROW_NUMBER()" in warnings
    assert "scores is read with CHANGES(INFORMATION => APPEND_ONLY) but its history has DELETE commits" in warnings
    assert "source pages has no change data feed" not in warnings      # read whole: no feed needed
    text = dt("explain", "top", "-p", str(root))
    assert text.code == 0 and "MERGE INTO SELF; CHANGES() of: scores (APPEND_ONLY, as recorded: no RELY key)" \
        in " ".join(text.out.split())


def test_explain_grouped_merge_source_and_rely_keys(tmp_path):
    root = _project(tmp_path)
    totals = dt("explain", "totals", "-p", str(root), "--format", "json").json()
    assert not any("provably unique" in w for w in totals["warnings"])        # GROUP BY the ON key
    deleted = dt("explain", "deleted", "-p", str(root), "--format", "json").json()
    assert deleted["custom"]["changes"][0]["rely_primary_key"] == ["id"]
    assert deleted["custom"]["statement"] == "INSERT INTO SELF"
    assert any("after reads deleted, which has no RELY primary key" in w for w in deleted["warnings"])


def test_an_append_only_source_created_by_an_overwrite_gets_no_warning(tmp_path):
    """dt seed (and many loaders) create a table with an overwrite that removes nothing: that is
    no deleted or updated row, so APPEND_ONLY loses nothing there; a later real overwrite does."""
    root = write_project(tmp_path / "p", {"log": "INSERT INTO SELF SELECT id FROM clicks CHANGES(INFORMATION => APPEND_ONLY)"},
                         config="sources:\n  clicks: data/clicks\n",
                         table_yml={"log": "columns: [{name: id, type: INT}]\n"})
    path, cdf = str(root / "data/clicks"), {"delta.enableChangeDataFeed": "true"}
    write_deltalake(path, pa.table({"id": pa.array([1], pa.int32())}), mode="overwrite", configuration=cdf)
    write_deltalake(path, pa.table({"id": pa.array([2], pa.int32())}), mode="append")
    assert not dt("explain", "log", "-p", str(root), "--format", "json").json()["warnings"]
    write_deltalake(path, pa.table({"id": pa.array([3], pa.int32())}), mode="overwrite")
    warnings = dt("explain", "log", "-p", str(root), "--format", "json").json()["warnings"]
    assert any("its history has WRITE commits" in w for w in warnings), warnings
