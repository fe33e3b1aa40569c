"""Data tests and expectations in a table's YAML, in dbt's syntax: parsed, checked against the
tables' columns at `dt validate` (exit 2, the file and line, the fix, nothing written, no JVM),
and compiled to the checks a refresh runs."""

from __future__ import annotations

import textwrap

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from dtcli import api
from dtcli.artifacts.typed_json import to_json
from dtcli.data_tests import KEEP_OUT, KEY, LINK, QUERY, RECORD, STOP
from dtcli.planning.data_tests import compile_checks
from dtcli.planning.definition import definition_hash
from tests.helpers import dt, no_java_env, tree_state, write_project

SOURCES = "sources:\n  raw_orders: {path: data/raw_orders}\n  raw_customers: {path: data/raw_customers}\n"
ORDERS = "SELECT order_id, customer_id, status, amount FROM raw_orders"


def _project(tmp_path, yml: str = "", *, tables=None, tests=None, extra_yml=None):
    tables = tables or {"orders": ORDERS, "customers": "SELECT customer_id, name FROM raw_customers"}
    root = write_project(tmp_path / "p", tables, config=SOURCES,
                         table_yml={"orders": textwrap.dedent(yml), **(extra_yml or {})})
    cdf = {"delta.enableChangeDataFeed": "true"}
    write_deltalake(str(root / "data" / "raw_orders"), pa.table({
        "order_id": pa.array([1, 2], pa.int64()), "customer_id": pa.array([7, 8], pa.int64()),
        "status": ["placed", "shipped"], "amount": pa.array([5, 7], pa.int64())}), configuration=cdf)
    write_deltalake(str(root / "data" / "raw_customers"), pa.table({
        "customer_id": pa.array([7, 8], pa.int64()), "name": ["a", "b"]}), configuration=cdf)
    for name, sql in (tests or {}).items():
        (root / "tests").mkdir(exist_ok=True)
        (root / "tests" / f"{name}.sql").write_text(textwrap.dedent(sql))
    return root


GOOD = """
columns:
  - name: order_id
    description: The order's key
    data_tests: [not_null, unique]
  - name: status
    data_tests:
      - accepted_values:
          values: ['placed', 'shipped']
          config: {severity: warn}
  - name: customer_id
    data_tests:
      - relationships: {to: "ref('customers')", field: customer_id}
data_tests:
  - dbt_utils.expression_is_true: {expression: "amount >= 0", config: {where: "status = 'placed'"}}
  - unique_combination_of_columns:
      arguments: {combination_of_columns: [order_id, status]}
      severity: warn
expectations:
  positive: amount > 0
  has_key: {expect: order_id IS NOT NULL, on_violation: fail}
  small: {expect: amount < 1000, on_violation: drop}
"""


def test_dbt_syntax_is_parsed_checked_and_compiled(tmp_path):
    root = _project(tmp_path, GOOD, tests={"no_big_orders": "SELECT * FROM {{ ref('orders') }} WHERE amount > 100\n"})
    checked = api.check(root)
    table = checked.project.tables["orders"]
    assert "columns" not in table.config          # the entries only annotate: no renaming
    assert [n.name for n in table.config["column_notes"]] == ["order_id", "status", "customer_id"]
    checks = checked.data_tests["orders"]
    assert [t.name for t in checks.tests] == [
        "not_null_orders_order_id", "unique_orders_order_id", "accepted_values_orders_status__placed__shipped",
        "relationships_orders_customer_id__customer_id__customers",
        "dbt_utils_expression_is_true_orders__amount_0", "unique_combination_of_columns_orders__order_id__status"]
    assert [t.name for t in checks.singular] == ["no_big_orders"]
    spec = compile_checks(checked.project, "orders", checks, columns=["order_id", "customer_id", "status", "amount"])
    by_name = {c.name: c for c in spec.checks}
    assert by_name["not_null_orders_order_id"].violation == "`order_id` IS NULL"
    assert (by_name["accepted_values_orders_status__placed__shipped"].violation,
            by_name["accepted_values_orders_status__placed__shipped"].action) == \
        ("`status` NOT IN ('placed', 'shipped')", RECORD)
    assert by_name["unique_orders_order_id"].shape == KEY and by_name["unique_orders_order_id"].columns == ["order_id"]
    assert by_name["unique_orders_order_id"].where == "`order_id` IS NOT NULL"
    assert by_name["relationships_orders_customer_id__customer_id__customers"].shape == LINK
    expression = by_name["dbt_utils_expression_is_true_orders__amount_0"]
    assert (expression.violation, expression.where, expression.action) == ("NOT (amount >= 0)", "status = 'placed'", STOP)
    assert [(c.name, c.action) for c in spec.checks if c.kind == "expectation"] == \
        [("positive", RECORD), ("has_key", STOP), ("small", KEEP_OUT)]
    singular = by_name["no_big_orders"]
    assert singular.shape == QUERY and singular.reads == {"orders": ""} and "`orders`" in singular.sql
    assert all(c.unique_id.startswith(("test.proj.", "expectation.proj.")) for c in spec.checks)


def test_tests_and_notes_change_no_definition_but_a_drop_expectation_does(tmp_path):
    root = _project(tmp_path, "")
    plain = definition_hash(api.load(root).tables["orders"])
    (root / "tables" / "orders.yml").write_text("columns: [{name: order_id, data_tests: [unique]}]\n"
                                                "expectations: {positive: amount > 0}\n")
    assert definition_hash(api.load(root).tables["orders"]) == plain
    (root / "tables" / "orders.yml").write_text("expectations: {positive: {expect: amount > 0, on_violation: drop}}\n")
    assert definition_hash(api.load(root).tables["orders"]) != plain


def test_a_renaming_columns_list_keeps_its_meaning_and_carries_tests(tmp_path):
    root = _project(tmp_path, "columns:\n  - {name: id, type: bigint, data_tests: [not_null]}\n  - cust\n"
                              "  - {name: state, description: renamed}\n  - amt\n")
    checked = api.check(root)
    table = checked.project.tables["orders"]
    assert [c["name"] for c in table.config["columns"]] == ["id", "cust", "state", "amt"]
    assert [c.name for c in checked.schemas["orders"]] == ["id", "cust", "state", "amt"]
    assert [t.name for t in checked.data_tests["orders"].tests] == ["not_null_orders_id"]


def test_unique_on_the_group_keys_is_proven_by_the_query(tmp_path):
    root = _project(tmp_path, "columns: [{name: customer_id, data_tests: [unique]}, {name: n, data_tests: [unique]}]\n",
                    tables={"orders": "SELECT customer_id, COUNT(*) AS n FROM raw_orders GROUP BY customer_id",
                            "customers": "SELECT customer_id FROM raw_customers"})
    checked = api.check(root)
    spec = compile_checks(checked.project, "orders", checked.data_tests["orders"], columns=["customer_id", "n"],
                          query=checked.qualified["orders"])
    assert [bool(c.proven) for c in spec.checks] == [True, False]


def test_sources_and_seeds_carry_tests(tmp_path):
    root = _project(tmp_path)
    (root / "dt_project.yml").write_text((root / "dt_project.yml").read_text().replace(
        "raw_customers: {path: data/raw_customers}",
        "raw_customers:\n    path: data/raw_customers\n    columns:\n      - {name: customer_id, data_tests: [unique]}\n"
        "    data_tests: [{unique_combination_of_columns: {combination_of_columns: [customer_id, name]}}]"))
    (root / "seeds").mkdir()
    (root / "seeds" / "regions.csv").write_text("id,name\n1,north\n")
    (root / "seeds" / "regions.yml").write_text("columns:\n  - {name: id, type: bigint, data_tests: [not_null]}\n")
    project = api.load(root)
    assert [t.name for t in project.sources["raw_customers"].data_tests] == [
        "unique_combination_of_columns_raw_customers__customer_id__name", "unique_raw_customers_customer_id"]
    assert [t.name for t in project.sources["regions"].data_tests] == ["not_null_regions_id"]
    assert [t.file for t in project.sources["regions"].data_tests] == ["seeds/regions.yml"]


def _rejected(root, file: str, line: int | None, *needles):
    before = tree_state(root)
    result = dt("validate", "-p", str(root))
    assert result.code == 2, (result.out, result.err)
    message = result.err.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in message, message
    assert f"{file}:{line}:" in message if line else f"{file}:" in message, message
    for needle in needles:
        assert needle in message, message
    assert tree_state(root) == before


@pytest.mark.parametrize("yml, line, needles", [
    ("columns:\n  - name: order_id\n    data_tests: [not_nul]\n", 3, ["unknown data test 'not_nul'", "did you mean not_null?"]),
    ("columns:\n  - name: order_idd\n    data_tests: [not_null]\n", 2,
     ["'order_idd' is not an output column of orders", "did you mean order_id?"]),
    ("columns:\n  - name: order_idd\n    description: x\n", 2,
     ["'order_idd' is not an output column of orders", "did you mean order_id?"]),
    ("columns:\n  - name: customer_id\n    data_tests:\n      - relationships: {to: ref('customer'), field: customer_id}\n",
     4, ["relationships to 'customer'", "did you mean customers?"]),
    ("columns:\n  - name: customer_id\n    data_tests:\n      - relationships: {to: customers, field: id}\n",
     4, ["column 'id' is not a column of customers"]),
    ("columns:\n  - name: status\n    data_tests:\n      - accepted_values: {value: [a]}\n", 4,
     ["unknown argument 'value'", "did you mean values?"]),
    ("columns:\n  - name: status\n    data_tests:\n      - accepted_values: {}\n", 4, ["accepted_values needs values"]),
    ("columns:\n  - name: status\n    data_tests:\n      - unique: {config: {severity: fatal}}\n", 4,
     ["severity 'fatal' is not error or warn"]),
    ("data_tests:\n  - not_null\n", 2, ["not_null tests one column"]),
    ("data_tests:\n  - expression_is_true: {expression: 'amont > 0'}\n", 2,
     ["column amont is not a column of orders", "did you mean amount?"]),
    ("data_tests:\n  - expression_is_true: {expression: 'amount > (SELECT 1)'}\n", 2, ["a subquery is not allowed"]),
    ("expectations:\n  ok: {expect: amount >, on_violation: fail}\n", 2, ["is not one SQL expression"]),
    ("expectations:\n  ok: {expect: amount > 0, on_violation: explode}\n", 2,
     ["on_violation 'explode' is not one of warn, drop, fail"]),
    ("data_tests:\n  - unique_combination_of_columns: {combination_of_columns: [order_id, stat]}\n", 2,
     ["column 'stat' is not a column of orders", "did you mean status?"]),
])
def test_bad_test_config_is_exit_2_with_file_line_and_fix(tmp_path, yml, line, needles):
    _rejected(_project(tmp_path, yml), "tables/orders.yml", line, *needles)


def test_a_singular_test_that_does_not_parse_or_names_no_table_is_exit_2(tmp_path):
    root = _project(tmp_path, tests={"broken": "SELECT *\nFROM {{ ref('orders') }}\nWHERE amount >\n"})
    _rejected(root, "tests/broken.sql", None, "SQL syntax error")
    root = _project(tmp_path / "b", tests={"unknown": "SELECT *\nFROM order_lines WHERE amount > 0\n"})
    _rejected(root, "tests/unknown.sql", 2, "unknown table 'order_lines'")


def test_validate_needs_no_jvm(tmp_path):
    from tests.helpers import dt_process

    root = _project(tmp_path, GOOD)
    done = dt_process("validate", "-p", str(root), env=no_java_env())
    assert done.returncode == 0, done.stdout + done.stderr


def test_dt_test_plans_one_step_per_tested_table_without_expectations(tmp_path):
    from dtcli.model.refresh_terms import TEST
    from dtcli.planning.test_plan import build_test_plan

    root = _project(tmp_path, GOOD, tests={"no_big": "SELECT * FROM {{ ref('orders') }} WHERE amount > 100\n",
                                           "src_keys": "SELECT * FROM raw_customers WHERE customer_id IS NULL\n"})
    (root / "dt_project.yml").write_text((root / "dt_project.yml").read_text().replace(
        "raw_customers: {path: data/raw_customers}",
        "raw_customers:\n    path: data/raw_customers\n    columns: [{name: customer_id, data_tests: [unique]}]"))
    checked = api.check(root)
    planned = build_test_plan(checked)
    assert [s.name for s in planned.plan.steps] == ["raw_customers"]
    assert planned.not_created == ["orders"]        # no DT created yet: nothing to test
    assert [(s.name, s.action, [c.name for c in s.options.audit.checks]) for s in
            build_test_plan(checked, ["raw_customers"]).plan.steps] == \
        [("raw_customers", TEST, ["unique_raw_customers_customer_id", "src_keys"])]
    assert build_test_plan(checked, ["customers"]).plan.steps == []      # a DT without tests


def test_explain_lists_the_checks_with_what_a_failure_does_and_what_a_refresh_reads(tmp_path):
    root = _project(tmp_path, GOOD)
    found = {c["name"]: c for c in to_json(api.explain(api.check(root), "orders"))["data_tests"]}
    assert (found["not_null_orders_order_id"]["on_failure"], found["not_null_orders_order_id"]["reads"]) == \
        ("fails the refresh", "the rows each refresh writes")
    assert found["unique_orders_order_id"]["reads"].startswith("the keys each refresh writes")
    assert found["relationships_orders_customer_id__customer_id__customers"]["reads"] == \
        "the values each refresh writes, against customers"
    assert (found["small"]["kind"], found["small"]["on_failure"]) == ("expectation", "rows kept out")
    assert to_json(api.explain(api.check(root), "customers"))["data_tests"] == []
    shown = dt("explain", "orders", "-p", str(root))
    assert shown.code == 0 and "checked before each commit" in shown.out and "rows kept out" in shown.out, shown.err
