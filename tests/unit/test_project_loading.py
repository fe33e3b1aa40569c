"""Project loading: config precedence, Jinja helpers, dialects, targets, dependencies."""

from __future__ import annotations

import pytest

from dtcli.errors import ConfigError, ValidationError
from dtcli.planning.graph import Graph
from dtcli.project import load_project
from tests.helpers import write_project

SOURCES = "sources:\n  orders: {path: data/orders, primary_key: order_id}\n"


def test_config_precedence_defaults_then_yml_then_config_call(tmp_path):
    root = write_project(tmp_path, {
        "a": "{{ config(refresh_mode='full') }}\nSELECT * FROM orders",
        "b": "SELECT * FROM orders",
        "c": "SELECT * FROM orders",
    }, config=SOURCES + "defaults: {target_lag: 2 hours, refresh_mode: incremental}\n",
        table_yml={"a": "target_lag: 5 minutes\nrefresh_mode: auto\n", "b": "config:\n  target_lag: 1 day\n"})
    project = load_project(root)
    a, b, c = (project.tables[n] for n in "abc")
    assert (a.target_lag, a.refresh_mode) == ("5 minutes", "full")
    assert (b.target_lag, b.refresh_mode) == ("1 day", "incremental")
    assert (c.target_lag, c.refresh_mode) == ("2 hours", "incremental")
    assert a.config_origin["refresh_mode"].file == "tables/a.sql"


def test_multiline_config_keeps_sql_lines(tmp_path):
    root = write_project(tmp_path, {"a": """
        {{ config(
             target_lag='10 minutes',
             tags=['x']) }}
        SELECT order_id
        FROM orders
        WHERE amount >
    """}, config=SOURCES)
    with pytest.raises(ValidationError) as err:
        load_project(root)
    assert err.value.line == 6 and err.value.file == "tables/a.sql"


def test_ref_source_and_var(tmp_path):
    root = write_project(tmp_path, {
        "a": "SELECT * FROM {{ source('orders') }} WHERE amount > {{ var('min_amount') }}",
        "b": "SELECT * FROM {{ ref('a') }} WHERE amount < {{ var('max_amount', 100) }}",
    }, config=SOURCES + "vars: {min_amount: 5}\n")
    project = load_project(root)
    assert project.tables["a"].inputs == ("orders",) and "amount > 5" in project.tables["a"].spark_sql
    assert project.tables["b"].inputs == ("a",) and "amount < 100" in project.tables["b"].spark_sql
    assert Graph.of(project).order == ["a", "b"]


def test_missing_var_is_a_config_error(tmp_path):
    root = write_project(tmp_path, {"a": "SELECT * FROM orders\nWHERE x > {{ var('nope') }}"}, config=SOURCES)
    with pytest.raises(ConfigError, match="var\\('nope'\\)") as err:
        load_project(root)
    assert err.value.line == 2


def test_jinja_is_sandboxed(tmp_path):
    root = write_project(tmp_path, {"a": "SELECT {{ ''.__class__.__mro__ }} FROM orders"}, config=SOURCES)
    with pytest.raises(ValidationError):
        load_project(root)


def test_snowflake_dialect_is_transpiled_to_spark(tmp_path):
    root = write_project(tmp_path, {
        "a": "SELECT order_id, IFF(amount > 10, 'big', 'small') AS size, amount::INT AS amt FROM orders",
    }, config=SOURCES + "dialect: snowflake\n")
    sql = load_project(root).tables["a"].spark_sql
    assert "IF(amount > 10" in sql and "CAST(amount AS INT)" in sql


def test_qualified_and_cte_names_resolve(tmp_path):
    root = write_project(tmp_path, {
        "a": "WITH orders AS (SELECT * FROM shop.orders WHERE amount > 1) SELECT * FROM orders",
    }, config=SOURCES)
    table = load_project(root).tables["a"]
    assert table.inputs == ("orders",)
    assert "FROM `orders` AS orders" in table.spark_sql


def test_targets_override_warehouse_and_spark(tmp_path):
    root = write_project(tmp_path, {"a": "SELECT * FROM orders"}, config=SOURCES + """
targets:
  prod:
    warehouse: s3a://lake/dt
    spark: {master: yarn, conf: {spark.executor.memory: 8g}}
""")
    dev, prod = load_project(root), load_project(root, "prod")
    assert dev.warehouse == str(root / "warehouse") and dev.spark_master == "local[1]"
    assert prod.warehouse == "s3a://lake/dt" and prod.spark_master == "yarn"
    assert prod.table_path("a") == "s3a://lake/dt/a"
    assert prod.spark_conf["spark.executor.memory"] == "8g"
    with pytest.raises(ConfigError, match="target 'prdo'") as err:
        load_project(root, "prdo")
    assert "did you mean prod?" in str(err.value)


def test_a_target_yaml_reads_as_a_boolean_is_an_error_not_a_traceback(tmp_path):
    root = write_project(tmp_path, {"a": "SELECT * FROM orders"}, config=SOURCES + "targets:\n  off: {threads: 1}\n")
    with pytest.raises(ConfigError, match="target 'off' is not defined"):
        load_project(root, "off")


def test_seeds_are_sources_in_the_warehouse(tmp_path):
    root = write_project(tmp_path, {"a": "SELECT * FROM customers"}, seeds={"customers": "id,name\n1,x"})
    project = load_project(root)
    assert project.sources["customers"].path == str(root / "warehouse" / "customers")
    with pytest.raises(ValidationError, match="run `dt seed` first"):
        load_project(root, check_sources=True)


def test_a_table_may_not_read_itself(tmp_path):
    root = write_project(tmp_path, {"a": "SELECT * FROM a"}, config=SOURCES)
    with pytest.raises(ValidationError, match="reads itself"):
        load_project(root)


def test_one_query_per_file(tmp_path):
    root = write_project(tmp_path, {"a": "SELECT 1 AS x;\nSELECT 2 AS y"}, config=SOURCES)
    with pytest.raises(ValidationError, match="more than one statement"):
        load_project(root)


def _folders(tmp_path, config=""):
    root = write_project(tmp_path, {"top": "SELECT * FROM orders"}, config=SOURCES + config)
    for folder, name in (("staging", "stg_orders"), ("marts", "revenue"), ("marts/finance", "ledger")):
        (root / "tables" / folder).mkdir(parents=True, exist_ok=True)
        (root / "tables" / folder / f"{name}.sql").write_text("SELECT * FROM orders\n")
    return root


def test_tables_are_read_from_every_folder_with_folder_config(tmp_path):
    root = _folders(tmp_path, """
defaults: {target_lag: 2 hours, tags: [nightly]}
folders:
  staging: {tags: [staging], target_lag: 10 minutes}
  marts:
    +tags: [marts]
    finance: {refresh_mode: full}
""")
    (root / "tables" / "marts" / "finance" / "ledger.yml").write_text("tags: [audit]\n")
    project = load_project(root)
    assert sorted(project.tables) == ["ledger", "revenue", "stg_orders", "top"]
    stg, ledger, top = project.tables["stg_orders"], project.tables["ledger"], project.tables["top"]
    assert (stg.file, stg.folder) == ("tables/staging/stg_orders.sql", "staging")
    assert (stg.target_lag, stg.tags) == ("10 minutes", ("nightly", "staging"))
    assert (ledger.refresh_mode, ledger.target_lag) == ("full", "2 hours")
    assert ledger.tags == ("nightly", "marts", "audit")          # tags add up, like dbt's
    assert (top.tags, top.folder) == (("nightly",), "")


def test_folder_config_also_takes_slash_paths_and_rejects_unknown_keys(tmp_path):
    root = _folders(tmp_path, "folders:\n  marts/finance: {tags: [money]}\n")
    assert load_project(root).tables["ledger"].tags == ("money",)
    root = _folders(tmp_path / "bad", "folders:\n  staging: {target_lagg: 1 hour}\n")
    with pytest.raises(ConfigError, match="unknown config key 'target_lagg' in folders.staging") as err:
        load_project(root)
    assert err.value.hint == "did you mean target_lag?"


def test_a_disabled_table_is_not_planned_and_may_not_be_read(tmp_path):
    root = write_project(tmp_path, {"a": "SELECT * FROM orders", "b": "SELECT * FROM orders"}, config=SOURCES,
                         table_yml={"a": "enabled: false\n"})
    project = load_project(root)
    assert list(project.tables) == ["b"] and list(project.disabled) == ["a"]
    (root / "tables" / "c.sql").write_text("SELECT *\nFROM {{ ref('a') }}\n")
    with pytest.raises(ValidationError, match="c reads a, which is disabled") as err:
        load_project(root)
    assert (err.value.file, err.value.line) == ("tables/c.sql", 2)


@pytest.mark.parametrize("yml, message", [
    ("enabled: maybe\n", "enabled must be true or false"),
    ("partition_by: a\ncluster_by: b\n", "either partitioned or clustered"),
    ("constraints: [{primary_key: [order_id], rely: yes please}]\n", "rely must be true or false"),
    ("frozen_where: x > 1\nimmutable_where: x > 2\n", "both frozen_where and its alias immutable_where"),
    ("backfill: {from: orders, at: {version: 1}, before: {version: 2}}\n", "at or before, not both"),
    ("backfill: {from: orders, at: {timestamp: yesterday}}\n", "is not an ISO date and time"),
    ("columns: [{name: a, kind: int}]\n", "is not {name, type}"),
    ("small_table_rows: many\n", "small_table_rows must be a whole number of rows"),
    ("small_table_rows: -1\n", "small_table_rows must be a whole number of rows"),
])
def test_config_keys_are_checked(tmp_path, yml, message):
    root = write_project(tmp_path, {"a": "SELECT * FROM orders"}, config=SOURCES, table_yml={"a": yml})
    with pytest.raises(ConfigError, match=message):
        load_project(root)
