"""What a refresh's data tests found, where users look: run_results.json and the run's lines."""

from __future__ import annotations

from dtcli.api import run_results
from dtcli.artifacts.typed_json import to_json
from dtcli.model import FAILED, INCREMENTAL, SUCCEEDED, RefreshRecord
from dtcli.ui.progress import _summary


def _record(state, tests, message=None):
    return RefreshRecord(name="orders", state=state, refresh_action=INCREMENTAL, refresh_trigger="MANUAL",
                         data_timestamp=None, refresh_start_time="2026-11-26T10:00:00+00:00",
                         refresh_end_time="2026-11-26T10:00:01+00:00", run_id="r1", state_message=message,
                         data_tests=tests)


WARNED = {"name": "not_null_orders_id", "unique_id": "test.p.not_null_orders_id.ab12", "status": "warn",
          "failures": 2, "message": "data test not_null_orders_id failed: 2 rows", "kind": "test",
          "test": "not_null", "table": "orders", "column": "id", "action": "warn", "samples": [{"id": None}]}
DROPPED = {"name": "small", "unique_id": "expectation.p.orders.small", "status": "warn", "failures": 1,
           "kind": "expectation", "test": "expectation", "table": "orders", "action": "drop", "samples": []}
PASSED = {"name": "unique_orders_id", "unique_id": "test.p.unique_orders_id.cd34", "status": "pass", "failures": 0,
          "kind": "test", "test": "unique", "table": "orders", "action": "fail"}


def test_run_results_carry_each_check_in_dbt_terms():
    entry = to_json(run_results.result_entry(_record(SUCCEEDED, [WARNED, PASSED])))
    assert [(t["unique_id"], t["status"], t["failures"]) for t in entry["data_tests"]] == \
        [("test.p.not_null_orders_id.ab12", "warn", 2), ("test.p.unique_orders_id.cd34", "pass", 0)]
    assert entry["data_tests"][0]["message"] and entry["data_tests"][1]["message"] is None
    assert to_json(run_results.result_entry(_record(SUCCEEDED, None)))["data_tests"] == []
    assert run_results.test_summary([_record(SUCCEEDED, [WARNED, PASSED]), _record(SUCCEEDED, [PASSED])]) == \
        {"pass": 2, "warn": 1}


def test_the_run_line_counts_warnings_and_rows_kept_out():
    line = _summary(_record(SUCCEEDED, [WARNED, DROPPED, PASSED]))
    assert line.endswith("warn: not_null_orders_id 2 rows, small 1 row kept out"), line
    assert "warn:" not in _summary(_record(SUCCEEDED, [PASSED]))
    failed = _summary(_record(FAILED, [{**WARNED, "status": "fail"}], message="data test x failed: 2 rows"))
    assert failed.endswith("data test x failed: 2 rows"), failed
    assert failed.startswith("orders: FAILED INCREMENTAL  data test") and "+0 -0" not in failed, failed


def test_a_refresh_line_in_a_pipe_is_one_line_however_long():
    """CI logs are read line by line: a failed audit's long message is not wrapped at 80 columns."""
    from io import StringIO

    from rich.console import Console

    from dtcli.events import RefreshFinished
    from dtcli.ui.progress import RunProgress

    out = StringIO()
    progress = RunProgress(1, console=Console(file=out, width=80))
    message = "data test not_null_orders_id failed: 2 rows, e.g. {" + ", ".join(f'"c{k}":{k}' for k in range(30)) + "}"
    progress(RefreshFinished(record=_record(FAILED, [], message=message)))
    assert out.getvalue().count("\n") == 1 and message in out.getvalue(), out.getvalue()


def test_a_slice_replacement_names_the_columns_its_predicate_reads():
    # `unique` on keys holding them all needs no old row: a kept row with a written key would
    # have matched the predicate and been replaced (engine/runtime/auditor.py, Auditor._keys)
    from dtcli.engine.runtime.audit import _columns_of

    assert _columns_of("`l_orderkey` IN (1, 2) OR (`L_OrderKey` >= 7 AND l_orderkey < 9)") == {"l_orderkey"}
    assert _columns_of("d >= DATE'2026-01-01' AND coalesce(k, 0) = 1") == {"d", "k"}
    assert _columns_of("k IN (SELECT k FROM t)") is None and _columns_of(None) is None


def test_written_keys_on_the_driver_are_counted_there_as_spark_would():
    """A slice's new rows collected on the driver: its duplicates counted without a Spark job,
    keys matched whatever their case in the YAML, NULL keys grouped as Spark's GROUP BY does;
    a NaN in a key leaves the count to Spark."""
    from types import SimpleNamespace

    from dtcli.engine.runtime.auditor import Pending, _local_duplicates
    from dtcli.engine.runtime.changes import WEIGHT

    written = SimpleNamespace(columns=["l_orderkey", "l_linenumber", "v", WEIGHT])
    rows = [{"l_orderkey": 1, "l_linenumber": 1, "v": "a", WEIGHT: 1},
            {"l_orderkey": 1, "l_linenumber": 1, "v": "b", WEIGHT: 1},
            {"l_orderkey": 1, "l_linenumber": 2, "v": "c", WEIGHT: 1},
            {"l_orderkey": None, "l_linenumber": 3, "v": "d", WEIGHT: 2},
            {"l_orderkey": 2, "l_linenumber": 1, "v": "e", WEIGHT: 1},
            {"l_orderkey": 2, "l_linenumber": 1, "v": "f", WEIGHT: -1}]
    found = _local_duplicates(["L_OrderKey", "l_linenumber"], Pending(written, None, rows))
    assert found == (2, [{"L_OrderKey": 1, "l_linenumber": 1, "rows": 2},
                         {"L_OrderKey": None, "l_linenumber": 3, "rows": 2}])
    nan = [{"l_orderkey": float("nan"), "l_linenumber": 1, "v": "x", WEIGHT: 1}]
    assert _local_duplicates(["l_orderkey"], Pending(written, None, nan)) is None
