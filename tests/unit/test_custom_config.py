"""Custom incremental tables (REFRESH USING) at `dt validate`: the file forms, CHANGES() and SELF,
and every error with its file and line (no JVM)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from dtcli.errors import DtError
from dtcli.model import CUSTOM_INCREMENTAL, Column
from dtcli.planning.checked import check
from dtcli.planning.snapshot import Snapshot
from dtcli.project import load_project
from dtcli.state.delta_log import TableInfo
from tests.helpers import dt, write_project

SOURCES = "sources:\n  clicks: data/clicks\n  pages: data/pages\n  users: data/users\n"
SCHEMAS = {"clicks": [("click_id", "INT"), ("user_id", "INT"), ("page_id", "INT"), ("click_ts", "TIMESTAMP")],
           "pages": [("page_id", "INT"), ("page_title", "STRING"), ("section", "STRING")],
           "users": [("id", "INT"), ("name", "STRING"), ("email", "STRING")]}
CLICK_COLUMNS = ("columns: [{name: click_id, type: INT}, {name: user_id, type: INT}, {name: page_title, type: STRING},"
                 " {name: section, type: STRING}, {name: click_ts, type: TIMESTAMP}]\n")
ENRICH = """
REFRESH USING (
  INSERT INTO SELF
  SELECT c.click_id, c.user_id, p.page_title, p.section, c.click_ts
  FROM clicks CHANGES(INFORMATION => APPEND_ONLY) AS c
  LEFT OUTER JOIN pages AS p ON c.page_id = p.page_id
)"""
DELETES = """
INSERT INTO SELF
SELECT * EXCLUDE (METADATA$ISUPDATE, METADATA$ACTION)
FROM users CHANGES(INFORMATION => DEFAULT)
WHERE NOT METADATA$ISUPDATE AND METADATA$ACTION = 'DELETE'"""
USER_COLUMNS = "columns: [{name: id, type: INT}, {name: name, type: STRING}, {name: email, type: STRING}]\n"


def _snapshot(project, tables=None):
    info = {n: TableInfo(1, 0, 0, True, None, None, None, tuple(Column(*c) for c in cols))
            for n, cols in SCHEMAS.items()}
    return Snapshot(datetime.now(timezone.utc), info, tables or {n: None for n in project.tables})


def _checked(tmp_path, sql: str, yml: str = CLICK_COLUMNS, dialect: str = "spark", name: str = "t"):
    root = write_project(tmp_path / "p", {name: sql}, config=f"dialect: {dialect}\n" + SOURCES,
                         table_yml={name: yml} if yml is not None else None)
    project = load_project(root)
    return check(project, _snapshot(project))


@pytest.mark.parametrize("dialect", ["spark", "snowflake"])
def test_the_seed_statements_load_with_their_changes_inputs(tmp_path, dialect):
    checked = _checked(tmp_path, ENRICH, dialect=dialect)
    table = checked.project.tables["t"]
    assert table.kind == "custom" and table.inputs == ("clicks", "pages")
    assert table.custom.change_inputs == [("clicks", "APPEND_ONLY", 4)]
    assert table.custom.snapshot_inputs == ["pages"]
    assert checked.modes["t"].mode == CUSTOM_INCREMENTAL
    assert [c.name for c in checked.schemas["t"]] == ["click_id", "user_id", "page_title", "section", "click_ts"]
    checked = _checked(tmp_path / "d", DELETES, USER_COLUMNS, dialect=dialect)
    sql = checked.customs["t"].spark_sql.lower()
    assert "except" not in sql and "users.email as email" in sql and "`metadata$isupdate`" in sql
    assert checked.project.tables["t"].custom.change_inputs == [("users", "DEFAULT", 3)]


def test_bare_statement_and_default_mode_and_self_reads(tmp_path):
    sql = """MERGE INTO SELF
USING (SELECT s.id, s.name FROM users CHANGES() s JOIN SELF cur ON cur.id = s.id) AS src
ON SELF.id = src.id
WHEN MATCHED THEN DELETE"""
    checked = _checked(tmp_path, sql, USER_COLUMNS)
    statement = checked.project.tables["t"].custom
    assert statement.kind == "MERGE" and statement.change_inputs == [("users", "DEFAULT", 2)]
    assert statement.self_lines == [2]
    assert "__dt_self AS cur" in checked.customs["t"].spark_sql


def test_a_star_sqlglot_cannot_expand_is_left_to_spark(tmp_path):
    """sqlglot cannot join on a column neither side has: the statement keeps its star and Spark
    names the problem when it runs (validate does not fail on what only Spark resolves)."""
    sql = ("INSERT INTO SELF\nSELECT * EXCLUDE (METADATA$ISUPDATE, METADATA$ACTION)\n"
           "FROM users CHANGES(INFORMATION => APPEND_ONLY) JOIN pages USING (nope)")
    spark_sql = _checked(tmp_path, sql, USER_COLUMNS).customs["t"].spark_sql.lower()
    assert "*" in spark_sql and "using (nope)" in spark_sql


def _error(tmp_path, sql, yml=USER_COLUMNS, **kw) -> DtError:
    with pytest.raises(DtError) as err:
        _checked(tmp_path, sql, yml, **kw)
    return err.value


@pytest.mark.parametrize("sql, yml, line, message, hint", [
    ("INSERT INTO SELF\nSELECT * FROM SELF CHANGES(INFORMATION => DEFAULT)", USER_COLUMNS, 2,
     "CHANGES on SELF is not allowed", "FROM SELF AS cur"),
    ("INSERT INTO SELF\nSELECT id, name, email FROM t", USER_COLUMNS, 2, "REFRESH USING names t itself", "SELF"),
    ("INSERT INTO SELF SELECT id, name, email FROM users;\nINSERT INTO SELF SELECT id, name, email FROM users",
     USER_COLUMNS, 2, "more than one statement", "exactly one"),
    ("REFRESH USING (\n  UPDATE users SET name = 'x'\n)", USER_COLUMNS, 2, "REFRESH USING holds a UPDATE", "MERGE INTO SELF"),
    ("INSERT INTO users\nSELECT id, name, email FROM users", USER_COLUMNS, 1, "the target must be SELF", "INTO SELF"),
    ("INSERT INTO SELF (id, nmae)\nSELECT id, name FROM users CHANGES()", USER_COLUMNS, 1,
     "INSERT writes column nmae, which is not in t's columns", "did you mean name?"),
    ("MERGE INTO SELF t USING (SELECT * FROM users CHANGES()) s ON t.id = s.id\n"
     "WHEN MATCHED THEN UPDATE SET t.mail = s.email", USER_COLUMNS, 2, "MERGE writes column mail", "email"),
    ("INSERT INTO SELF\nSELECT id, name FROM users CHANGES()", USER_COLUMNS, 1, "gives 2 values but t has 3 columns",
     "INSERT INTO SELF (a, b)"),
    ("INSERT INTO SELF SELECT id, name, email\nFROM users CHANGES(INFORMATION => EVERYTHING)", USER_COLUMNS, 2,
     "cannot read CHANGES(INFORMATION => EVERYTHING)", "APPEND_ONLY"),
    ("INSERT INTO SELF SELECT id, name, email\nFROM users CHANGES() AT(OFFSET => -60)", USER_COLUMNS, 2,
     "change interval is set by dt", "remove the time bound"),
    ("INSERT INTO SELF SELECT id, METADATA$ROW_ID, email\nFROM users CHANGES()", USER_COLUMNS, 1,
     "METADATA$ROW_ID is not available", "METADATA$ACTION"),
    ("INSERT INTO SELF SELECT id, name, email FROM users CHANGES()", None, 1,
     "needs columns", "columns: [{name: id, type: BIGINT}]"),
    ("INSERT INTO SELF SELECT id, name, email FROM users CHANGES()", "columns: [id, name, email]\n", 1,
     "column id of t needs a Spark SQL type", "{name: id, type: BIGINT}"),
    ("INSERT INTO SELF SELECT id, name, email FROM users CHANGES()", USER_COLUMNS + "refresh_mode: incremental\n", 2,
     "refresh_mode is incremental, but t is a custom incremental table", "CUSTOM_INCREMENTAL"),
    ("INSERT INTO SELF SELECT id, name, email FROM users CHANGES()", USER_COLUMNS + "refresh_mode: full\n", 2,
     "refresh_mode is full", "refresh_mode: auto"),
    ("INSERT INTO SELF SELECT id, name, email FROM users CHANGES()", USER_COLUMNS + "frozen_where: id < 10\n", 2,
     "frozen_where cannot be combined with REFRESH USING", "remove frozen_where"),
    ("INSERT INTO SELF SELECT id, name, email FROM users CHANGES()", USER_COLUMNS + "start_at: {version: 3}\n", 2,
     "start_at needs backfill", "backfill: {from: TABLE}"),
])
def test_validate_errors_name_file_and_line(tmp_path, sql, yml, line, message, hint):
    err = _error(tmp_path, sql, yml)
    assert message in err.message and hint in (err.hint or ""), str(err)
    assert err.file in ("tables/t.sql", "tables/t.yml") and err.line == line, str(err)


def test_query_tables_refuse_custom_only_config(tmp_path):
    err = _error(tmp_path, "SELECT id FROM users", "start_at: {offset: -60}\n")
    assert "start_at is for custom incremental tables" in err.message and err.line == 1
    err = _error(tmp_path / "b", "SELECT id FROM users", "refresh_mode: custom_incremental\n")
    assert "needs a REFRESH USING statement" in err.message


def test_columns_change_of_an_existing_table(tmp_path):
    sql = "INSERT INTO SELF SELECT id, name, email FROM users CHANGES()"
    root = write_project(tmp_path / "p", {"t": sql}, config=SOURCES, table_yml={"t": USER_COLUMNS})
    project = load_project(root)
    existing = TableInfo(3, 0, 0, True, None, None, None, (Column("id", "INT"), Column("name", "STRING")))
    assert [c.name for c in check(project, _snapshot(project, {"t": existing})).customs["t"].add_columns] == ["email"]
    existing = TableInfo(3, 0, 0, True, None, None, None, (Column("id", "BIGINT"), Column("name", "STRING")))
    with pytest.raises(DtError) as err:
        check(project, _snapshot(project, {"t": existing}))
    assert "can only gain nullable columns at the end" in err.value.message
    assert "dt drop t --yes" in err.value.hint and err.value.file == "tables/t.yml"


def test_dt_validate_exits_2_with_file_and_line(tmp_path):
    root = write_project(tmp_path / "p", {"t": "INSERT INTO SELF\nSELECT * FROM SELF CHANGES()"}, config=SOURCES,
                         table_yml={"t": USER_COLUMNS})
    result = dt("validate", "-p", str(root))
    assert result.code == 2 and "tables/t.sql:2" in result.err and "CHANGES on SELF" in result.err


SEED_DDL = """CREATE OR REPLACE DYNAMIC TABLE dt_deletions_log (
  id INT,
  name STRING,
  email STRING
)
  TARGET_LAG = '1 minute'
  WAREHOUSE = transform_wh
  INITIALIZE = ON_SCHEDULE
  REFRESH USING (
    INSERT INTO SELF
    SELECT * EXCLUDE (METADATA$ISUPDATE, METADATA$ACTION)
    FROM users CHANGES(INFORMATION => DEFAULT)
    WHERE NOT METADATA$ISUPDATE AND METADATA$ACTION = 'DELETE'
  );"""


def test_the_seed_ddl_file_validates_like_its_yaml_equivalent(tmp_path):
    ddl = _checked(tmp_path / "a", SEED_DDL, None, dialect="snowflake", name="dt_deletions_log")
    yml = _checked(tmp_path / "b", DELETES, USER_COLUMNS + "target_lag: 1 minute\ninitialize: on_schedule\n",
                   dialect="snowflake", name="dt_deletions_log")
    a, b = ddl.project.tables["dt_deletions_log"], yml.project.tables["dt_deletions_log"]
    assert a.kind == b.kind == "custom"
    assert (a.target_lag, a.config["initialize"]) == (b.target_lag, b.config["initialize"]) == ("1 minute", "on_schedule")
    assert ddl.schemas["dt_deletions_log"] == yml.schemas["dt_deletions_log"]
    assert " ".join(ddl.customs["dt_deletions_log"].spark_sql.split()) == \
        " ".join(yml.customs["dt_deletions_log"].spark_sql.split())
    assert a.custom.change_inputs == [("users", "DEFAULT", 12)]
    assert [p["property"] for p in a.ignored] == ["WAREHOUSE"]


def test_the_seed_examples_compile_alike_in_both_dialects(tmp_path):
    """The Spark-dialect project of tests/spark/test_custom_incremental.py runs the same Spark SQL
    as the Snowflake one (the seed's DDL as written): by default only the latter runs in Spark."""
    from tests.custom_seed_projects import SOURCES as SPARK_SOURCES
    from tests.custom_seed_projects import seed_projects

    roots = seed_projects(tmp_path)
    compiled = []
    for root in roots:
        project = load_project(root)
        info = {n: TableInfo(1, 0, 0, True, None, None, None,
                             tuple(Column(*c.split()) for c in cols.split(", ")))
                for n, cols in SPARK_SOURCES.items()}
        checked = check(project, Snapshot(datetime.now(timezone.utc), info, {n: None for n in project.tables}))
        # Snowflake sorts NULLs differently, which sqlglot spells out; the test data has no NULL scores
        compiled.append({n: " ".join(c.spark_sql.lower().replace("`", "").replace(" nulls first", "")
                                     .replace(" nulls last", "").split()) for n, c in checked.customs.items()})
        assert {n: checked.modes[n].mode for n in project.tables} == {n: CUSTOM_INCREMENTAL for n in project.tables}
    assert compiled[0] == compiled[1]


def test_rely_primary_keys_of_sources_and_seeds(tmp_path):
    root = write_project(tmp_path / "p", {"t": "SELECT id FROM users"},
                         config="sources:\n  users: {path: data/users, primary_key: [id], rely: true}\n",
                         seeds={"orders": "order_id,amount\n1,2"})
    (root / "seeds" / "orders.yml").write_text("primary_key: [order_id]\nrely: true\n")
    project = load_project(root)
    assert (project.sources["users"].primary_key, project.sources["users"].rely) == (("id",), True)
    assert (project.sources["orders"].primary_key, project.sources["orders"].rely) == (("order_id",), True)
    bad = write_project(tmp_path / "q", {"t": "SELECT id FROM users"},
                        config="sources:\n  users: {path: data/users, rely: true}\n")
    with pytest.raises(DtError, match="with a primary_key to rely on"):
        load_project(bad)


def test_a_project_default_refresh_mode_is_for_query_tables(tmp_path):
    root = write_project(tmp_path / "p", {"t": "INSERT INTO SELF SELECT id, name, email FROM users CHANGES()"},
                         config=SOURCES + "defaults: {refresh_mode: incremental}\n", table_yml={"t": USER_COLUMNS})
    project = load_project(root)
    assert check(project, _snapshot(project)).modes["t"].mode == CUSTOM_INCREMENTAL


def test_full_refresh_of_a_custom_table_says_it_does_not_apply():
    """dbt users reach for --full-refresh; a custom table's history cannot be recomputed from its
    statement, so dt says so whether or not there is a change to apply."""
    from dtcli.planning.custom import CustomCheck, action

    check = CustomCheck(columns=(), spark_sql="")
    assert action(check, [], False) == ("NO_DATA", None)
    assert action(check, [], True)[0] == "NO_DATA" and "--full-refresh does not apply" in action(check, [], True)[1]
    assert "--full-refresh does not apply" in action(check, ["clicks"], True)[1]
