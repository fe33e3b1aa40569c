"""frozen_where, RELY constraints and backfill are checked at `dt validate`: exit 2, the file and
line of the setting, a fix, and nothing written."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from tests.helpers import dt, tree_state, write_project

SOURCES = """
sources:
  raw_orders: {path: data/raw_orders}
  snapshot: {path: data/snapshot}
"""
QUERY = "SELECT order_id, customer_id, order_date, order_status, amount FROM raw_orders"


def _orders(**columns):
    base = {"order_id": pa.array([1, 2], pa.int64()), "customer_id": pa.array([7, 8], pa.int32()),
            "order_date": pa.array([datetime(2024, 12, 1).date(), datetime(2025, 1, 2).date()]),
            "order_status": ["shipped", "returned"], "amount": pa.array([5, 7], pa.int64())}
    base.update(columns)
    return pa.table(base)


def _project(tmp_path, yml: str, *, snapshot=None, query=QUERY, dialect="spark"):
    root = write_project(tmp_path / "p", {"dt_orders": query}, config=f"dialect: {dialect}\n" + SOURCES,
                         table_yml={"dt_orders": yml})
    cdf = {"delta.enableChangeDataFeed": "true"}
    write_deltalake(str(root / "data" / "raw_orders"), _orders(), configuration=cdf)
    write_deltalake(str(root / "data" / "snapshot"), snapshot if snapshot is not None else _orders(), configuration=cdf)
    return root


def _rejected(root, line: int, *needles):
    before = tree_state(root)
    result = dt("validate", "-p", str(root))
    assert result.code == 2, (result.out, result.err)
    message = result.err.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in message, message
    assert f"tables/dt_orders.yml:{line}:" in message, message
    for needle in needles:
        assert needle in message, message
    assert tree_state(root) == before


@pytest.mark.parametrize("predicate, needles", [
    ("order_date < (SELECT max(order_date) FROM raw_orders)", ["a subquery is not allowed"]),
    ("rand() > 0.5", ["rand() is nondeterministic", "only time functions"]),
    ("my_udf(order_date) = 1", ["user-defined function my_udf() is not allowed"]),
    ("region = 'EU'", ["column region is not a column of dt_orders"]),
    ("order_dte < '2025-01-01'", ["column order_dte is not a column of dt_orders", "did you mean order_date?"]),
    ("order_date < '2025-01-01'; DROP TABLE raw_orders", ["not one SQL boolean expression"]),
    ("order_date < '2025-01-01') OR (1 = 1", ["not one SQL boolean expression"]),
    ("_metadata.file_path = 'x'", ["metadata column"]),
    ("count(*) > 1", ["aggregate"]),
])
def test_every_predicate_rule_is_enforced(tmp_path, predicate, needles):
    root = _project(tmp_path, f'comment: orders\nfrozen_where: "{predicate}"\n')
    _rejected(root, 2, *needles)


def test_metadata_columns_are_rejected_in_snowflake_spelling(tmp_path):
    root = _project(tmp_path, "frozen_where: METADATA$ACTION = 'INSERT'\n", dialect="snowflake")
    _rejected(root, 1, "metadata columns are not allowed")


def test_a_predicate_column_outside_a_rely_constraint_is_rejected_in_snowflakes_words(tmp_path):
    yml = ("frozen_where: order_status = 'shipped'\n"
           "constraints:\n  - {primary_key: [order_id, order_date], rely: true}\n")
    _rejected(_project(tmp_path, yml), 1,
              "Immutable where predicate column ORDER_STATUS is not part of any RELY constraint.")


@pytest.mark.parametrize("constraints, ok", [
    ("[{primary_key: [order_id, order_date], rely: true}]", True),
    ("[{primary_key: [order_id, order_date], rely: true}, {unique: [order_date, customer_id], rely: true}]", True),
    ("[{primary_key: [order_id], rely: true}, {unique: [order_id, order_date], rely: true}]", False),
    ("[{primary_key: [order_id], rely: false}]", True),      # only RELY constraints restrict
])
def test_predicate_columns_must_be_in_every_rely_constraint(tmp_path, constraints, ok):
    root = _project(tmp_path, f"frozen_where: order_date < '2025-01-01'\nconstraints: {constraints}\n")
    result = dt("validate", "-p", str(root))
    assert (result.code == 0) == ok, result.err
    if not ok:
        assert "Immutable where predicate column ORDER_DATE is not part of any RELY constraint." in result.err


def test_a_constraint_on_an_unknown_column(tmp_path):
    _rejected(_project(tmp_path, "constraints: [{primary_key: [ordr_id], rely: true}]\n"), 1,
              "constraint primary_key names column ordr_id", "did you mean order_id?")


def test_backfill_with_columns_in_another_order_is_rejected(tmp_path):
    swapped = _orders().select(["customer_id", "order_id", "order_date", "order_status", "amount"])
    _rejected(_project(tmp_path, "backfill: {from: snapshot}\n", snapshot=swapped), 1,
              "backfill source snapshot has columns (customer_id, order_id", "same column names in the same order")


def test_backfill_with_a_type_the_table_cannot_hold_is_rejected(tmp_path):
    wider = _orders(customer_id=pa.array([7, 8], pa.int64()))      # BIGINT into the DT's INT
    _rejected(_project(tmp_path, "backfill: {from: snapshot}\n", snapshot=wider), 1,
              "column customer_id is BIGINT", "dt_orders.customer_id (INT) cannot hold without loss")


def test_backfill_from_an_unknown_table_or_a_missing_version(tmp_path):
    _rejected(_project(tmp_path, "backfill: {from: snapshots}\n"), 1, "no source, seed or dynamic table",
              "did you mean snapshot?")
    _rejected(_project(tmp_path / "v", "backfill: {from: snapshot, at: {version: 9}}\n"), 1,
              "has no version 9")
    _rejected(_project(tmp_path / "t", "backfill: {from: snapshot, before: {timestamp: '2001-01-01 00:00:00'}}\n"),
              1, "has no version before")


def test_backfill_added_to_an_existing_table_says_how_to_recreate_it(tmp_path):
    from dtcli.project import load_project
    from tests.sched_helpers import fake_dt

    root = _project(tmp_path, "comment: orders\n")
    fake_dt(load_project(root), "dt_orders", datetime.now(timezone.utc))
    (root / "tables" / "dt_orders.yml").write_text("comment: orders\nbackfill: {from: snapshot}\n")
    _rejected(root, 2, "backfill is set at creation only", "dt drop dt_orders --yes")
