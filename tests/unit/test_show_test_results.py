"""`dt show test-results`: the last result of each data test and expectation per table, from the
refresh history (audits) and `_dt/test_results` (`dt test`, `dt build`), whichever is newer; no JVM."""

from __future__ import annotations

import textwrap

import pyarrow as pa
from deltalake import write_deltalake

from dtcli import api
from dtcli.engine.launch.contract import LaunchResult
from dtcli.model import FAILED, INCREMENTAL, SUCCEEDED, RefreshRecord
from dtcli.state import ledger, test_results
from tests.helpers import dt, dt_process, no_java_env, write_project

YML = """
columns:
  - name: order_id
    data_tests: [not_null, unique]
  - name: status
    data_tests: [{accepted_values: {values: [placed, shipped], config: {severity: warn}}}]
expectations:
  positive: amount > 0
"""
SOURCES = ("sources:\n  raw_orders:\n    path: data/raw_orders\n"
           "    columns: [{name: customer_id, data_tests: [not_null]}]\n")


def _project(tmp_path):
    root = write_project(tmp_path / "p", {"orders": "SELECT order_id, customer_id, status, amount FROM raw_orders"},
                         config=SOURCES, table_yml={"orders": textwrap.dedent(YML)})
    write_deltalake(str(root / "data" / "raw_orders"), pa.table({
        "order_id": pa.array([1], pa.int64()), "customer_id": pa.array([7], pa.int64()),
        "status": ["placed"], "amount": pa.array([5], pa.int64())}), configuration={"delta.enableChangeDataFeed": "true"})
    (root / "tests").mkdir()
    (root / "tests" / "big_amounts.sql").write_text("SELECT * FROM raw_orders WHERE amount > 1000\n")
    return root


def _ids(checked) -> dict[str, str]:
    from dtcli.planning.test_plan import tests_by_table

    checks = tests_by_table(checked)
    out = {t.name: t.unique_id(checked.project.name) for c in checks.values() for t in [*c.tests, *c.singular]}
    out.update({e.name: e.unique_id(checked.project.name, "orders") for e in checks["orders"].expectations})
    return out


def _result(ids, name, status, failures=0, table="orders"):
    return {"name": name, "unique_id": ids.get(name, f"test.proj.{name}.old"), "kind": "test", "test": "t",
            "table": table, "status": status, "failures": failures, "action": "fail",
            "samples": [{"order_id": None}] if failures else []}


def _record(name, state, end, tests, action=INCREMENTAL):
    return RefreshRecord(name=name, state=state, refresh_action=action, refresh_trigger="SCHEDULED",
                         data_timestamp=None, refresh_start_time=end, refresh_end_time=end, run_id=f"r{end[11:13]}",
                         data_tests=tests)


def test_the_newest_result_of_each_check_from_refreshes_and_dt_test(tmp_path):
    root = _project(tmp_path)
    checked = api.check(root, check_sources=True)
    ids = _ids(checked)
    nn, uq, av = "not_null_orders_order_id", "unique_orders_order_id", "accepted_values_orders_status__placed__shipped"
    warehouse = checked.project.warehouse
    ledger.append(warehouse, [
        _record("orders", SUCCEEDED, "2026-11-26T08:00:00+00:00",
                [_result(ids, uq, "fail", 2), _result(ids, "positive", "pass")]),
        _record("orders", FAILED, "2026-11-26T09:00:00+00:00",      # the audit that stopped a refresh
                [_result(ids, nn, "fail", 1), _result(ids, uq, "pass"), _result(ids, av, "warn", 2),
                 _result(ids, "positive", "warn", 1), _result(ids, "an_old_definition", "fail", 9)]),
        _record("orders", SUCCEEDED, "2026-11-26T09:30:00+00:00", None),     # NO_DATA: no audit
        _record("orders", SUCCEEDED, "2026-11-26T09:40:00+00:00",            # not evaluated: the older stands
                [{**_result(ids, av, "skipped"), "message": "not checked"}]),
    ])
    # `dt test` later: over the whole table
    test_results.append(warehouse, test_results.rows_of(
        [_record("orders", SUCCEEDED, "2026-11-26T10:00:00+00:00", [_result(ids, nn, "pass")])], "test"))

    # the wiring: `dt test` records what its application found, the sources' tests included
    def launcher(project, plan, on_event, lock=None):
        records = [_record(s.name, FAILED, "2026-11-26T10:05:00+00:00",
                           [_result(ids, c.name, "fail" if c.name == "big_amounts" else "pass", 3 if
                                    c.name == "big_amounts" else 0, table=s.name) for c in s.options.audit.checks])
                   for s in plan.steps]
        return LaunchResult(returncode=0, records=records, done=True, started=True)

    from dtcli.api.testing import test

    assert [r.name for r in test(checked, ["raw_orders"], launcher=launcher).records] == ["raw_orders"]

    out = dt("show", "test-results", "-p", str(root), "--format", "json")
    assert out.code == 0, out.err
    rows = {(r["table"], r["name"]): r for r in out.json()}
    assert list(rows) == [("raw_orders", "not_null_raw_orders_customer_id"), ("raw_orders", "big_amounts"),
                          ("orders", nn), ("orders", uq), ("orders", av), ("orders", "positive")]
    assert {k[1]: (r["status"], r["failures"], r["by"]) for k, r in rows.items()} == {
        "not_null_raw_orders_customer_id": ("pass", 0, "dt test"),
        "big_amounts": ("fail", 3, "dt test"),
        nn: ("pass", 0, "dt test"),                       # dt test is newer than the failed audit
        uq: ("pass", 0, "refresh INCREMENTAL"),           # the newest audit, not the older failure
        av: ("warn", 2, "refresh INCREMENTAL"),           # a skipped check does not hide its last result
        "positive": ("warn", 1, "refresh INCREMENTAL")}
    assert rows[("orders", "positive")]["kind"] == "expectation" and rows[("orders", av)]["action"] == "warn"
    assert rows[("raw_orders", "big_amounts")]["samples"] == [{"order_id": None}]
    assert rows[("orders", uq)]["at"] == "2026-11-26T09:00:00+00:00"

    text = dt("show", "test-results", "orders", "-p", str(root))
    assert text.code == 0, text.err
    assert "big_amounts" not in text.out and "PASS" in text.out and "WARN" in text.out
    missing = dt("show", "test-results", "order", "-p", str(root))
    assert missing.code == 2 and "orders" in missing.err, missing.err


def test_a_check_that_never_ran_is_listed_without_a_status_and_no_jvm_is_needed(tmp_path):
    root = _project(tmp_path)
    proc = dt_process("show", "test-results", "-p", str(root), "--format", "json", env=no_java_env())
    assert proc.returncode == 0, proc.stderr
    import json

    rows = json.loads(proc.stdout)
    assert len(rows) == 6 and {r["status"] for r in rows} == {None}
    assert {r["message"] for r in rows} == {"not run yet"}
    assert not (root / "warehouse" / "_dt" / "test_results").exists()
