"""Audit before publish, on real Delta tables (one project, three runs, in the shared session).

A refresh whose rows break an error-severity test or a `fail` expectation commits nothing: the
DT's Delta version does not move, readers (Spark, DuckDB) keep the last good rows, downstream DTs are
UPSTREAM_FAILED, the record names the test, the count and sample rows; the next run after the
source is fixed succeeds INCREMENTAL. Warn tests and expectations commit and count; drop
expectations keep exactly the violating rows out; custom tables (INSERT INTO SELF, MERGE INTO
SELF) are audited the same way, on what their statement is about to write, and so is a creation
from a backfill copy (a failing one creates nothing). The failing `dt run`,
`dt test`, `dt build` and `dt test --unit` go through the CLI in this process (exit codes, what
they print), their Spark work in the shared session."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from dtcli import api
from dtcli.data_tests import TEST_FAILED
from dtcli.model import FAILED, FULL, INCREMENTAL, NO_DATA, REINITIALIZE, SUCCEEDED, UPSTREAM_FAILED
from dtcli.state import history, ledger
from dtcli.state.delta_log import table_version
from tests.helpers import assert_matches_recompute, dt, write_project
from tests.sched_helpers import in_process

pytestmark = pytest.mark.spark

SOURCES = "sources:\n  orders_src: {path: data/orders}\n  customers_src: {path: data/customers}\n"
ORDERS = "SELECT order_id, customer_id, status, amount FROM orders_src"
# o_checked carries one check of each kind (each breaks on one row of BAD); all are evaluated and
# reported before the refresh fails
CHECKED = {
    "not_null_o_checked_order_id": 1,
    "unique_o_checked_order_id": 1,
    "accepted_values_o_checked_status__placed__shipped": 1,
    "relationships_o_checked_customer_id__customer_id__customers": 1,
    "dbt_utils_expression_is_true_o_checked__amount_0": 1,
    "no_negative_amounts": 1,
    "has_key": 1,
}
# refresh_mode incremental where the test asserts an INCREMENTAL refresh: ADAPTIVE picks by measured times
YML = {
    "o_checked": "refresh_mode: incremental\ncolumns:\n"
                 "  - name: order_id\n    data_tests: [not_null, unique]\n"
                 "  - name: status\n    data_tests:\n      - accepted_values: {values: [placed, shipped]}\n"
                 "  - name: customer_id\n    data_tests:\n"
                 "      - relationships: {to: ref('customers'), field: customer_id}\n"
                 "data_tests:\n  - dbt_utils.expression_is_true: {expression: 'amount >= 0'}\n"
                 "expectations:\n  has_key: {expect: order_id IS NOT NULL, on_violation: fail}\n",
    "o_full": "refresh_mode: full\ncolumns:\n  - name: order_id\n    data_tests: [unique]\n",
    "o_kept": "refresh_mode: incremental\ncolumns:\n  - name: order_id\n    data_tests: [{not_null: {config: {severity: warn}}}]\n"
              "expectations:\n  non_negative: amount >= 0\n  small: {expect: amount < 1000, on_violation: drop}\n",
    "c_insert": "columns: [{name: order_id, type: bigint}, {name: amount, type: bigint, data_tests: [not_null]}]\n"
                "expectations:\n  small: {expect: amount < 1000, on_violation: drop}\n",
    "c_merge": "columns:\n  - {name: order_id, type: bigint}\n  - {name: amount, type: bigint, data_tests: [unique]}\n",
    "per_status": "refresh_mode: incremental\n",
}
TABLES = {
    **{name: ORDERS for name in ["o_checked", "o_full", "o_kept"]},
    "customers": "SELECT customer_id, name FROM customers_src",
    "per_status": "SELECT status, COUNT(*) AS n, SUM(amount) AS total FROM {{ ref('o_checked') }} GROUP BY status",
    "c_insert": "INSERT INTO SELF SELECT o.order_id, o.amount FROM orders_src CHANGES(INFORMATION => APPEND_ONLY) AS o",
    "c_merge": "MERGE INTO SELF AS t USING (SELECT order_id, amount FROM orders_src CHANGES(INFORMATION => DEFAULT) "
               "WHERE METADATA$ACTION = 'INSERT' AND order_id IS NOT NULL) AS s ON t.order_id = s.order_id "
               "WHEN MATCHED THEN UPDATE SET amount = s.amount "
               "WHEN NOT MATCHED THEN INSERT (order_id, amount) VALUES (s.order_id, s.amount)",
}
CDF = {"delta.enableChangeDataFeed": "true"}
GOOD = [(1, 7, "placed", 10), (2, 8, "shipped", 20), (3, 7, "placed", 30)]
BAD = [(None, 7, "placed", 5),          # not_null, has_key; a warning in o_kept
       (2, 8, "placed", 6),             # a second order 2: unique (o_checked, o_full)
       (4, 7, "lost", 7),               # not an accepted status
       (5, 99, "placed", 8),            # no such customer
       (6, 7, "placed", -5),            # negative: expression_is_true, the singular test; a warning in o_kept
       (7, 8, "shipped", 5000),         # kept out of o_kept and c_insert
       (8, 8, "shipped", 30)]           # c_merge: a second row of amount 30


def _orders(rows):
    order_id, customer_id, status, amount = zip(*rows)
    return pa.table({"order_id": pa.array(order_id, pa.int64()), "customer_id": pa.array(customer_id, pa.int64()),
                     "status": pa.array(status, pa.string()), "amount": pa.array(amount, pa.int64())})


def _run(spark, root):
    result = api.run(api.check(root, with_stats=True), all_tables=True, launcher=in_process(spark))
    return {r.name: r for r in result.records}


def _failed_four_times_before(project, name):
    """Four failed scheduled refreshes of `name` after its creation, as earlier runs would have
    recorded them (the fifth, a real failed audit, then suspends it)."""
    from dataclasses import replace
    from datetime import datetime, timedelta

    created = history.read(project.warehouse, name)[0]
    end = datetime.fromisoformat(created.refresh_end_time)
    ledger.append(project.warehouse, [
        replace(created, state=FAILED, state_code=TEST_FAILED, refresh_trigger="SCHEDULED",
                refresh_action=INCREMENTAL, state_message=f"earlier failed audit {k}", run_id=f"earlier{k}",
                table_version=None, data_tests=None, refresh_start_time=(end + timedelta(milliseconds=k)).isoformat(),
                refresh_end_time=(end + timedelta(milliseconds=k)).isoformat()) for k in range(1, 5)])


def _rows(spark, path):
    return sorted((tuple(r) for r in spark.read.format("delta").load(path).collect()), key=repr)


def _duckdb_rows(path):
    """The DT's rows as a DuckDB query reads them: over the table's current snapshot as the Delta
    log gives it (resolved by deltalake's kernel scan, deletion vectors applied). DuckDB's own
    `delta` extension would be downloaded on first use, which the test machine cannot do."""
    import duckdb

    with duckdb.connect() as con:
        con.register("snapshot", DeltaTable(path).scan())
        return sorted(con.sql("SELECT * FROM snapshot").fetchall(), key=repr)


@pytest.fixture
def spark_in_cli(spark, monkeypatch):
    """`dt run`, `dt test`, `dt build` in this process run their plan in the shared session
    instead of a spark-submit application of their own."""
    import dtcli.engine.launch.launcher as launcher

    monkeypatch.setattr(launcher, "launch", in_process(spark))


def _cli_records(root):
    """The refreshes of the last command, as target/run_results.json holds them."""
    import json
    from types import SimpleNamespace

    doc = json.loads((root / "target" / "run_results.json").read_text())
    return doc, {r["name"]: SimpleNamespace(**r) for r in doc["results"]}


def test_a_refresh_whose_rows_break_a_check_commits_nothing(spark, tmp_path, spark_in_cli):
    root = write_project(tmp_path / "p", TABLES, config=SOURCES, table_yml=YML)
    (root / "tests").mkdir()
    (root / "tests" / "no_negative_amounts.sql").write_text("SELECT order_id, amount\nFROM {{ ref('o_checked') }}\n"
                                                            "WHERE amount < 0\n")
    source = str(root / "data" / "orders")
    write_deltalake(source, _orders(GOOD), configuration=CDF)
    write_deltalake(str(root / "data" / "customers"),
                    pa.table({"customer_id": pa.array([7, 8], pa.int64()), "name": ["ann", "bob"]}), configuration=CDF)
    project = api.load(root)

    first = _run(spark, root)           # creation: every check passes
    assert {n: r.state for n, r in first.items() if r.state != SUCCEEDED} == {}, \
        {n: r.state_message for n, r in first.items()}
    assert {t["name"]: t["status"] for t in first["o_checked"].data_tests} == {name: "pass" for name in CHECKED}
    versions = {n: table_version(project.table_path(n)) for n in TABLES}
    before = {n: _rows(spark, project.table_path(n)) for n in ("o_checked", "o_full")}
    _failed_four_times_before(project, "o_checked")
    # a DT new in the next run, created as a backfill copy of the source, which will hold the NULL:
    # its creation fails the audit and creates nothing
    (root / "tables" / "o_backfill.sql").write_text(ORDERS + "\n")
    (root / "tables" / "o_backfill.yml").write_text("backfill: {from: orders_src}\n"
                                                    "columns:\n  - name: order_id\n    data_tests: [not_null]\n")

    write_deltalake(source, _orders(BAD), mode="append", configuration=CDF)
    ran = dt("run", "--all", "-p", str(root))      # as a user runs it: exit 1, each failing check named
    assert ran.code == 1, (ran.out, ran.err)
    doc, records = _cli_records(root)
    printed = " ".join((ran.out + ran.err).split())
    assert "not_null_o_checked_order_id failed: 1 row" in printed and "e.g. {" in printed, printed
    checked = records["o_checked"]
    assert (checked.state, checked.state_code) == (FAILED, TEST_FAILED), checked.state_message
    assert checked.refresh_action == INCREMENTAL
    found = {t["name"]: t for t in checked.data_tests}
    for test, count in CHECKED.items():
        assert f"{test} failed: {count} row" in checked.state_message, checked.state_message
        assert (found[test]["status"], found[test]["failures"]) == ("fail", count) and found[test]["samples"], test
    assert "e.g. {" in checked.state_message and "nothing was committed" in checked.state_message
    full = records["o_full"]            # a FULL refresh checks every row
    assert (full.state, full.state_code, full.refresh_action) == (FAILED, TEST_FAILED, FULL), full.state_message
    assert "unique_o_full_order_id failed: 1 row" in full.state_message and '"rows":2' in full.state_message
    for name in ("o_checked", "o_full"):
        assert table_version(project.table_path(name)) == versions[name], name     # nothing committed
        assert _rows(spark, project.table_path(name)) == before[name], name         # the last good rows
        assert _duckdb_rows(project.table_path(name)) == before[name], name         # in DuckDB too
    assert records["per_status"].state == UPSTREAM_FAILED
    assert records["customers"].refresh_action == NO_DATA
    backfilled = records["o_backfill"]
    assert (backfilled.state, backfilled.state_code, backfilled.refresh_trigger) == (FAILED, TEST_FAILED, "CREATION")
    assert "not_null_o_backfill_order_id failed: 1 row" in backfilled.state_message, backfilled.state_message
    assert table_version(project.table_path("o_backfill")) is None           # not created

    kept = records["o_kept"]            # warn: committed and counted; drop: kept out and counted
    assert kept.state == SUCCEEDED, kept.state_message
    assert {t["name"]: (t["status"], t["failures"]) for t in kept.data_tests} == \
        {"not_null_o_kept_order_id": ("warn", 1), "non_negative": ("warn", 1), "small": ("warn", 1)}
    assert [t["samples"] for t in kept.data_tests if t["name"] == "small"] == \
        [[{"order_id": 7, "customer_id": 8, "status": "shipped", "amount": 5000}]]
    assert _rows(spark, project.table_path("o_kept")) == sorted(GOOD + BAD[:5] + BAD[6:], key=repr)
    inserted = records["c_insert"]
    assert inserted.state == SUCCEEDED and [t["failures"] for t in inserted.data_tests if t["name"] == "small"] == [1]
    assert sorted(r[1] for r in _rows(spark, project.table_path("c_insert"))) == [-5, 5, 6, 7, 8, 10, 20, 30, 30]
    merged = records["c_merge"]
    assert (merged.state, merged.state_code) == (FAILED, TEST_FAILED), merged.state_message
    assert "unique_c_merge_amount failed: 1 row" in merged.state_message and '"rows":2' in merged.state_message
    assert table_version(project.table_path("c_merge")) == versions["c_merge"]
    assert history.read(project.warehouse, "o_checked")[0].state_code == TEST_FAILED
    # a failed audit is a failed scheduled refresh: the fifth in a row suspends the DT (and holds
    # back the one downstream), and `dt resume` clears it as usual
    assert [(s["name"], s["downstream"]) for s in doc["suspended"]] == [("o_checked", ["per_status"])]
    assert "suspended o_checked" in printed
    shown = {r["name"]: r for r in api.show_tables(api.check(root))}
    assert shown["o_checked"]["scheduling_state"] == "SUSPENDED"
    assert "5 consecutive failed scheduled refreshes; last error: data test" in \
        shown["o_checked"]["scheduling_state_reason"]
    api.resume(api.check(root), "o_checked")
    assert {r["name"]: r["scheduling_state"] for r in api.show_tables(api.check(root))}["per_status"] == "ACTIVE"

    DeltaTable(source).delete("order_id IS NULL OR order_id > 3 OR (order_id = 2 AND status = 'placed')")
    write_deltalake(source, _orders([(9, 8, "shipped", 40)]), mode="append", configuration=CDF)
    # c_insert gains a column whose test its new rows break: the column is not added either
    (root / "tables" / "c_insert.sql").write_text(TABLES["c_insert"].replace("o.amount", "o.amount, o.status"))
    (root / "tables" / "c_insert.yml").write_text(
        YML["c_insert"].replace("}]\n", "}, {name: status, type: string, data_tests: [{accepted_values: "
                                "{values: [placed]}}]}]\n", 1))
    inserted = table_version(project.table_path("c_insert"))
    fixed = _run(spark, root)
    assert (fixed["c_insert"].state_code, fixed["c_insert"].refresh_action) == (TEST_FAILED, INCREMENTAL), \
        fixed["c_insert"].state_message
    assert table_version(project.table_path("c_insert")) == inserted
    assert spark.read.format("delta").load(project.table_path("c_insert")).columns == ["order_id", "amount"]
    for name in ["o_checked", "o_kept", "per_status"]:
        assert fixed[name].state == SUCCEEDED, (name, fixed[name].state_message)
        assert fixed[name].refresh_action == INCREMENTAL, (name, fixed[name].refresh_action_reason)
    assert fixed["o_full"].state == SUCCEEDED, fixed["o_full"].state_message
    for name in ["o_checked", "per_status"]:
        assert_matches_recompute(spark, api.load(root), name)
    checked_path = project.table_path("o_checked")       # DuckDB reads the fixed refresh's rows
    assert _duckdb_rows(checked_path) == _rows(spark, checked_path) != before["o_checked"]
    assert _rows(spark, project.table_path("o_kept")) == sorted(GOOD + [(9, 8, "shipped", 40)], key=repr)
    assert (fixed["o_backfill"].state, fixed["o_backfill"].refresh_trigger) == (SUCCEEDED, "CREATION"), \
        fixed["o_backfill"].state_message                                     # the fixed source's copy
    assert _rows(spark, project.table_path("o_backfill")) == sorted(GOOD + [(9, 8, "shipped", 40)], key=repr)
    # the failed refresh did not move c_merge's frontier: its statement reads the same inserts again
    # (without a RELY key its CHANGES are the commits as Delta recorded them) and still writes a
    # second amount 30
    assert fixed["c_merge"].state_code == TEST_FAILED
    assert table_version(project.table_path("c_merge")) == versions["c_merge"]


def test_keys_of_a_slice_replacement_are_checked_on_the_slice_and_the_rest_against_the_table(spark, tmp_path):
    """An update written as a slice replacement (the rows of the changed `k` values rewritten):
    a combination holding `k` is counted on the slice's new rows alone, a unique column without
    it against the rows that stay; both find the duplicate one update makes, and nothing is
    committed; an update breaking neither passes."""
    from tests.spark.harness import Env

    env = Env(spark, tmp_path)
    env.create_source("e", "k INT, line INT, v INT", [(1, 1, 10), (1, 2, 11), (2, 1, 20), (3, 1, 30)])
    yml = {"lines": ("columns:\n  - name: v\n    data_tests: [unique]\n"
                     "data_tests:\n  - dbt_utils.unique_combination_of_columns: {combination_of_columns: [k, line]}\n")}
    env.write({"lines": "SELECT k, line, v FROM e"}, table_yml=yml)
    assert env.refresh()["lines"].state == SUCCEEDED
    env.sql("UPDATE {e} SET v = 12 WHERE k = 1 AND line = 2")
    passed = env.refresh()["lines"]
    assert (passed.state, passed.refresh_action, passed.refresh_strategy) == (SUCCEEDED, INCREMENTAL, "slice_replaced"), \
        passed.state_message
    assert {t["status"] for t in passed.data_tests} == {"pass"}, passed.data_tests
    env.check("lines")
    version = env.version("lines")
    env.sql("UPDATE {e} SET k = 1, v = 30 WHERE k = 2")      # a second (1, 1), a second v = 30
    failed = env.refresh()["lines"]
    assert (failed.state, failed.state_code) == (FAILED, TEST_FAILED), failed.state_message
    assert {t["name"]: (t["status"], t["failures"]) for t in failed.data_tests} == {
        "dbt_utils_unique_combination_of_columns_lines__k__line": ("fail", 1), "unique_lines_v": ("fail", 1)}
    assert env.version("lines") == version
    # a changed query reinitializes the DT: its recompute is audited too, and commits nothing
    env.write({"lines": "SELECT k, line, v FROM e WHERE v IS NOT NULL"}, table_yml=yml)
    reinit = env.refresh()["lines"]
    assert (reinit.refresh_action, reinit.state, reinit.state_code) == (REINITIALIZE, FAILED, TEST_FAILED), \
        reinit.state_message
    assert env.version("lines") == version


BUILD_SOURCES = ("sources:\n  orders_src:\n    path: data/orders\n    columns:\n"
                 "      - name: status\n        data_tests: [{accepted_values: {values: [placed, shipped]}}]\n"
                 "  customers_src:\n    path: data/customers\n"
                 "    columns: [{name: customer_id, data_tests: [{not_null: {config: {severity: warn}}}]}]\n")
BUILD_TABLES = {"orders": ORDERS, "customers": TABLES["customers"],
                "per_status": "SELECT status, COUNT(*) AS n FROM {{ ref('orders') }} GROUP BY status"}
BUILD_YML = {"orders": "columns:\n  - name: order_id\n    data_tests: [not_null, unique]\n",
             "per_status": "columns:\n  - name: status\n    data_tests: [unique]\n"}


def test_dt_test_runs_every_test_over_whole_tables_and_dt_build_holds_back_what_a_failed_source_test_feeds(
        spark, tmp_path, spark_in_cli):
    import json

    from dtcli.api.testing import build

    root = write_project(tmp_path / "b", BUILD_TABLES, config=BUILD_SOURCES, table_yml=BUILD_YML)
    (root / "tests").mkdir()
    (root / "tests" / "no_negative.sql").write_text("SELECT * FROM {{ ref('orders') }} WHERE amount < 0\n")
    (root / "tests" / "big_source_amounts.sql").write_text("SELECT * FROM orders_src WHERE amount > 1000\n")
    source = str(root / "data" / "orders")
    write_deltalake(source, _orders(GOOD), configuration=CDF)
    write_deltalake(str(root / "data" / "customers"),
                    pa.table({"customer_id": pa.array([7, None], pa.int64()), "name": ["ann", "bob"]}),
                    configuration=CDF)
    launcher = in_process(spark)

    built = build(api.check(root, with_stats=True), launcher=launcher)    # creates the DTs, then tests them
    assert not built.failed and not built.held
    assert {r.name: r.state for r in built.run.records} == dict.fromkeys(BUILD_TABLES, SUCCEEDED)
    assert {t["name"]: (t["status"], t["failures"]) for t in built.sources.results} == {
        "accepted_values_orders_src_status__placed__shipped": ("pass", 0),
        "big_source_amounts": ("pass", 0), "not_null_customers_src_customer_id": ("warn", 1)}
    assert {t["name"]: t["status"] for t in built.tables.results} == {
        "not_null_orders_order_id": "pass", "unique_orders_order_id": "pass", "no_negative": "pass",
        "unique_per_status_status": "pass"}
    assert [t["message"] for t in built.tables.results if t["name"] == "unique_per_status_status"] == \
        ["proven by the query: the query groups by status: one row per key"]
    orders = api.load(root).table_path("orders")
    version = table_version(orders)

    write_deltalake(source, _orders([(4, 7, "lost", 7), (5, 8, "placed", -1)]), mode="append", configuration=CDF)
    # the CLI as a user runs it: --select limits the tests (the failing source test is not run)
    selected = dt("test", "--select", "per_status", "-p", str(root), "--format", "json")
    assert selected.code == 0, (selected.out, selected.err)
    assert [r["name"] for r in json.loads(selected.out)["results"]] == ["unique_per_status_status"]
    tested = dt("test", "-p", str(root), "--format", "json")       # the tables as they are: exit 1
    assert tested.code == 1, (tested.out, tested.err)
    doc = json.loads(tested.out)
    found = {t["name"]: (t["status"], t["failures"]) for t in doc["results"]}
    assert found["accepted_values_orders_src_status__placed__shipped"] == ("fail", 1)
    assert found["no_negative"] == ("pass", 0)          # orders was not refreshed: it holds no negative amount
    assert not doc["success"] and doc["summary"]["data_tests"] == {"fail": 1, "pass": 5, "warn": 1}
    assert {r["unique_id"].split(".")[2] for r in doc["results"]} >= {"no_negative", "unique_orders_order_id"}
    assert "accepted_values_orders_src_status__placed__shipped" in tested.err and "FAIL" in tested.err

    built = dt("build", "-p", str(root), "--format", "json")
    assert built.code == 1, (built.out, built.err)
    doc = json.loads(built.out)
    states = {r["name"]: r["state"] for r in doc["results"]}       # customers: refreshed if due (lag)
    assert {n: states[n] for n in ("orders", "per_status")} == dict.fromkeys(("orders", "per_status"), UPSTREAM_FAILED)
    assert states.get("customers", SUCCEEDED) == SUCCEEDED
    assert "accepted_values_orders_src_status__placed__shipped failed: 1 row" in \
        next(r["state_message"] for r in doc["results"] if r["name"] == "orders")
    assert not doc["success"] and ("accepted_values_orders_src_status__placed__shipped", "fail") in \
        {(t["name"], t["status"]) for t in doc["data_tests"]}
    assert table_version(orders) == version
    from dtcli.api.test_results import show_test_results  # kept after run_results.json is replaced

    last = {r["name"]: (r["status"], r["by"]) for r in show_test_results(api.check(root))}
    assert last["accepted_values_orders_src_status__placed__shipped"] == ("fail", "dt build")
    assert last["unique_orders_order_id"] == ("pass", "dt test")     # build held orders back: dt test's stands


UNIT_YML = """
unit_tests:
  - name: plain_pass
    given:
      - input: ref('orders')
        rows: [{order_id: 1, status: placed, amount: 10}, {order_id: 2, status: placed, amount: 5}]
    expect:
      fixture: placed_two                    # tests/fixtures/placed_two.csv
  - name: plain_fail
    given:
      - input: ref('orders')
        format: csv
        rows: |
          order_id,status,amount
          1,placed,10
    expect:
      rows: [{status: placed, total: 11}]
  - name: after_pass
    given:
      - input: ref('orders')
        rows: [{order_id: 1, status: placed, amount: 10}, {order_id: 2, status: placed, amount: 5}]
    given_after:
      - input: ref('orders')
        rows: [{order_id: 1, status: placed, amount: 10}, {order_id: 2, status: shipped, amount: 5},
               {order_id: 3, status: shipped, amount: 1}]
    expect:
      rows: [{status: placed, n: 1, total: 10}, {status: shipped, n: 2, total: 6}]
  - name: after_fail
    given:
      - input: ref('orders')
        rows: [{order_id: 1, status: placed, amount: 10}, {order_id: 2, status: placed, amount: 5}]
    given_after:
      - input: ref('orders')
        rows: [{order_id: 1, status: placed, amount: 10}, {order_id: 2, status: shipped, amount: 5}]
    expect:                                  # the given rows' answer: wrong after the change
      rows: [{status: placed, n: 2, total: 15}]
"""


def test_unit_tests_run_on_given_rows_and_through_the_incremental_refresh_touching_no_warehouse(
        spark, tmp_path, monkeypatch):
    import json
    import re
    import tempfile
    from pathlib import Path

    from dtcli.api import unit_tests
    from tests.helpers import dt

    tables = {"orders": ORDERS,
              "per_status": "SELECT status, COUNT(*) AS n, SUM(amount) AS total FROM {{ ref('orders') }} GROUP BY status"}
    root = write_project(tmp_path / "u", tables, config="sources:\n  orders_src: {path: data/orders}\n",
                         table_yml={"per_status": "refresh_mode: incremental\n" + UNIT_YML})
    write_deltalake(str(root / "data" / "orders"), _orders(GOOD), configuration=CDF)    # its types only
    (root / "tests" / "fixtures").mkdir(parents=True)
    (root / "tests" / "fixtures" / "placed_two.csv").write_text("status,n,total\nplaced,2,15\n")
    scratch_before = set(Path(tempfile.gettempdir()).glob("dt-unit-*"))

    # `dt test --unit` as a user runs it, in this process: its local session is the shared one
    monkeypatch.setattr(unit_tests, "_session", lambda project, scratch, session: spark)
    out = dt("test", "--unit", "-p", str(root), "--format", "json")
    assert out.code == 1, (out.out, out.err)        # a case failed
    doc = json.loads(out.out)
    results = {r["name"]: r for r in doc["results"]}
    # after_pass passes only if expect is compared after the INCREMENTAL refresh to the next rows
    # (an order changes status, one is added): its given rows alone make {placed, 2, 15}
    assert {n: r["status"] for n, r in results.items()} == {
        "plain_pass": "pass", "plain_fail": "fail", "after_pass": "pass", "after_fail": "fail"}, \
        {n: r["message"] for n, r in results.items()}
    assert {n: r["refresh_action"] for n, r in results.items()} == {
        "plain_pass": FULL, "plain_fail": FULL, "after_pass": INCREMENTAL, "after_fail": INCREMENTAL}
    failed = results["plain_fail"]          # compared on the columns expect names
    assert (failed["columns"], failed["missing"], failed["unexpected"]) == (
        ["status", "total"], [{"status": "placed", "total": 11}], [{"status": "placed", "total": 10}])
    after = results["after_fail"]           # the wrong expectation, against what the INCREMENTAL refresh left
    assert (after["missing"], sorted(after["unexpected"], key=repr)) == (
        [{"status": "placed", "n": 2, "total": 15}],
        [{"status": "placed", "n": 1, "total": 10}, {"status": "shipped", "n": 1, "total": 5}])
    text = out.err                          # what the user reads: expected against actual rows
    assert "FAIL  plain_fail (per_status)" in text and "plain_fail: expected (-) against actual (+)" in text
    assert re.search(r"-\s*│\s*placed\s*│\s*11\b", text) and re.search(r"\+\s*│\s*placed\s*│\s*10\b", text), text
    assert "FAIL  after_fail (per_status) (given_after: incremental)" in text
    assert "after_fail: expected (-) against actual (+)" in text
    assert re.search(r"-\s*│\s*placed\s*│\s*2\s*│\s*15\b", text), text
    assert re.search(r"\+\s*│\s*shipped\s*│\s*1\s*│\s*5\b", text), text
    assert "unit tests: 2 passed, 2 failed" in text
    assert not (root / "warehouse").exists()           # no warehouse written, no scratch folder left
    assert set(Path(tempfile.gettempdir()).glob("dt-unit-*")) == scratch_before
