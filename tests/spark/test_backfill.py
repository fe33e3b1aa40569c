"""The seed's dt_orders examples as dt projects: a frozen region on order_date, and backfill from a
snapshot table (as it is, at a moment, before a version), in the spark and snowflake dialects and
as the seed's own CREATE DYNAMIC TABLE statements pasted into table files; and a DT that outlives
its vacuumed, deleted backfill source."""

from __future__ import annotations

import shutil
import time
from datetime import date, datetime, timezone
from decimal import Decimal

import pytest

from dtcli import api
from dtcli.artifacts.typed_json import to_json
from dtcli.model import CREATION, INCREMENTAL, SUCCEEDED
from tests.helpers import multiset, recompute, write_project
from tests.sched_helpers import in_process

pytestmark = pytest.mark.spark

ORDERS = "order_id INT, customer_id INT, order_date TIMESTAMP, order_status STRING, line_total DECIMAL(10,2)"
SNAPSHOT = "order_id INT, customer_id INT, order_date TIMESTAMP, line_total DECIMAL(10,2)"   # dt_orders' columns
QUERY = ("SELECT order_id, customer_id, order_date, line_total FROM raw_orders "
         "WHERE order_status != 'returned'")
ROWS = [(1001, 7, "2024-12-15 08:30:00", "shipped", "89.97"), (1002, 7, "2024-12-20 09:45:00", "shipped", "49.99"),
        (1003, 8, "2024-12-28 14:20:00", "returned", "59.98"), (1004, 9, "2025-01-16 10:00:00", "open", "62.50"),
        (1005, 9, "2025-01-16 11:30:00", "open", "49.99")]


def _ddl(*properties: str) -> str:
    """The seed's statement for dt_orders, with its properties and the query's real columns."""
    return ("CREATE OR REPLACE DYNAMIC TABLE dt_orders\n  TARGET_LAG = '10 minutes'\n  WAREHOUSE = transform_wh\n"
            + "".join(f"  {p}\n" for p in properties)
            + "AS\n  SELECT\n    order_id, customer_id, order_date, line_total\n  FROM raw_orders\n"
              "  WHERE order_status != 'returned';\n")


def _sql(spark, statement):
    spark.sql(statement)


def _values(rows):
    return ", ".join(f"({a}, {b}, TIMESTAMP'{c}', '{d}', {e})" for a, b, c, d, e in rows)


def _snapshot_values(rows):
    return ", ".join(f"({a}, {b}, TIMESTAMP'{c}', {e})" for a, b, c, _, e in rows)


def _setup(spark, tmp_path, yml: str | None, dialect: str = "spark", query: str = QUERY):
    """`yml` None: the table file is a CREATE DYNAMIC TABLE statement (`query`) and has no YAML."""
    root = write_project(tmp_path / "shop", {"dt_orders": query},
                         config=f"dialect: {dialect}\ndefaults: {{refresh_mode: incremental}}\n"
                                "sources:\n  raw_orders: {path: data/raw_orders}\n"
                                "  dt_orders_snapshot: {path: data/snapshot}\n",
                         table_yml={"dt_orders": yml} if yml is not None else None)
    for name, columns in (("raw_orders", ORDERS), ("snapshot", SNAPSHOT)):
        path = root / "data" / name
        _sql(spark, f"CREATE TABLE delta.`{path}` ({columns}) USING delta "
                    "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    _sql(spark, f"INSERT INTO delta.`{root}/data/raw_orders` VALUES {_values(ROWS)}")
    return root


def _run(spark, root, now=None):
    result = api.run(api.check(root, with_stats=True, now=now), all_tables=True, launcher=in_process(spark))
    records = {r.name: r for r in result.records}
    assert all(r.state == SUCCEEDED for r in records.values()), records
    return records


def _table(spark, root, name="dt_orders"):
    return {r.order_id: r for r in spark.read.format("delta").load(str(root / "warehouse" / name)).collect()}


@pytest.mark.parametrize("dialect, predicate", [
    ("spark", "order_date < '2025-01-01'"),
    ("snowflake", "order_date < '2025-01-01'::TIMESTAMP_NTZ"),
    ("snowflake DDL", "order_date < '2025-01-01'::TIMESTAMP_NTZ"),
])
def test_frozen_region_on_order_date(spark, tmp_path, dialect, predicate):
    if dialect == "snowflake DDL":
        root = _setup(spark, tmp_path, None, "snowflake", _ddl(f"FROZEN WHERE ({predicate})"))
    else:
        root = _setup(spark, tmp_path, f'target_lag: 10 minutes\nfrozen_where: "{predicate}"\n', dialect)
    assert _run(spark, root)["dt_orders"].refresh_trigger == CREATION
    assert set(_table(spark, root)) == {1001, 1002, 1004, 1005}       # the initial refresh computes all
    # a late correction to a frozen order, a new order, a deleted frozen one, a changed active one
    raw = f"delta.`{root}/data/raw_orders`"
    _sql(spark, f"UPDATE {raw} SET line_total = 0 WHERE order_id = 1001")
    _sql(spark, f"DELETE FROM {raw} WHERE order_id = 1002")
    _sql(spark, f"UPDATE {raw} SET line_total = 70 WHERE order_id = 1004")
    _sql(spark, f"INSERT INTO {raw} VALUES {_values([(1006, 9, '2025-01-17 09:00:00', 'open', '10.00'), (1000, 9, '2024-11-01 00:00:00', 'open', '1.00')])}")
    record = _run(spark, root)["dt_orders"]
    assert record.refresh_action == INCREMENTAL, record.state_message
    table = _table(spark, root)
    assert table[1001].line_total == Decimal("89.97") and 1002 in table      # frozen rows kept as they were
    assert 1000 not in table                                                 # a new row in the frozen region is not added
    assert table[1004].line_total == Decimal("70.00") and 1006 in table      # the active region follows the query
    rows = api.show_rows(api.check(root), "dt_orders", count=True)
    assert rows == {"frozen_rows": 2, "active_rows": 3}
    flagged = {r["order_id"]: r["is_frozen"] for r in api.show_rows(api.check(root), "dt_orders", limit=50)}
    assert flagged == {1001: True, 1002: True, 1004: False, 1005: False, 1006: False}
    shown = {r["name"]: r for r in api.show_tables(api.check(root, with_stats=True))}["dt_orders"]
    assert shown["immutable_where"] == predicate
    explained = to_json(api.explain(api.check(root), "dt_orders"))["frozen"]
    assert (explained["columns"], explained["frozen_rows"], explained["active_rows"]) == (["order_date"], 2, 3)


@pytest.mark.parametrize("dialect, predicate", [("spark", "order_date < '2025-01-01'"),
                                                ("snowflake", "order_date < '2025-01-01'::TIMESTAMP_NTZ"),
                                                ("snowflake DDL", "order_date < '2025-01-01'::TIMESTAMP_NTZ")])
def test_backfill_from_a_snapshot_fills_the_frozen_region(spark, tmp_path, dialect, predicate):
    if dialect == "snowflake DDL":
        root = _setup(spark, tmp_path, None, "snowflake",
                      _ddl(f"FROZEN WHERE ({predicate})", "BACKFILL FROM dt_orders_snapshot"))
    else:
        root = _setup(spark, tmp_path, f'frozen_where: "{predicate}"\nbackfill: {{from: dt_orders_snapshot}}\n',
                      dialect)
    # history kept elsewhere: the snapshot's old rows differ from what the query would compute
    _sql(spark, f"INSERT INTO delta.`{root}/data/snapshot` VALUES "
                f"{_snapshot_values([(901, 1, '2024-06-01 00:00:00', 'x', '5.00'), (1001, 7, '2024-12-15 08:30:00', 'x', '1.00'), (1004, 9, '2025-01-16 10:00:00', 'x', '999.00')])}")
    record = _run(spark, root)["dt_orders"]
    assert (record.refresh_trigger, record.num_copied_rows) == (CREATION, 2)
    table = _table(spark, root)
    assert table[901].line_total == Decimal("5.00") and table[1001].line_total == Decimal("1.00")   # frozen: copied
    assert table[1004].line_total == Decimal("62.50") and 1005 in table                             # active: computed
    assert 1002 not in table       # before the cut-off and not in the snapshot: the frozen region is the copy


@pytest.mark.parametrize("form", ["yaml", "snowflake DDL"])
def test_backfill_at_a_timestamp_and_before_a_version(spark, tmp_path, form):
    ddl = form == "snowflake DDL"
    root = _setup(spark, tmp_path, "comment: placeholder\n", "snowflake" if ddl else "spark")
    snapshot = f"delta.`{root}/data/snapshot`"
    _sql(spark, f"INSERT INTO {snapshot} VALUES {_snapshot_values([(1, 1, '2024-01-01 00:00:00', 'a', '1.00')])}")   # v1
    time.sleep(1.1)
    moment = datetime.now(timezone.utc)
    time.sleep(1.1)
    _sql(spark, f"INSERT INTO {snapshot} VALUES {_snapshot_values([(2, 1, '2024-01-02 00:00:00', 'a', '2.00')])}")   # v2
    _sql(spark, f"INSERT INTO {snapshot} VALUES {_snapshot_values([(3, 1, '2024-01-03 00:00:00', 'a', '3.00')])}")   # v3
    tables = {"at_moment": QUERY, "before_v3": QUERY}
    yml = {"at_moment": f"backfill: {{from: dt_orders_snapshot, at: {{timestamp: '{moment.isoformat()}'}}}}\n",
           "before_v3": "backfill: {from: {path: data/snapshot}, before: {version: 3}}\n"}
    if ddl:    # BACKFILL FROM ... AT (TIMESTAMP => ...) / BEFORE (STATEMENT => <Delta version>)
        points = {"at_moment": f"AT (TIMESTAMP => '{moment.isoformat()}'::TIMESTAMP_NTZ)",
                  "before_v3": "BEFORE (STATEMENT => '3')"}
        tables = {name: _ddl(f"BACKFILL FROM dt_orders_snapshot {point}").replace("dt_orders\n", f"{name}\n", 1)
                  for name, point in points.items()}
        yml = {}
    for name, sql in tables.items():
        (root / "tables" / f"{name}.sql").write_text(sql + "\n")
        if name in yml:
            (root / "tables" / f"{name}.yml").write_text(yml[name])
    records = _run(spark, root)
    assert set(_table(spark, root, "at_moment")) == {1} and records["at_moment"].num_copied_rows == 1
    assert set(_table(spark, root, "before_v3")) == {1, 2} and records["before_v3"].num_copied_rows == 2


def test_a_backfilled_table_outlives_its_vacuumed_deleted_source(spark, tmp_path):
    root = _setup(spark, tmp_path, "backfill: {from: dt_orders_snapshot}\n")
    snapshot = root / "data" / "snapshot"
    _sql(spark, f"INSERT INTO delta.`{snapshot}` SELECT order_id, customer_id, order_date, line_total "
                f"FROM delta.`{root}/data/raw_orders` WHERE order_status != 'returned'")
    _run(spark, root)
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        _sql(spark, f"DELETE FROM delta.`{snapshot}`")
        _sql(spark, f"VACUUM delta.`{snapshot}` RETAIN 0 HOURS")
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    shutil.rmtree(snapshot)
    (root / "dt_project.yml").write_text((root / "dt_project.yml").read_text().replace(
        "  dt_orders_snapshot: {path: data/snapshot}\n", ""))
    (root / "tables" / "dt_orders.yml").write_text("comment: the backfill source is gone\n")
    assert len(_table(spark, root)) == 4
    _sql(spark, f"INSERT INTO delta.`{root}/data/raw_orders` VALUES {_values([(1007, 1, '2025-02-01 00:00:00', 'open', '3.00')])}")
    record = _run(spark, root)["dt_orders"]
    assert record.refresh_action == INCREMENTAL, record.state_message
    project = api.load(root)
    from dtcli.state.delta_log import table_info

    info = table_info(project.table_path("dt_orders"))
    expected = recompute(spark, project, "dt_orders", info.frontier.source_versions)
    assert multiset(spark.read.format("delta").load(project.table_path("dt_orders"))) == multiset(expected)
    assert date(2025, 2, 1) in {r.order_date.date() for r in expected.collect()}
