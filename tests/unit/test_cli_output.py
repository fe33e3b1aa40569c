"""JSON output carries DESIGN.md section 7's fields; every command's --help has an example."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from dtcli.model import RefreshRecord
from dtcli.state import ledger
from tests.helpers import dt, write_project

SHOW_FIELDS = {"name", "target_lag", "refresh_mode", "refresh_mode_reason", "scheduling_state",
               "data_timestamp", "immutable_where", "rows", "bytes", "text", "created_on",
               "last_refresh_action", "last_refresh_state"}
HISTORY_FIELDS = {"name", "state", "state_message", "refresh_action", "refresh_trigger", "data_timestamp",
                  "refresh_start_time", "refresh_end_time", "statistics", "inputs_with_changed_data",
                  "reinit_reason", "source_versions"}
EXPLAIN_FIELDS = {"name", "refresh_mode", "refresh_mode_reason", "operators", "inputs", "target_lag",
                  "effective_lag", "period_seconds", "frozen_where", "warnings"}


@pytest.fixture()
def project(tmp_path):
    root = write_project(tmp_path / "p", {
        "big_orders": "{{ config(target_lag='10 minutes') }}\nSELECT order_id, amount FROM orders WHERE amount > 5",
        # a LIMIT inside a subquery refreshes FULL (an outermost one is an incremental top-N)
        "top_orders": "SELECT order_id FROM (SELECT order_id, amount FROM {{ ref('big_orders') }} "
                      "ORDER BY amount DESC LIMIT 3) AS t",
    }, config="sources:\n  orders: {path: data/orders}\n  plain: {path: data/plain}\n")
    table = pa.table({"order_id": pa.array([1, 2], pa.int64()), "amount": pa.array([5, 7], pa.int64())})
    write_deltalake(str(root / "data" / "orders"), table, configuration={"delta.enableChangeDataFeed": "true"})
    write_deltalake(str(root / "data" / "plain"), table)
    return root


def test_show_dynamic_tables_json_fields(project):
    result = dt("show", "dynamic", "tables", "-p", str(project), "--format", "json")
    assert result.code == 0, result.err
    rows = result.json()
    assert [r["name"] for r in rows] == ["big_orders", "top_orders"]
    for row in rows:
        assert set(row) >= SHOW_FIELDS
    assert rows[0]["target_lag"] == "10 minutes" and rows[0]["refresh_mode"] == "ADAPTIVE"
    assert rows[1]["refresh_mode"] == "FULL" and "LIMIT" in rows[1]["refresh_mode_reason"]


def test_show_like_filters_with_sql_patterns(project):
    result = dt("show", "dynamic", "tables", "-p", str(project), "--like", "top%", "--format", "json")
    assert [r["name"] for r in result.json()] == ["top_orders"]


def test_show_refresh_history_json_fields(project):
    warehouse = str(project / "warehouse")
    ledger.append(warehouse, [RefreshRecord(
        name="big_orders", state="SUCCEEDED", refresh_action="FULL", refresh_trigger="CREATION",
        data_timestamp="2026-11-01T00:00:00+00:00", refresh_start_time="2026-11-01T00:00:01+00:00",
        refresh_end_time="2026-11-01T00:00:02+00:00", run_id="r1", num_inserted_rows=1,
        inputs_with_changed_data=["orders"], source_versions={"orders": 0})])
    result = dt("show", "refresh-history", "-p", str(project), "--format", "json")
    assert result.code == 0, result.err
    (row,) = result.json()
    assert set(row) >= HISTORY_FIELDS
    assert row["statistics"] == {"num_inserted_rows": 1, "num_deleted_rows": 0, "num_copied_rows": 0}
    assert row["source_versions"] == {"orders": 0} and row["inputs_with_changed_data"] == ["orders"]


def test_explain_json_fields_and_reasons(project):
    result = dt("explain", "top_orders", "-p", str(project), "--format", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert set(data) >= EXPLAIN_FIELDS
    assert data["refresh_mode"] == "FULL" and "LIMIT at line 1" in data["refresh_mode_reason"]
    assert {"operator", "strategy", "considerations"} <= set(data["operators"][0])
    assert data["inputs"] == [{"name": "big_orders", "kind": "dynamic_table", "path": str(project / "warehouse" / "big_orders"),
                               "change_data_feed": True, "version": None,
                               "columns": [{"name": "order_id", "type": "BIGINT"}, {"name": "amount", "type": "BIGINT"}]}]
    big = dt("explain", "big_orders", "-p", str(project), "--format", "json").json()
    assert big["refresh_mode"] == "ADAPTIVE" and big["period_seconds"] == 384
    assert big["inputs"][0] == {"name": "orders", "kind": "source", "path": str(project / "data" / "orders"),
                                "change_data_feed": True, "version": 0,
                                "columns": [{"name": "order_id", "type": "BIGINT"}, {"name": "amount", "type": "BIGINT"}]}
    assert big["columns"] == [{"name": "order_id", "type": "BIGINT"}, {"name": "amount", "type": "BIGINT"}]


def test_explain_says_how_to_enable_the_change_data_feed(project):
    (project / "tables" / "from_plain.sql").write_text("SELECT * FROM plain\n")
    data = dt("explain", "from_plain", "-p", str(project), "--format", "json").json()
    assert data["refresh_mode"] == "FULL"
    assert "delta.enableChangeDataFeed = true" in data["refresh_mode_reason"]
    assert any("ALTER TABLE" in w for w in data["warnings"])


def test_explain_table_format_prints_the_operator_table(project):
    result = dt("explain", "big_orders", "-p", str(project))
    assert result.code == 0 and "operators" in result.out and "WHERE" in result.out


def test_show_graph_formats(project):
    assert "orders --> big_orders" in dt("show", "graph", "-p", str(project), "--format", "mermaid").out
    assert '"big_orders" -> "top_orders"' in dt("show", "graph", "-p", str(project), "--format", "dot").out
    tree = dt("show", "graph", "-p", str(project)).out
    assert "orders (source)" in tree and "└── top_orders" in tree


COMMANDS = [[], ["init"], ["seed"], ["validate"], ["run"], ["refresh"], ["explain"], ["show"],
            ["show", "dynamic"], ["show", "refresh-history"], ["show", "graph"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "dt")
def test_help_describes_the_command_with_an_example(command):
    result = dt(*command, "--help")
    assert result.code == 0
    assert re.search(r"Example: dt ", result.out), result.out


def test_snowflake_dialect_explain_names_lines_of_the_users_file(project):
    (project / "dt_project.yml").write_text((project / "dt_project.yml").read_text() + "dialect: snowflake\n")
    (project / "tables" / "top_orders.sql").unlink()
    (project / "tables" / "picked.sql").write_text(
        "SELECT order_id, IFF(amount > 6, 'big', 'small') AS size\nFROM orders\n"
        "WHERE order_id IN (SELECT order_id FROM orders)\n"
        "  AND amount > (SELECT MAX(o.amount) FROM orders AS o WHERE o.order_id < orders.order_id)\n")
    data = dt("explain", "picked", "-p", str(project), "--format", "json").json()
    # the IN subquery becomes a semi join (its row at its line); a scalar subquery correlated by
    # a non-equality stays as written
    assert data["refresh_mode_reason"] == "scalar subquery at line 4 cannot be refreshed incrementally"
    lines = {op["operator"].split(" → ")[0]: op["line"] for op in data["operators"]}
    assert lines["IN subquery"] == 3 and lines["scalar subquery"] == 4
    assert data["columns"] == [{"name": "order_id", "type": "BIGINT"}, {"name": "size", "type": "STRING"}]
