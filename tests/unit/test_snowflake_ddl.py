"""CREATE DYNAMIC TABLE as a table file: every property's config key, what is ignored, the
query's lines, and each mistake as one error at the user's line (no JVM)."""

from __future__ import annotations

import pytest

from dtcli import api
from dtcli.artifacts.typed_json import to_json
from dtcli.errors import ValidationError
from dtcli.project.snowflake_ddl import is_ddl, parse_ddl
from tests.helpers import dt, write_project

EVERYTHING = """-- pasted from GET_DDL
create or replace dynamic table DB.SCH.DT_ORDERS (
  ORDER_ID NUMBER(38,0),
  ORDER_DATE TIMESTAMP_NTZ(9) COMMENT 'when',
  TOTAL NUMBER(10,2)
)
  TARGET_LAG = '10 minutes' REFRESH_MODE = INCREMENTAL INITIALIZE = ON_SCHEDULE
  WAREHOUSE = TRANSFORM_WH DATA_RETENTION_TIME_IN_DAYS = 1 COPY GRANTS
  SCHEDULER = DISABLE
  IMMUTABLE WHERE (order_date < CURRENT_TIMESTAMP() - INTERVAL '30 days')
  BACKFILL FROM snap AT (TIMESTAMP => '2025-04-01 12:00:00'::TIMESTAMP_NTZ)
  CLUSTER BY (order_date, order_id)
  COMMENT = 'orders; with a semicolon'
  WITH TAG (cost_center = 'sales')
as
select order_id, order_date, total
from raw_orders;
ALTER TABLE dt_orders ADD CONSTRAINT pk_orders PRIMARY KEY (order_id, order_date) RELY;
"""


def test_every_property_maps_to_its_config_key_and_the_query_keeps_its_lines():
    assert is_ddl(EVERYTHING) and not is_ddl("SELECT 1")
    ddl = parse_ddl(EVERYTHING, "tables/dt_orders.sql")
    assert ddl.name == "DT_ORDERS"
    assert ddl.config == {
        "columns": [{"name": "order_id", "type": "DECIMAL(38, 0)"}, {"name": "order_date", "type": "TIMESTAMP_NTZ"},
                    {"name": "total", "type": "DECIMAL(10, 2)"}],
        "target_lag": "10 minutes", "refresh_mode": "incremental", "initialize": "on_schedule",
        "scheduler": "disable", "frozen_where": "order_date < CURRENT_TIMESTAMP() - INTERVAL '30 days'",
        "backfill": {"from": "snap", "at": {"timestamp": "2025-04-01 12:00:00"}},
        "cluster_by": ["order_date", "order_id"], "comment": "orders; with a semicolon",
        "constraints": [{"primary_key": ["order_id", "order_date"], "rely": True}],
    }
    assert ddl.lines["frozen_where"] == 10 and ddl.lines["comment"] == 13
    assert [(p["property"], p["value"]) for p in ddl.ignored] == [
        ("WAREHOUSE", "TRANSFORM_WH"), ("DATA_RETENTION_TIME_IN_DAYS", "1"), ("COPY GRANTS", ""),
        ("WITH TAG (cost_center = 'sales')", "")]
    lines = ddl.body.splitlines()
    assert len(lines) == len(EVERYTHING.splitlines())
    assert lines[15].strip() == "select order_id, order_date, total" and lines[16].strip() == "from raw_orders"
    assert "ALTER" not in ddl.body and "WAREHOUSE" not in ddl.body


@pytest.mark.parametrize("properties, key, value", [
    ("TARGET_LAG = DOWNSTREAM", "target_lag", "downstream"),
    ("FROZEN WHERE (a > 1)", "frozen_where", "a > 1"),
    ("BACKFILL FROM s BEFORE (STATEMENT => '3')", "backfill", {"from": "s", "before": {"version": 3}}),
    ("START AT (OFFSET => -3600)", "start_at", {"offset": -3600}),
    ("START AT (TIMESTAMP => '2025-01-01')", "start_at", {"timestamp": "2025-01-01"}),
    ("REFRESH_MODE = CUSTOM_INCREMENTAL", "refresh_mode", "auto"),
])
def test_single_properties(properties, key, value):
    ddl = parse_ddl(f"CREATE DYNAMIC TABLE t {properties} AS SELECT a FROM s", "tables/t.sql")
    assert ddl.config[key] == value


def test_a_refresh_using_statement_is_handed_on_with_its_columns():
    text = """CREATE OR REPLACE DYNAMIC TABLE dt_player_scores (
  player_id INT,
  total_score INT
)
  TARGET_LAG = '1 minute'
  WAREHOUSE = transform_wh
  INITIALIZE = ON_SCHEDULE
  REFRESH USING (
    MERGE INTO SELF AS tgt
    USING (SELECT player_id, SUM(score) AS batch_score FROM match_results CHANGES(INFORMATION => APPEND_ONLY)
           GROUP BY player_id) AS src
    ON tgt.player_id = src.player_id
    WHEN MATCHED THEN UPDATE SET tgt.total_score = tgt.total_score + src.batch_score
    WHEN NOT MATCHED THEN INSERT (player_id, total_score) VALUES (src.player_id, src.batch_score)
  );
"""
    ddl = parse_ddl(text, "tables/dt_player_scores.sql")
    assert ddl.config == {"columns": [{"name": "player_id", "type": "INT"}, {"name": "total_score", "type": "INT"}],
                          "target_lag": "1 minute", "initialize": "on_schedule"}
    assert ddl.body.lstrip().startswith("REFRESH USING (") and ddl.body.rstrip().endswith(")")
    assert ddl.body.splitlines()[8].strip() == "MERGE INTO SELF AS tgt"


@pytest.mark.parametrize("text, line, message", [
    ("CREATE DYNAMIC TABLE t\n  TARGET_LAG = '1 hour'\n  FRESHNESS = 'x' y\nAS SELECT 1", 3, "property 'y'"),
    ("CREATE DYNAMIC TABLE t\n  TARGET_LAG = '1 hour'\n  BOGUS\nAS SELECT 1", 3, "unknown CREATE DYNAMIC TABLE property 'BOGUS'"),
    ("CREATE TABLE t AS SELECT 1", 1, "expected DYNAMIC"),
    ("CREATE DYNAMIC TABLE t TARGET_LAG = '1 hour'\n  BACKFILL FROM s AT (STREAM => 'st')\nAS SELECT 1", 2,
     "cannot read"),
    ("CREATE DYNAMIC TABLE t\n  BACKFILL FROM s BEFORE (STATEMENT => '01b2-xyz')\nAS SELECT 1", 2, "needs a number"),
    ("CREATE DYNAMIC TABLE t TARGET_LAG = '1 hour' TARGET_LAG = '2 hours' AS SELECT 1", 1, "set twice"),
    ("CREATE DYNAMIC TABLE t TARGET_LAG = '1 hour' AS SELECT 1;\nDROP TABLE x;", 2, "one CREATE DYNAMIC TABLE"),
    ("CREATE DYNAMIC TABLE t AS SELECT 1;\nALTER TABLE t ADD PRIMARY KEY (a);", 2, "not RELY"),
    ("CREATE DYNAMIC TABLE t TARGET_LAG = '1 hour'", 1, "ends early"),
])
def test_mistakes_name_their_line(text, line, message):
    with pytest.raises(ValidationError) as err:
        parse_ddl(text, "tables/t.sql")
    assert message in err.value.message and err.value.line == line, err.value


SEEDS = {"raw_orders": "order_id,customer_id,order_date,order_status,line_total\n1,7,2024-12-15,shipped,9.5\n"}
DT_ORDERS = """CREATE OR REPLACE DYNAMIC TABLE dt_orders
  TARGET_LAG = '10 minutes'
  WAREHOUSE = transform_wh
  FROZEN WHERE (order_date < '2025-01-01')
AS
  SELECT order_id, customer_id, order_date, line_total
  FROM raw_orders
  WHERE order_status != 'returned';
"""
EQUIVALENT_YML = "target_lag: 10 minutes\nfrozen_where: \"order_date < '2025-01-01'\"\n"
EQUIVALENT_SQL = ("SELECT order_id, customer_id, order_date, line_total\nFROM raw_orders\n"
                  "WHERE order_status != 'returned'")


def _project(tmp_path, sql=DT_ORDERS, yml=None, dialect="snowflake", name="dt_orders"):
    root = write_project(tmp_path / "p", {}, config=f"dialect: {dialect}\n", seeds=SEEDS)
    api.seed(root)        # before the table is written: a table that does not validate stops seeding too
    (root / "tables" / f"{name}.sql").write_text(sql)
    if yml:
        (root / "tables" / f"{name}.yml").write_text(yml)
    return root


def test_a_pasted_statement_plans_like_its_yaml_equivalent(tmp_path):
    ddl = api.check(_project(tmp_path / "ddl"))
    yml = api.check(_project(tmp_path / "yml", EQUIVALENT_SQL, EQUIVALENT_YML))
    assert ddl.hashes["dt_orders"] == yml.hashes["dt_orders"]
    assert ddl.modes["dt_orders"] == yml.modes["dt_orders"]
    assert ddl.schemas["dt_orders"] == yml.schemas["dt_orders"]
    table = ddl.project.tables["dt_orders"]
    assert (table.target_lag, table.config["frozen_where"]) == ("10 minutes", "order_date < '2025-01-01'")
    explained = to_json(api.explain(ddl, "dt_orders"))
    assert explained["ignored_properties"] == [{"property": "WAREHOUSE", "value": "transform_wh", "line": 3}]
    assert explained["frozen"]["columns"] == ["order_date"]


@pytest.mark.parametrize("case, expected", [
    ("name", "tables/other.sql:1: the statement creates dt_orders, but the file is named other"),
    ("yaml", "tables/dt_orders.sql:4: frozen_where is set both by the CREATE statement (line 4) and in "
             "tables/dt_orders.yml"),
    ("dialect", "tables/dt_orders.sql:1: CREATE DYNAMIC TABLE is Snowflake SQL"),
    ("column", "tables/dt_orders.sql:6: unknown column 'line_totl' (did you mean line_total?)"),
])
def test_validate_rejects_with_the_file_and_line(tmp_path, case, expected):
    sql = DT_ORDERS.replace("line_total\n", "line_totl\n") if case == "column" else DT_ORDERS
    root = _project(tmp_path, sql, yml="immutable_where: \"order_id > 1\"\n" if case == "yaml" else None,
                    dialect="spark" if case == "dialect" else "snowflake",
                    name="other" if case == "name" else "dt_orders")
    result = dt("validate", "-p", str(root))
    assert result.code == 2 and expected in result.err, result.err
    assert not (root / "warehouse" / "dt_orders").exists() and not (root / "target" / "runs").exists()


SCRIPT = """create or replace dynamic table ANALYTICS.PUBLIC.DT_ORDERS(
	ORDER_ID,
	CUSTOMER_ID,
	ORDER_DATE,
	LINE_TOTAL
) target_lag = '10 minutes' refresh_mode = AUTO initialize = ON_CREATE warehouse = TRANSFORM_WH
 as
  SELECT order_id, customer_id, order_date, line_total
  FROM ANALYTICS.PUBLIC.RAW_ORDERS
  WHERE order_status != 'returned';

ALTER TABLE ANALYTICS.PUBLIC.DT_ORDERS ADD CONSTRAINT PK_ORDERS PRIMARY KEY (ORDER_ID, ORDER_DATE) RELY;

-- a plain table: not a dynamic table
create or replace TABLE ANALYTICS.PUBLIC.NOTES (ID NUMBER);

create or replace dynamic table ANALYTICS.PUBLIC.CUSTOMER_TOTALS
  target_lag = '1 hour' refresh_mode = INCREMENTAL initialize = ON_CREATE warehouse = TRANSFORM_WH
  COMMENT = 'per customer; totals'
 as
  select customer_id, count(*) as orders, sum(line_total) as total
  from ANALYTICS.PUBLIC.DT_ORDERS group by customer_id;
"""


def test_import_turns_a_get_ddl_script_into_a_project_that_validates(tmp_path):
    root = write_project(tmp_path / "p", {}, seeds=SEEDS)
    api.seed(root)
    (tmp_path / "export.sql").write_text(SCRIPT)
    result = dt("import", "snowflake", str(tmp_path / "export.sql"), "-p", str(root), "--format", "json")
    assert result.code == 0, result.err
    report = result.json()
    assert [(t["file"], sorted(t["mapped"]), [p["property"] for p in t["ignored"]]) for t in report["tables"]] == [
        ("tables/dt_orders.sql", ["columns", "constraints", "initialize", "refresh_mode", "target_lag"], ["WAREHOUSE"]),
        ("tables/customer_totals.sql", ["comment", "initialize", "refresh_mode", "target_lag"], ["WAREHOUSE"])]
    assert report["skipped"] == [{"line": 15, "statement": "create or replace TABLE ANALYTICS.PUBLIC.NOTES ..."}]
    assert report["dialect_set"] and "dialect: snowflake" in (root / "dt_project.yml").read_text()
    validated = dt("validate", "-p", str(root))
    assert validated.code == 0, validated.err
    checked = api.check(root)
    assert checked.graph.upstream["customer_totals"] == ["dt_orders"]
    assert checked.project.tables["dt_orders"].config["constraints"] == [
        {"kind": "primary_key", "columns": ["order_id", "order_date"], "rely": True, "name": None}]
    assert checked.project.tables["customer_totals"].config["comment"] == "per customer; totals"
    again = dt("import", "snowflake", str(tmp_path / "export.sql"), "-p", str(root))
    assert again.code == 2 and "tables/dt_orders.sql already exists" in again.err and "--force" in again.err
    assert dt("import", "snowflake", str(tmp_path / "export.sql"), "-p", str(root), "--force").code == 0


def test_import_refuses_a_project_of_another_dialect_and_writes_nothing(tmp_path):
    root = write_project(tmp_path / "p", {}, config="dialect: spark\n")
    (tmp_path / "export.sql").write_text(SCRIPT)
    result = dt("import", "snowflake", str(tmp_path / "export.sql"), "-p", str(root))
    assert result.code == 2 and "dialect: snowflake" in result.err
    assert list((root / "tables").iterdir()) == []


RELY_FAILS = """CREATE OR REPLACE DYNAMIC TABLE dt_orders
  TARGET_LAG = '10 minutes'
  WAREHOUSE = transform_wh
  FROZEN WHERE (order_status = 'shipped')
AS
  SELECT
    order_id,
    order_date,
    order_status,
    line_total
  FROM raw_orders;

ALTER TABLE dt_orders ADD CONSTRAINT pk_orders PRIMARY KEY (order_id, order_date) RELY;
"""


def test_the_seed_rely_examples_pass_and_fail_as_in_snowflake(tmp_path):
    passes = RELY_FAILS.replace("order_status = 'shipped'", "order_date < '2025-01-01'")
    assert dt("validate", "-p", str(_project(tmp_path / "ok", passes))).code == 0
    result = dt("validate", "-p", str(_project(tmp_path / "bad", RELY_FAILS)))
    assert result.code == 2 and "tables/dt_orders.sql:4" in result.err, result.err
    assert "column ORDER_STATUS is not part of any RELY constraint" in result.err


def test_an_untyped_column_with_a_comment_and_comments_after_the_statement():
    ddl = parse_ddl("CREATE DYNAMIC TABLE t (CUST COMMENT 'the customer', N)\n TARGET_LAG = '1 hour'\n"
                    "AS SELECT a, b FROM s;\n-- a note; with a semicolon\n/* and a block */\n", "tables/t.sql")
    assert ddl.config["columns"] == [{"name": "cust"}, {"name": "n"}]
    assert ddl.body.strip().startswith("SELECT a, b FROM s")


def test_ref_in_the_snowflake_dialect_names_the_table_as_snowflake_quotes(tmp_path):
    root = _project(tmp_path, EQUIVALENT_SQL, EQUIVALENT_YML)
    (root / "tables" / "big_orders.sql").write_text(
        "SELECT order_id, line_total\nFROM {{ ref('DT_Orders') }}\nWHERE line_total > 5")
    checked = api.check(root)
    assert list(checked.graph.upstream["big_orders"]) == ["dt_orders"]
    assert [c.name for c in checked.schemas["big_orders"]] == ["order_id", "line_total"]
