"""`unit_tests:` in a table's YAML (dbt 1.8's syntax, plus `given_after`): parsed and checked
against the DT's inputs and columns with the rest of the project — bad config is exit 2 with the
file, the line and the fix, before any JVM."""

from __future__ import annotations

import textwrap

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from dtcli import api
from tests.helpers import dt, dt_process, no_java_env, write_project

SOURCES = "sources:\n  raw_orders: {path: data/raw_orders}\n"
TABLES = {"orders": "SELECT order_id, status, amount FROM raw_orders",
          "per_status": "SELECT status, COUNT(*) AS n, SUM(amount) AS total FROM {{ ref('orders') }} GROUP BY status"}
GOOD = """
unit_tests:
  - name: counts_per_status
    description: one group per status
    given:
      - input: ref('orders')
        rows:
          - {order_id: 1, status: placed, amount: 10}
          - {order_id: 2, status: placed, amount: 5}
    expect:
      rows: [{status: placed, n: 2, total: 15}]
  - name: next_rows
    given:
      - input: orders
        format: csv
        rows: |
          order_id,status,amount
          1,placed,10
    given_after:
      - input: ref('orders')
        fixture: orders_next
    expect:
      format: csv
      fixture: tests/fixtures/expected.csv
  - name: switched_off
    config: {enabled: false}
    given: []
    expect: {rows: []}
"""


def _project(tmp_path, yml: str = GOOD, *, fixtures=None, extra=None):
    root = write_project(tmp_path / "p", TABLES, config=SOURCES,
                         table_yml={"per_status": textwrap.dedent(yml), **(extra or {})})
    write_deltalake(str(root / "data" / "raw_orders"), pa.table({
        "order_id": pa.array([1], pa.int64()), "status": ["placed"], "amount": pa.array([5], pa.int64())}),
        configuration={"delta.enableChangeDataFeed": "true"})
    fixtures = {"orders_next": "order_id,status,amount\n1,placed,10\n2,shipped,\n",
                "expected": "status,n\nplaced,1\nshipped,1\n"} if fixtures is None else fixtures
    (root / "tests" / "fixtures").mkdir(parents=True)
    for name, text in fixtures.items():
        (root / "tests" / "fixtures" / f"{name}.csv").write_text(text)
    return root


def test_dbt_syntax_is_parsed_and_checked(tmp_path):
    root = _project(tmp_path)
    checked = api.check(root)
    cases = checked.unit_tests["per_status"]
    assert [c.name for c in cases] == ["counts_per_status", "next_rows"]        # enabled: false is left out
    first, second = cases
    assert [(g.input, g.rows.rows) for g in first.given] == [
        ("orders", [{"order_id": 1, "status": "placed", "amount": 10}, {"order_id": 2, "status": "placed", "amount": 5}])]
    assert first.given_after is None and first.expect.rows == [{"status": "placed", "n": 2, "total": 15}]
    assert second.given[0].rows.rows == [{"order_id": "1", "status": "placed", "amount": "10"}]
    assert second.given_after[0].rows.read(root) == [{"order_id": "1", "status": "placed", "amount": "10"},
                                                     {"order_id": "2", "status": "shipped", "amount": None}]
    assert second.expect.read(root) == [{"status": "placed", "n": "1"}, {"status": "shipped", "n": "1"}]
    assert first.unique_id("proj") == "unit_test.proj.per_status.counts_per_status"
    assert dt("validate", "-p", str(root)).code == 0
    # unit tests are no part of the definition: adding them reinitializes nothing
    from dtcli.planning.definition import definition_hash

    bare = api.check(_project(tmp_path / "bare", "refresh_mode: auto\n"))
    assert definition_hash(bare.project.tables["per_status"]) == definition_hash(checked.project.tables["per_status"])


BAD = [
    # (YAML, what the message says, the line, what the fix says)
    ("unit_tests:\n  - name: a\n    given:\n      - input: ref('order')\n        rows: []\n    expect: {rows: []}\n",
     "given input 'order' is not read by per_status", 4, "orders"),
    ("unit_tests:\n  - name: a\n    given:\n      - input: orders\n        rows:\n          - {order_id: 1}\n"
     "          - {stat: placed}\n    expect: {rows: []}\n", "row 2 of orders names column 'stat'", 7, "status"),
    ("unit_tests:\n  - name: a\n    given:\n      - input: orders\n        rows: []\n"
     "    expect:\n      rows: [{status: x, count: 1}]\n", "names column 'count'", 7, "n, total"),
    ("unit_tests:\n  - name: a\n    given: []\n    expect: {rows: []}\n", "no rows given for orders", 2, "rows: []"),
    ("unit_tests:\n  - name: a\n    given:\n      - input: orders\n        fixture: nowhere\n    expect: {rows: []}\n",
     "fixture 'nowhere' not found", 5, "tests/fixtures/NAME.csv"),
    ("unit_tests:\n  - name: a\n    given:\n      - input: orders\n        format: sql\n        rows: select 1\n"
     "    expect: {rows: []}\n", "format: sql is not supported", 5, "format: csv"),
    ("unit_tests:\n  - name: a\n    given:\n      - input: orders\n        format: csv\n        rows: |\n"
     "          order_id,status\n          1,placed,10\n    expect: {rows: []}\n", "CSV row 2 has 3 values", 6, None),
    ("unit_tests:\n  - name: a\n    givn: []\n    expect: {rows: []}\n", "unknown key 'givn'", 3, "given"),
    ("refresh_mode: full\nunit_tests:\n  - name: a\n    given:\n      - input: orders\n        rows: []\n"
     "    given_after:\n      - input: orders\n        rows: []\n    expect: {rows: []}\n",
     "given_after needs an incremental refresh", 3, "drop given_after"),
    ("unit_tests:\n  - name: a\n    overrides: {vars: {x: 1}}\n    given: []\n    expect: {rows: []}\n",
     "overrides is not supported", 3, "give the inputs' rows"),
]


@pytest.mark.parametrize("yml,message,line,hint", BAD, ids=[b[1][:30] for b in BAD])
def test_bad_config_is_exit_2_with_file_line_and_fix(tmp_path, yml, message, line, hint):
    root = _project(tmp_path, yml)
    out = dt("validate", "-p", str(root))
    assert out.code == 2, (out.out, out.err)
    assert message in out.err and f"tables/per_status.yml:{line}" in out.err, out.err
    if hint:
        assert hint in out.err, out.err
    assert not (root / "warehouse").exists()


def test_dt_test_unit_stops_at_bad_config_and_needs_no_jvm_for_nothing_to_run(tmp_path):
    root = _project(tmp_path, BAD[0][0])
    proc = dt_process("test", "--unit", "-p", str(root), env=no_java_env())
    assert proc.returncode == 2 and "is not read by per_status" in proc.stderr, proc.stderr
    plain = _project(tmp_path / "plain", "refresh_mode: auto\n")
    proc = dt_process("test", "--unit", "-p", str(plain), env=no_java_env())
    assert proc.returncode == 0 and "no unit tests to run" in proc.stdout, (proc.stdout, proc.stderr)
    assert not (plain / "warehouse").exists()


def test_a_session_that_cannot_start_is_one_error_naming_its_log(tmp_path):
    root = _project(tmp_path)
    proc = dt_process("test", "--unit", "-p", str(root), env=no_java_env())
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "the local Spark session for the unit tests did not start" in proc.stderr, proc.stderr
    assert "target/unit_tests_spark.log" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (root / "warehouse").exists()
