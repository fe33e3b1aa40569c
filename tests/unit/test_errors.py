"""Bad input: exit code 2, one line naming file (and line) with a fix, and nothing written."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from tests.helpers import dt, tree_state, write_project

SOURCES = """
sources:
  orders: {path: data/orders}
"""


def _project(tmp_path, tables, *, config=SOURCES, table_yml=None):
    root = write_project(tmp_path / "p", tables, config=config, table_yml=table_yml)
    write_deltalake(str(root / "data" / "orders"),
                    pa.table({"order_id": pa.array([1, 2], pa.int64()), "amount": pa.array([5, 7], pa.int64())}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    return root


def _expect_usage_error(root, *needles, command=("run",)):
    before = tree_state(root / "warehouse"), tree_state(root / "data")
    result = dt(*command, "-p", str(root))
    assert result.code == 2, (result.out, result.err)
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err            # one clear message, no traceback
    message = lines[0]
    assert "Traceback" not in result.err
    for needle in needles:
        assert needle in message, message
    assert (tree_state(root / "warehouse"), tree_state(root / "data")) == before
    return message


def test_unknown_table_suggests_the_close_name(tmp_path):
    root = _project(tmp_path, {"big": "SELECT order_id\nFROM ordrs\nWHERE amount > 5"})
    _expect_usage_error(root, "tables/big.sql:2", "unknown table 'ordrs'", "did you mean orders?")


def test_dependency_cycle_names_the_tables(tmp_path):
    root = _project(tmp_path, {"a": "SELECT * FROM {{ ref('b') }}", "b": "SELECT *\nFROM {{ ref('a') }}"})
    _expect_usage_error(root, "tables/a.sql:1", "dependency cycle: a -> b -> a")


def test_invalid_target_lag_points_at_its_yaml_line(tmp_path):
    root = _project(tmp_path, {"big": "SELECT * FROM orders"},
                    table_yml={"big": "comment: x\ntarget_lag: ten minutes\n"})
    _expect_usage_error(root, "tables/big.yml:2", "ten minutes", "'10 minutes'")


def test_invalid_target_lag_in_config_call(tmp_path):
    root = _project(tmp_path, {"big": "-- header\n{{ config(target_lag='5 fortnights') }}\nSELECT * FROM orders"})
    _expect_usage_error(root, "tables/big.sql:2", "5 fortnights")


def test_unknown_config_key_suggests_the_right_one(tmp_path):
    root = _project(tmp_path, {"big": "SELECT * FROM orders"}, table_yml={"big": "target_lagg: 1 hour\n"})
    _expect_usage_error(root, "tables/big.yml:1", "unknown config key 'target_lagg'", "did you mean target_lag?")


def test_yaml_syntax_error_names_file_and_line(tmp_path):
    root = _project(tmp_path, {"big": "SELECT * FROM orders"})
    project_file = root / "dt_project.yml"
    project_file.write_text(project_file.read_text() + "defaults:\n  target_lag: [1 hour\n")
    _expect_usage_error(root, "dt_project.yml:", "invalid YAML")


def test_sql_syntax_error_names_the_line(tmp_path):
    root = _project(tmp_path, {"big": "SELECT order_id\nFROM orders\nWHERE amount >"})
    message = _expect_usage_error(root, "tables/big.sql:3", "SQL syntax error", "incomplete", "near '>'")
    assert "<class" not in message              # no parser internals


def test_source_path_that_does_not_exist(tmp_path):
    config = SOURCES + "  missing: {path: data/nowhere}\n"
    root = _project(tmp_path, {"big": "SELECT * FROM missing"}, config=config)
    _expect_usage_error(root, "dt_project.yml:", "source 'missing'", "does not exist")


def test_ref_to_missing_table(tmp_path):
    root = _project(tmp_path, {"big": "SELECT *\nFROM {{ ref('ordrs_clean') }}", "orders_clean": "SELECT * FROM orders"})
    _expect_usage_error(root, "tables/big.sql:2", "ref('ordrs_clean')", "did you mean orders_clean?")


@pytest.mark.parametrize("command", [("validate",), ("explain", "big"), ("run", "--dry-run")])
def test_every_planning_command_rejects_bad_input_the_same_way(tmp_path, command):
    root = _project(tmp_path, {"big": "SELECT * FROM ordrs"})
    _expect_usage_error(root, "unknown table 'ordrs'", command=command)


def test_unknown_table_in_refresh_is_a_usage_error(tmp_path):
    root = _project(tmp_path, {"big": "SELECT * FROM orders"})
    _expect_usage_error(root, "no dynamic table named 'bgi'", "did you mean big?", command=("refresh", "bgi"))


def test_debug_shows_the_traceback(tmp_path):
    root = _project(tmp_path, {"big": "SELECT * FROM ordrs"})
    with pytest.raises(Exception, match="unknown table"):
        dt("--debug", "validate", "-p", str(root))


# ---- columns checked against the inputs' schemas (read from their Delta logs, no JVM) ------

CUSTOMERS = SOURCES + "  customers: {path: data/customers}\n"


def _with_customers(tmp_path, tables, **kw):
    root = _project(tmp_path, tables, config=kw.pop("config", CUSTOMERS), **kw)
    write_deltalake(str(root / "data" / "customers"),
                    pa.table({"customer_id": pa.array([1], pa.int64()), "name": ["ann"],
                              "amount": pa.array([3], pa.int64())}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    return root


@pytest.mark.parametrize("command", [("validate",), ("run",), ("explain", "big")])
def test_unknown_column_names_the_users_line_and_the_close_column(tmp_path, command):
    root = _project(tmp_path, {"big": "SELECT order_id,\n       amont\nFROM orders"})
    _expect_usage_error(root, "tables/big.sql:2", "unknown column 'amont'", "did you mean amount?",
                        command=command)


def test_unknown_column_in_snowflake_dialect_names_the_line_of_the_file(tmp_path):
    root = _project(tmp_path, {"big": "SELECT order_id,\n  IFF(amount > 1, 'big', 'small') AS size,\n"
                                      "  no_such_column\nFROM orders"},
                    config="dialect: snowflake\n" + SOURCES)
    _expect_usage_error(root, "tables/big.sql:3", "unknown column 'no_such_column'", command=("validate",))


def test_unknown_column_of_a_qualified_input(tmp_path):
    root = _with_customers(tmp_path, {"big": "SELECT o.order_id, c.nme\nFROM orders AS o\n"
                                             "JOIN customers AS c ON c.customer_id = o.order_id"})
    _expect_usage_error(root, "tables/big.sql:1", "unknown column 'nme' of 'c'", "did you mean name?",
                        command=("validate",))


def test_ambiguous_column_in_a_join_asks_to_qualify_it(tmp_path):
    root = _with_customers(tmp_path, {"big": "SELECT order_id, name,\n       amount\nFROM orders AS o\n"
                                             "JOIN customers AS c ON c.customer_id = o.order_id"})
    _expect_usage_error(root, "tables/big.sql:2", "column 'amount' is ambiguous", "qualify it",
                        command=("validate",))


def test_unknown_table_inside_a_cte(tmp_path):
    root = _project(tmp_path, {"big": "WITH recent AS (\n  SELECT order_id FROM ordres\n)\n"
                                      "SELECT * FROM recent"})
    _expect_usage_error(root, "tables/big.sql:2", "unknown table 'ordres'", "did you mean orders?",
                        command=("validate",))


def test_unknown_column_inside_a_cte(tmp_path):
    root = _project(tmp_path, {"big": "WITH recent AS (\n  SELECT order_id, amout FROM orders\n)\n"
                                      "SELECT * FROM recent"})
    _expect_usage_error(root, "tables/big.sql:2", "unknown column 'amout'", "did you mean amount?",
                        command=("validate",))


def test_two_files_with_one_stem_in_different_folders(tmp_path):
    root = _project(tmp_path, {"big": "SELECT * FROM orders"})
    for folder in ("staging", "marts"):
        (root / "tables" / folder).mkdir()
        (root / "tables" / folder / "orders_clean.sql").write_text("SELECT * FROM orders\n")
    _expect_usage_error(root, "two table files define 'orders_clean'", "tables/marts/orders_clean.sql",
                        "tables/staging/orders_clean.sql", command=("validate",))


@pytest.mark.parametrize("dialect", ["spark", "snowflake"])
def test_an_unnamed_output_expression_takes_sparks_name(tmp_path, dialect):
    """`SUM(amount)` is named `sum(amount)`, as Spark's CREATE TABLE AS SELECT names it."""
    root = _project(tmp_path, {"big": "SELECT order_id,\n       SUM(amount)\nFROM orders\nGROUP BY order_id"},
                    config=f"dialect: {dialect}\n" + SOURCES)
    result = dt("validate", "-p", str(root))
    assert result.code == 0, result.err
    result = dt("explain", "big", "-p", str(root), "--format", "json")
    assert result.code == 0, result.err
    assert [c["name"] for c in json.loads(result.out)["columns"]] == ["order_id", "sum(amount)"]


@pytest.mark.parametrize("dialect", ["spark", "snowflake"])
def test_an_unnamed_output_expression_dt_cannot_name_asks_for_an_alias(tmp_path, dialect):
    # a window's Spark name spells out its frame: dt does not derive it (sql/spark_names.py), and
    # asks for a name before Spark runs, at the user's line
    root = _project(tmp_path, {"big": "SELECT order_id,\n       SUM(amount) OVER (PARTITION BY order_id)\n"
                                      "FROM orders"},
                    config=f"dialect: {dialect}\n" + SOURCES)
    _expect_usage_error(root, "tables/big.sql:2", "has no column name", "AS <name>",
                        command=("validate",))


def test_columns_config_names_unnamed_outputs(tmp_path):
    root = _project(tmp_path, {"big": "SELECT order_id, SUM(amount) FROM orders GROUP BY order_id"},
                    table_yml={"big": "columns:\n  - {name: order_id}\n  - {name: total}\n"})
    result = dt("validate", "-p", str(root))
    assert result.code == 0, result.err


@pytest.mark.parametrize("query, needle", [
    ("SELECT order_id,\n       amount AS ORDER_ID\nFROM orders", "'ORDER_ID' appears twice"),
    ("SELECT *,\n       amount\nFROM orders", "'amount' appears twice"),
])
def test_an_output_name_given_twice(tmp_path, query, needle):
    root = _project(tmp_path, {"big": query})
    _expect_usage_error(root, "tables/big.sql:2", needle, "rename one with AS", command=("validate",))
